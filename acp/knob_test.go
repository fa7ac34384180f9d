package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// verbosityKnob is a throwaway knob, defined in this one value and
// nowhere else: adding a knob is registering it (docs/architecture.md).
func verbosityKnob() agent.Knob {
	return agent.Knob{
		ID: "verbosity", Event: "test/verbosity", Field: "level",
		Default: func(agent.Config) (string, bool) { return "terse", true },
		Choices: func(string) []agent.Choice {
			return []agent.Choice{{Value: "terse", Name: "Terse", Description: "Short answers."},
				{Value: "chatty", Name: "Chatty", Description: "Long answers."}}
		},
		Option:  agent.KnobOption{Name: "Verbosity", Description: "How much the agent says.", Category: "_verbosity", Order: 70},
		Durable: true,
		Narration: &agent.KnobNarration{Source: "verbosity", Text: func(told, current string, byUser bool) string {
			return fmt.Sprintf("Verbosity went from %s to %s (by the user: %v).", told, current, byUser)
		}},
	}
}

// requestLog is a model that answers "ok" and keeps every request it got,
// as sent.
type requestLog struct {
	*llmtest.Model

	mu   sync.Mutex
	reqs [][]byte
}

func newRequestLog() *requestLog {
	p := &requestLog{}
	p.Model = llmtest.New(func(_ context.Context, c llmtest.Call) llmtest.Step {
		b, err := json.Marshal(c.Req)
		if err != nil {
			return llmtest.Step{Err: err}
		}
		p.mu.Lock()
		p.reqs = append(p.reqs, b)
		p.mu.Unlock()
		return llmtest.Step{Chunks: []llm.Chunk{llmtest.Text(0, "ok"), llmtest.Finish(llm.FinishStop)}}
	})
	return p
}

func (p *requestLog) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.reqs) == 0 {
		return ""
	}
	return string(p.reqs[len(p.reqs)-1])
}

// knobEditor is one editor connection to a real runtime that registers
// the throwaway knob, over a store under root.
type knobEditor struct {
	t     *testing.T
	srv   *Server
	c     *acpclient.Conn
	store *jsonl.Store
	model *requestLog
}

func openKnobEditor(t *testing.T, root string, ids *atomic.Int64, editorConfig bool, more ...func(*agent.Config)) *knobEditor {
	t.Helper()
	store, err := jsonl.Open(root)
	require.NoError(t, err)
	model := newRequestLog()
	cfg := agent.Config{
		Model: "m", Provider: model, Store: store, Clock: FakeClock(), Log: zerolog.Nop(),
		NewID:        func() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", ids.Add(1)) },
		Knobs:        append(agent.BuiltinKnobs(), verbosityKnob()),
		DurableKnobs: true,
	}
	for _, f := range more {
		f(&cfg)
	}
	srv := NewServer(FromRuntime(agent.NewRuntime(cfg)), Options{AgentName: "dsh-acp", AgentVersion: "test", Features: Features{EditorConfig: editorConfig}}, zerolog.Nop())
	e := &knobEditor{t: t, srv: srv, c: acpclient.Serve(srv.Serve, acpclient.Options{}), store: store, model: model}
	_, err = e.c.Initialize(e.ctx())
	require.NoError(t, err)
	return e
}

func (e *knobEditor) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*WaitFor)
	e.t.Cleanup(cancel)
	return ctx
}

// call sends a request and decodes its result into out.
func (e *knobEditor) call(method string, params, out any) error {
	res, err := e.c.Call(e.ctx(), method, params)
	if err == nil && out != nil {
		require.NoError(e.t, json.Unmarshal(res, out))
	}
	return err
}

// close ends the connection, checks every frame the server wrote and
// releases the store.
func (e *knobEditor) close() {
	require.NoError(e.t, e.c.CloseWrite())
	<-e.c.Stopped()
	for _, err := range e.c.Check() {
		e.t.Error(err)
	}
	require.NoError(e.t, e.store.Close())
}

type optionsResult struct {
	SessionID     string         `json:"sessionId"`
	ConfigOptions []ConfigOption `json:"configOptions"`
}

// option returns the option id of a result.
func (r optionsResult) option(t *testing.T, id string) ConfigOption {
	t.Helper()
	for _, o := range r.ConfigOptions {
		if o.ID == id {
			return o
		}
	}
	t.Fatalf("no %s option in %+v", id, r.ConfigOptions)
	return ConfigOption{}
}

// TestAThrowawayKnobIsOneDefinition registers a knob in one value
// (Config.Knobs) and follows it through the real wire: session/new
// offers it, session/set_config_option switches and validates it, the
// next turn logs it to disk and narrates it to the model, and
// session/load folds it back (an idle switch too, from knob/pending).
func TestAThrowawayKnobIsOneDefinition(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	var ids atomic.Int64
	e := openKnobEditor(t, root, &ids, true)

	var nr optionsResult
	require.NoError(t, e.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &nr))
	o := nr.option(t, "verbosity")
	require.Equal(t, "terse", o.CurrentValue)
	require.Equal(t, "Verbosity", o.Name)
	require.Equal(t, "_verbosity", o.Category)
	require.Equal(t, []SelectOption{{Value: "terse", Name: "Terse", Description: "Short answers."},
		{Value: "chatty", Name: "Chatty", Description: "Long answers."}}, o.Options)
	require.Equal(t, "verbosity", nr.ConfigOptions[len(nr.ConfigOptions)-1].ID, "Option.Order places it")

	prompt := func(text string) {
		t.Helper()
		require.NoError(t, e.call("session/prompt", map[string]any{"sessionId": nr.SessionID,
			"prompt": []any{map[string]string{"type": "text", "text": text}}}, nil))
	}
	set := func(id, value string) (optionsResult, error) {
		var r optionsResult
		err := e.call("session/set_config_option", map[string]any{"sessionId": nr.SessionID, "configId": id, "value": value}, &r)
		return r, err
	}
	wireError := func(err error) *acpclient.Error {
		t.Helper()
		var we *acpclient.Error
		require.True(t, errors.As(err, &we), "want a JSON-RPC error, got %v", err)
		return we
	}

	prompt("first") // the model sees a request with the default
	r, err := set("verbosity", "chatty")
	require.NoError(t, err)
	require.Equal(t, "chatty", r.option(t, "verbosity").CurrentValue)
	_, err = set("verbosity", "loud")
	we := wireError(err)
	require.Equal(t, int64(CodeInvalidParams), int64(we.Code))
	require.Equal(t, `Invalid params: unknown verbosity value "loud"`, we.Message)
	_, err = set("verbositi", "chatty")
	we = wireError(err)
	require.Equal(t, int64(CodeInvalidParams), int64(we.Code))
	require.Equal(t, `Invalid params: unknown config option "verbositi"`, we.Message)

	prompt("second")
	require.Contains(t, e.model.last(), "Verbosity went from terse to chatty (by the user: true).",
		"the switch is narrated to the model before its step")
	sessionID := nr.SessionID
	e.close()

	// On disk: the switch anchored in the second turn, as its event.
	disk, err := jsonl.Open(root)
	require.NoError(t, err)
	_, events, err := disk.Load(context.Background(), sessionID)
	require.NoError(t, err)
	require.NoError(t, disk.Close())
	var logged []string
	for _, ev := range events {
		if ev.Type == "test/verbosity" {
			logged = append(logged, string(ev.Data))
		}
	}
	require.Equal(t, []string{`{"level":"chatty"}`}, logged)

	// A second process folds it back.
	e = openKnobEditor(t, root, &ids, true)
	load := func() optionsResult {
		t.Helper()
		var lr optionsResult
		require.NoError(t, e.call("session/load", map[string]any{"sessionId": sessionID, "cwd": cwd, "mcpServers": []any{}}, &lr))
		return lr
	}
	require.Equal(t, "chatty", load().option(t, "verbosity").CurrentValue)
	nr.SessionID = sessionID
	_, err = set("verbosity", "terse") // idle: held, recorded as knob/pending
	require.NoError(t, err)
	e.close()

	e = openKnobEditor(t, root, &ids, true)
	require.Equal(t, "terse", load().option(t, "verbosity").CurrentValue, "the held switch survives the restart")
	e.close()
}

// TestAThrowawayKnobStaysOffUpstreamMenus: a knob without an upstream
// rendering is neither offered nor settable where the bridge renders
// upstream's options.
func TestAThrowawayKnobStaysOffUpstreamMenus(t *testing.T) {
	var ids atomic.Int64
	e := openKnobEditor(t, t.TempDir(), &ids, false)
	defer e.close()
	var nr optionsResult
	require.NoError(t, e.call("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}, &nr))
	for _, o := range nr.ConfigOptions {
		require.NotEqual(t, "verbosity", o.ID)
	}
	err := e.call("session/set_config_option", map[string]any{"sessionId": nr.SessionID, "configId": "verbosity", "value": "chatty"}, nil)
	var we *acpclient.Error
	require.True(t, errors.As(err, &we), "want a JSON-RPC error, got %v", err)
	require.Equal(t, `Invalid params: unknown config option "verbosity"`, we.Message)
	require.False(t, strings.Contains(string(e.c.Output()), `"level"`))
}

// TestEveryKnobChangeTheClientDidNotMakeIsAnnounced: a switch logged by
// someone else (a tool, a plan approval) reaches the editor as
// config_option_update, for every registered knob (the tool mode and the
// throwaway one included), and the update lists every option the
// session offers.
func TestEveryKnobChangeTheClientDidNotMakeIsAnnounced(t *testing.T) {
	var ids atomic.Int64
	e := openKnobEditor(t, t.TempDir(), &ids, true, func(c *agent.Config) { c.ToolModeKnob = true })
	defer e.close()
	var nr optionsResult
	require.NoError(t, e.call("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}, &nr))
	e.srv.mu.Lock()
	log := e.srv.sessions[nr.SessionID].s.Log()
	e.srv.mu.Unlock()

	from := 0
	for _, sw := range []struct{ typ, data, id, value string }{
		{agent.TypeToolModeSet, `{"mode":"code"}`, agent.KnobToolMode, agent.ToolModeCode},
		{"test/verbosity", `{"level":"chatty"}`, "verbosity", "chatty"},
	} {
		log.Append(sw.typ, json.RawMessage(sw.data))
		u, next, err := e.c.WaitUpdate(e.ctx(), from, func(u acpclient.Update) bool { return u.Kind == string(UpdateConfigOption) })
		require.NoError(t, err, "no config_option_update for %s", sw.typ)
		from = next + 1
		var upd optionsResult
		require.NoError(t, json.Unmarshal(u.Raw, &upd))
		var got []string
		for _, o := range upd.ConfigOptions {
			got = append(got, o.ID)
		}
		var want []string
		for _, o := range nr.ConfigOptions {
			want = append(want, o.ID)
		}
		require.Equal(t, want, got, "the update lists every option")
		require.Equal(t, sw.value, upd.option(t, sw.id).CurrentValue)
	}
}

var _ session.Store = (*jsonl.Store)(nil)
