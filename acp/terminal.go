package acp

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// CreateTerminalRequest is the params of terminal/create.
type CreateTerminalRequest struct {
	SessionID       string        `json:"sessionId"`
	Command         string        `json:"command"`
	Args            []string      `json:"args"`
	Env             []EnvVariable `json:"env,omitempty"`
	Cwd             string        `json:"cwd,omitempty"`
	OutputByteLimit int           `json:"outputByteLimit,omitempty"`
}

// EnvVariable is one environment variable of terminal/create.
type EnvVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TerminalRequest is the params of terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release.
type TerminalRequest struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

// TerminalExitStatus is how a client terminal's command ended.
type TerminalExitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

// TerminalOutputResponse is the result of terminal/output.
type TerminalOutputResponse struct {
	Output     string              `json:"output"`
	Truncated  bool                `json:"truncated"`
	ExitStatus *TerminalExitStatus `json:"exitStatus"`
}

// clientTerminals returns the client's terminals for session id when the
// composition runs commands there (Options.ClientTerminals) and the client
// advertised the terminal capability; else nil, and commands run locally.
func (s *Server) clientTerminals(id string) capabilities.Terminals {
	s.mu.Lock()
	ok := s.opts.ClientTerminals && s.client.Terminal
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return clientTerminals{s: s, session: id}
}

// clientTerminals are one session's terminals in the client (terminal/*).
type clientTerminals struct {
	s       *Server
	session string
}

// Create implements capabilities.Terminals with terminal/create.
func (c clientTerminals) Create(ctx context.Context, cmd capabilities.TerminalCommand) (capabilities.Terminal, error) {
	req := CreateTerminalRequest{SessionID: c.session, Command: cmd.Command, Args: cmd.Args, Cwd: cmd.Cwd, OutputByteLimit: cmd.OutputByteLimit}
	if req.Args == nil {
		req.Args = []string{}
	}
	for _, kv := range cmd.Env {
		if name, value, ok := strings.Cut(kv, "="); ok {
			req.Env = append(req.Env, EnvVariable{name, value})
		}
	}
	wait, err := c.s.send(ctx, MethodTerminalCreate, req)
	if err != nil {
		return nil, err
	}
	// The answer is awaited beyond ctx: a turn cancelled while the client
	// is creating the terminal still learns its id, to free it.
	type created struct {
		id  string
		err error
	}
	answer := make(chan created, 1)
	go func() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createWait)
		defer cancel()
		var res struct {
			TerminalID string `json:"terminalId"`
		}
		err := wait(wctx, &res)
		if err == nil && res.TerminalID == "" {
			err = errors.New("terminal/create: the client answered without a terminalId")
		}
		answer <- created{res.TerminalID, err}
	}()
	select {
	case a := <-answer:
		if a.err != nil {
			return nil, a.err
		}
		return c.terminal(a.id), nil
	case <-ctx.Done():
		go func() {
			if a := <-answer; a.err == nil {
				t := c.terminal(a.id)
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createWait)
				defer cancel()
				_ = t.Kill(fctx)
				_ = t.Release(fctx)
			}
		}()
		return nil, ctx.Err()
	}
}

// createWait bounds the wait for a terminal/create answer (and the
// cleanup of a terminal created for a call given up meanwhile).
const createWait = 30 * time.Second

// terminal is the session's client terminal id.
func (c clientTerminals) terminal(id string) *clientTerminal {
	return &clientTerminal{s: c.s, req: TerminalRequest{SessionID: c.session, TerminalID: id}}
}

// clientTerminal is one terminal in the client.
type clientTerminal struct {
	s   *Server
	req TerminalRequest

	once    sync.Once
	release error
}

// ID implements capabilities.Terminal.
func (t *clientTerminal) ID() string { return t.req.TerminalID }

// Output implements capabilities.Terminal with terminal/output.
func (t *clientTerminal) Output(ctx context.Context) (capabilities.TerminalOutput, error) {
	var res TerminalOutputResponse
	if err := t.s.call(ctx, MethodTerminalOutput, t.req, &res); err != nil {
		return capabilities.TerminalOutput{}, err
	}
	out := capabilities.TerminalOutput{Output: res.Output, Truncated: res.Truncated}
	if res.ExitStatus != nil {
		st := res.ExitStatus.status()
		out.Exit = &st
	}
	return out, nil
}

// WaitForExit implements capabilities.Terminal with terminal/wait_for_exit.
func (t *clientTerminal) WaitForExit(ctx context.Context) (capabilities.ExitStatus, error) {
	var res TerminalExitStatus
	if err := t.s.call(ctx, MethodTerminalWait, t.req, &res); err != nil {
		return capabilities.ExitStatus{}, err
	}
	return res.status(), nil
}

// Kill implements capabilities.Terminal with terminal/kill.
func (t *clientTerminal) Kill(ctx context.Context) error {
	return t.s.call(ctx, MethodTerminalKill, t.req, &struct{}{})
}

// Release implements capabilities.Terminal with terminal/release, sent
// once however often it is called. The request is written before Release
// returns, so its place among the session's frames is fixed by the
// caller; the client's answer is awaited in the background (nothing
// depends on it: the terminal is gone for us either way).
func (t *clientTerminal) Release(ctx context.Context) error {
	t.once.Do(func() {
		wait, err := t.s.send(ctx, MethodTerminalRelease, t.req)
		if err != nil {
			t.release = err
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWait)
			defer cancel()
			if err := wait(ctx, &struct{}{}); err != nil {
				t.s.log.Debug().Err(err).Str("terminal", t.req.TerminalID).Msg("terminal/release")
			}
		}()
	})
	return t.release
}

// releaseWait bounds the background wait for a terminal/release answer.
const releaseWait = 30 * time.Second

func (e TerminalExitStatus) status() capabilities.ExitStatus {
	st := capabilities.ExitStatus{Code: e.ExitCode}
	if e.Signal != nil {
		st.Signal = *e.Signal
	}
	return st
}

// liveFor returns how session id's running calls show what they do in
// their cards (Options.LiveOutput), or nil.
func (s *Server) liveFor(id string) capabilities.Live {
	if !s.opts.LiveOutput {
		return nil
	}
	return liveSink{s: s, session: id}
}

// liveSink sends a session's live card updates: tool_call_update
// in_progress, never logged.
type liveSink struct {
	s       *Server
	session string
}

// Show implements capabilities.Live.
func (l liveSink) Show(callID string, v capabilities.LiveView) {
	l.s.mu.Lock()
	ls := l.s.sessions[l.session]
	l.s.mu.Unlock()
	if ls == nil {
		return
	}
	ls.live.show(callID, v, ls.terminal, func(u any) {
		l.s.notify(MethodSessionUpdate, SessionNotification{SessionID: l.session, Update: u})
	})
}

// liveCards is what one session's running calls showed live, from their
// terminal cards until their results are presented. Its zero value is
// ready.
type liveCards struct {
	mu    sync.Mutex
	calls map[string]*liveCall
}

// liveCall is what one running call showed live.
type liveCall struct {
	// terminalID is the client terminal the card embeds ("" for none).
	terminalID string
	// sent is the output offset shown so far as terminal_output data.
	sent int64
}

// show sends (through send) the card update showing v for callID. It
// sends while holding the lock take needs, so an update is written either
// before the call's result is presented or not at all: a live frame never
// follows the completed card.
func (lc *liveCards) show(callID string, v capabilities.LiveView, rendersTerminal bool, send func(any)) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if u, ok := lc.update(callID, v, rendersTerminal); ok {
		send(u)
	}
}

// update returns the card update showing v for callID: the client
// terminal it runs in, else the output so far, as terminal_output data
// (what was not sent yet) when the client renders terminal output, else
// as the card's text. The caller holds lc.mu.
func (lc *liveCards) update(callID string, v capabilities.LiveView, rendersTerminal bool) (any, bool) {
	c := lc.calls[callID]
	if c == nil {
		return nil, false // not a terminal card this session's client was shown
	}
	var content []ToolCallContent
	if v.Description != "" {
		content = append(content, textItem(v.Description))
	}
	switch {
	case v.TerminalID != "":
		c.terminalID = v.TerminalID
		content = append(content, ToolCallContent{Type: "terminal", TerminalID: v.TerminalID})
		return ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: callID, Status: StatusInProgress, Content: content}, true
	case rendersTerminal:
		data := v.Output
		end := v.Offset + int64(len(v.Output))
		switch {
		case v.Offset > c.sent:
			data = "\r\n[" + strconv.FormatInt(v.Offset-c.sent, 10) + " bytes not shown]\r\n" + data
		case end >= c.sent:
			data = v.Output[c.sent-v.Offset:]
		default:
			data = ""
		}
		if data == "" {
			return nil, false
		}
		c.sent = end
		return TerminalUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: callID, Status: StatusInProgress,
			Meta: terminalOutputMeta{TerminalOutput: terminalOutput{TerminalID: callID, Data: data}}}, true
	}
	content = append(content, textItem(consoleBlock(v.Output)))
	return ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: callID, Status: StatusInProgress, Content: content}, true
}

// open starts following callID, whose terminal card the client was just
// shown: only such a card is updated live (nil-safe).
func (lc *liveCards) open(callID string) {
	if lc == nil {
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.calls == nil {
		lc.calls = map[string]*liveCall{}
	}
	lc.calls[callID] = &liveCall{}
}

// take returns and forgets what callID showed live (nil-safe: a presenter
// without live updates has none).
func (lc *liveCards) take(callID string) (liveCall, bool) {
	if lc == nil {
		return liveCall{}, false
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	c, ok := lc.calls[callID]
	if !ok {
		return liveCall{}, false
	}
	delete(lc.calls, callID)
	return *c, true
}

// consoleBlock fences command output the way terminal results without the
// client's terminal rendering are shown.
func consoleBlock(output string) string {
	return "```console\n" + strings.TrimRight(output, "\n") + "\n```"
}
