package hooks

import (
	"encoding/json"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

func code(n int) *int { return &n }

func TestDecodeExitCodes(t *testing.T) {
	o := Decode(Claude, PreToolUse, Run{ExitCode: code(2), Stderr: "  no bash here \n"})
	require.Equal(t, "block", o.Decision)
	require.Equal(t, "no bash here", o.Reason)

	o = Decode(Claude, PreToolUse, Run{ExitCode: code(2)})
	require.Equal(t, "block", o.Decision, "exit 2 with no stderr still blocks")
	require.Empty(t, o.Reason)

	o = Decode(Claude, PreToolUse, Run{ExitCode: code(1), Stdout: `{"decision":"block"}`, Stderr: "oops"})
	require.Empty(t, o.Decision, "any other exit code is no decision")
	require.Equal(t, "pass", o.Recorded())

	o = Decode(Claude, PreToolUse, Run{Stdout: `{"decision":"block"}`})
	require.Empty(t, o.Decision, "no exit code (killed, or never ran) is no decision")
}

func TestDecodeStructuredStdout(t *testing.T) {
	out := `{"continue":false,"stopReason":"enough","systemMessage":"hi","decision":"approve","reason":"top",
	  "hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"specific",
	  "additionalContext":"ctx","updatedInput":{"command":"ls"}}}`
	o := Decode(Claude, PreToolUse, Run{ExitCode: code(0), Stdout: out})
	require.Equal(t, "deny", o.Decision)
	require.Equal(t, "specific", o.Reason)
	require.Equal(t, "ctx", o.AdditionalContext)
	require.True(t, o.UpdatedInput)
	require.False(t, *o.Continue)
	require.Equal(t, "enough", o.StopReason)

	// A block for another event keeps only the top-level fields.
	o = Decode(Claude, PostToolUse, Run{ExitCode: code(0), Stdout: out})
	require.Equal(t, "approve", o.Decision)
	require.Equal(t, "top", o.Reason)
	require.Empty(t, o.AdditionalContext)

	// Top-level decision is approve/block only.
	o = Decode(Claude, Stop, Run{ExitCode: code(0), Stdout: `{"decision":"deny"}`})
	require.Empty(t, o.Decision)
	o = Decode(Claude, Stop, Run{ExitCode: code(0), Stdout: `{"continue":false}`})
	require.Equal(t, "stop", o.Recorded())
}

func TestDecodeMalformedJSONIsNoDecision(t *testing.T) {
	for _, out := range []string{`{"decision":"block"`, `{not json}`, `{"decision":"block"} trailing`, `["decision"]`} {
		o := Decode(Claude, PreToolUse, Run{ExitCode: code(0), Stdout: out})
		require.Empty(t, o.Decision, out)
		require.Equal(t, "pass", o.Recorded())
	}
	// Codex: plain stdout at prompt submit and session start is context;
	// a malformed object is not.
	o := Decode(Codex, UserPromptSubmit, Run{ExitCode: code(0), Stdout: "\nteal\n"})
	require.Equal(t, "teal", o.AdditionalContext)
	o = Decode(Codex, UserPromptSubmit, Run{ExitCode: code(0), Stdout: `{"oops"`})
	require.Empty(t, o.AdditionalContext)
	o = Decode(Codex, PreToolUse, Run{ExitCode: code(0), Stdout: "teal"})
	require.Empty(t, o.AdditionalContext)
	o = Decode(Claude, UserPromptSubmit, Run{ExitCode: code(0), Stdout: "teal"})
	require.Empty(t, o.AdditionalContext, "Claude reads only structured context")
}

func TestMergeIsMostRestrictive(t *testing.T) {
	m := Merge([]Output{
		{Decision: "allow", Reason: "fine"},
		{Decision: "ask", Reason: "ask 1"},
		{Decision: "ask", Reason: ""},
		{Decision: "ask", Reason: "ask 2", AdditionalContext: "c1"},
		{AdditionalContext: "c2"},
	})
	require.Equal(t, Merged{Decision: MergedAsk, Reason: "ask 1\n\nask 2", Contexts: []string{"c1", "c2"}}, m)
	m = Merge([]Output{{Decision: "approve"}, {Decision: "block", Reason: "b1"}, {Decision: "deny", Reason: "b2"}, {Decision: "ask", Reason: "a"}})
	require.Equal(t, MergedDeny, m.Decision)
	require.Equal(t, "b1\n\nb2", m.Reason)
	require.Equal(t, MergedAllow, Merge([]Output{{Decision: "allow", Reason: "ignored"}}).Decision)
	require.Empty(t, Merge([]Output{{Decision: "allow", Reason: "ignored"}}).Reason)
	require.Equal(t, MergedNone, Merge(nil).Decision)
}

type stubSession struct {
	id, cwd string
	log     *session.Log
}

func (s stubSession) ID() string        { return s.id }
func (s stubSession) Cwd() string       { return s.cwd }
func (s stubSession) Log() *session.Log { return s.log }

func (s stubSession) Host() *capabilities.Host { return nil }

func TestPayloadKeyOrder(t *testing.T) {
	s := stubSession{id: "sid", cwd: "/w"}
	call := &pipeline.Call{CallID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls <a> & b","description":"x"}`)}
	resp := "HELLO\n"
	for _, tc := range []struct {
		d    Dialect
		e    event
		want string
	}{
		{Claude, event{point: UserPromptSubmit, turn: 3, prompt: "hi"},
			`{"session_id":"sid","cwd":"/w","hook_event_name":"UserPromptSubmit","prompt":"hi"}`},
		{Claude, event{point: PreToolUse, turn: 1, call: call},
			`{"session_id":"sid","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"bash","tool_input":{"command":"ls <a> & b","description":"x"},"tool_use_id":"c1"}`},
		{Claude, event{point: PostToolUse, turn: 1, call: call, result: &resp},
			`{"session_id":"sid","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"bash","tool_input":{"command":"ls <a> & b","description":"x"},"tool_use_id":"c1","tool_response":"HELLO\n"}`},
		{Claude, event{point: Stop, turn: 1}, `{"session_id":"sid","cwd":"/w","hook_event_name":"Stop","stop_hook_active":false}`},
		{Claude, event{point: SessionStart, source: "resume"}, `{"session_id":"sid","cwd":"/w","hook_event_name":"SessionStart","source":"resume"}`},
		{Codex, event{point: SessionStart, source: "startup"},
			`{"session_id":"sid","transcript_path":null,"cwd":"/w","hook_event_name":"SessionStart","model":"","permission_mode":"default","source":"startup"}`},
		{Codex, event{point: UserPromptSubmit, turn: 2, prompt: "hi"},
			`{"session_id":"sid","transcript_path":null,"cwd":"/w","hook_event_name":"UserPromptSubmit","model":"","permission_mode":"default","turn_id":"2","prompt":"hi"}`},
		{Codex, event{point: PostToolUse, turn: 2, call: call, result: &resp},
			`{"session_id":"sid","transcript_path":null,"cwd":"/w","hook_event_name":"PostToolUse","model":"","permission_mode":"default","turn_id":"2","tool_name":"bash","tool_input":{"command":"ls <a> & b"},"tool_use_id":"c1","tool_response":"HELLO\n"}`},
		{Codex, event{point: PreToolUse, turn: 2, call: &pipeline.Call{CallID: "c2", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}},
			`{"session_id":"sid","transcript_path":null,"cwd":"/w","hook_event_name":"PreToolUse","model":"","permission_mode":"default","turn_id":"2","tool_name":"read","tool_input":{"command":""},"tool_use_id":"c2"}`},
		{Codex, event{point: Stop, turn: 2},
			`{"session_id":"sid","transcript_path":null,"cwd":"/w","hook_event_name":"Stop","model":"","permission_mode":"default","turn_id":"2","stop_hook_active":false,"last_assistant_message":null}`},
	} {
		require.Equal(t, tc.want, string(payload(tc.d, s, tc.e)))
	}
}

func TestSummarizeCutsAt500Units(t *testing.T) {
	require.Equal(t, "short", summarize("short"))
	long := strings.Repeat("x", 501)
	require.Equal(t, strings.Repeat("x", 500)+"…", summarize(long))
	require.Equal(t, strings.Repeat("x", 500), summarize(strings.Repeat("x", 500)))
	astral := strings.Repeat("😀", 251) // 502 UTF-16 units
	require.Equal(t, strings.Repeat("😀", 250)+"…", summarize(astral))
}
