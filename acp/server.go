package acp

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Server is one ACP connection's bridge between the client and the Agent.
//
// Inbound messages are handled in the read loop in arrival order, so a
// session/cancel is never handled before the prompt it cancels; nothing in
// that loop waits on the client or the model: turns and session loads run on
// their own goroutines and answer when done.
type Server struct {
	agent Agent
	opts  Options
	log   zerolog.Logger

	stream    *LineStream
	conn      conn
	connReady chan struct{} // closed once conn is set

	mu             sync.Mutex
	closed         bool
	terminalOutput bool
	client         ClientCapabilities // what the client advertised at initialize
	elicitation    bool               // the client advertised elicitation
	authAware      bool               // the client advertised auth capabilities
	clientAuth     clientAuth         // the auth methods the client runs
	compaction     bool               // the client takes compaction_update (and the composition shows editor cards)
	subagents      bool               // the client shows child sessions (subagent_update)
	sessions       map[string]*binding
	loading        map[string]bool
	work           sync.WaitGroup

	methods map[Method]handler // the dispatch table (methods.go), fixed at NewServer
	started sync.Once          // initialized's
}

// binding is the bridge's state for one served conversation on this
// connection: the conversation, its prompt in flight and what the client
// was last told.
type binding struct {
	s        Served
	terminal bool // the client's terminal_output flag, snapshotted
	prompt   *inflight
	unsub    func()
	lastMode string    // the mode the client was last told
	live     liveCards // what running calls show live (terminal.go)
	// shown holds the config option values the client was last told
	// (guarded by Server.mu).
	shown map[string]string
	// cards holds the tool_call card of each running call, for the
	// permission requests it raises (guarded by Server.mu).
	cards map[string]ToolCallCard
	// mcp holds the client's MCP servers until the response naming the
	// session is written (guarded by Server.mu).
	mcp []json.RawMessage
}

// inflight is a session/prompt awaiting its answer.
type inflight struct {
	id        RequestID
	settled   bool
	cancelled bool                    // session/cancel asked for this prompt's end
	cancel    context.CancelCauseFunc // aborts the turn, even before it starts
}

// NewServer returns a bridge for agent.
func NewServer(agent Agent, opts Options, log zerolog.Logger) *Server {
	s := &Server{agent: agent, opts: opts, log: log, sessions: map[string]*binding{}, loading: map[string]bool{}, connReady: make(chan struct{})}
	s.methods = s.methodTable()
	return s
}

// Serve speaks ACP on r/w until r ends, then tears down every session
// (running turns end "disposed", logs are flushed), closes the agent when
// it has a Close method, and returns.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	s.stream = NewLineStream(r, w, nil, s.log)
	s.stream.SetMaxLine(s.opts.MaxLineBytes)
	s.conn = openConn(ctx, s.stream, s, s.log)
	close(s.connReady)
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
		_ = s.conn.Close()
	}
	// Nothing is written after the client's input ends.
	_ = s.stream.Close()
	s.teardown(context.WithoutCancel(ctx))
	return nil
}

// disconnected marks the bridge closed and interrupts every live session's
// turn at once, so a turn cut off by the client's departure ends
// "disposed" even if one of its tools notices first (a pending agent→client
// request fails as soon as the connection closes).
func (s *Server) disconnected() {
	s.mu.Lock()
	s.closed = true
	live := make([]*binding, 0, len(s.sessions))
	for _, ls := range s.sessions {
		live = append(live, ls)
	}
	s.mu.Unlock()
	for _, ls := range live {
		ls.s.Interrupt()
	}
}

// teardown marks the bridge closed, settles pending prompts and disposes
// every live session in parallel.
func (s *Server) teardown(ctx context.Context) {
	s.disconnected()
	s.mu.Lock()
	live := make([]*binding, 0, len(s.sessions))
	for _, ls := range s.sessions {
		if ls.prompt != nil {
			ls.prompt.settled = true
		}
		live = append(live, ls)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ls := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.dispose(ctx, ls.s)
		}()
	}
	wg.Wait()
	s.work.Wait()
	if c, ok := s.agent.(agentCloser); ok {
		c.Close()
	}
}

// created follows the response naming a new session: the session
// connects to the client's MCP servers, advertises its commands, and is
// told the client knows it (so its background work never delays that
// response).
func (s *Server) created(id string) {
	s.connectMCP(id)
	s.advertiseCommands(id)
	if ls := s.live(id); ls != nil {
		ls.s.Ready()
	}
}

// advertiseCommands tells the client a session's slash commands (after the
// response that names the session).
func (s *Server) advertiseCommands(id string) {
	ls := s.live(id)
	if ls == nil {
		return
	}
	var cmds []AvailableCommand
	for _, c := range ls.s.Commands() {
		cmds = append(cmds, AvailableCommand{Name: c.Name, Description: c.Description})
	}
	for _, c := range s.promptCommands(ls) {
		ac := AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &CommandInput{Hint: c.Hint}
		}
		cmds = append(cmds, ac)
	}
	if len(cmds) == 0 {
		return
	}
	s.notify(MethodSessionUpdate, SessionNotification{SessionID: id, Update: AvailableCommandsUpdate{UpdateAvailableCommands, cmds}})
}

// promptCommands lists the session's prompt commands whose names no
// session command takes.
func (s *Server) promptCommands(ls *binding) []PromptCommand {
	if s.opts.PromptCommands == nil {
		return nil
	}
	var out []PromptCommand
	for _, c := range s.opts.PromptCommands(ls.s.Log().Header().Cwd) {
		if !slices.ContainsFunc(ls.s.Commands(), func(sc agent.Command) bool { return sc.Name == c.Name }) {
			out = append(out, c)
		}
	}
	return out
}

// expandCommand replaces a prompt command invocation by its prompt.
func (s *Server) expandCommand(ls *binding, text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") || s.opts.PromptCommands == nil {
		return text
	}
	name, args, _ := strings.Cut(t[1:], " ")
	for _, c := range s.promptCommands(ls) {
		if c.Name == name {
			return c.Expand(strings.TrimSpace(args))
		}
	}
	return text
}

// decode unmarshals params into v, mapping failures to -32602.
func decode(params json.RawMessage, v any) error {
	if err := json.Unmarshal(params, v); err != nil {
		return badParams(err)
	}
	return nil
}

// answer writes the response to request id.
func (s *Server) answer(id RequestID, result any, err error) {
	var frame []byte
	if err != nil {
		frame = errorFrame(id.Raw(), toError(err))
	} else {
		res, merr := jsonx.Marshal(result)
		if merr != nil {
			frame = errorFrame(id.Raw(), toError(merr))
		} else {
			frame = jsonx.MustMarshal(responseFrame{"2.0", id.Raw(), res})
		}
	}
	if werr := s.stream.WriteFrame(frame); werr != nil {
		s.log.Debug().Err(werr).Msg("write response")
	}
}

// notify writes a notification.
func (s *Server) notify(method Method, params any) {
	if n, ok := params.(SessionNotification); ok {
		if c, ok := n.Update.(ContentChunk); ok {
			s.writeFrame(appendChunkUpdate(make([]byte, 0, 128+len(c.Content.Text)), n.SessionID, c))
			return
		}
	}
	frame, err := jsonx.Marshal(notificationFrame{"2.0", method, params})
	if err != nil {
		s.log.Error().Err(err).Str("method", string(method)).Msg("encode notification")
		return
	}
	s.writeFrame(frame)
}

func (s *Server) writeFrame(frame []byte) {
	if werr := s.stream.WriteFrame(frame); werr != nil {
		s.log.Debug().Err(werr).Msg("write notification")
	}
}

// appendChunkUpdate encodes the hottest frame, a streamed text chunk,
// without reflection.
func appendChunkUpdate(b []byte, sessionID string, c ContentChunk) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	b = jsonx.AppendString(b, sessionID)
	b = append(b, `,"update":{"sessionUpdate":`...)
	b = jsonx.AppendString(b, string(c.SessionUpdate))
	b = append(b, `,"content":{"type":`...)
	b = jsonx.AppendString(b, c.Content.Type)
	b = append(b, `,"text":`...)
	b = jsonx.AppendString(b, c.Content.Text)
	return append(b, "}}}}"...)
}
