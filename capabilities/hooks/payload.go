package hooks

import (
	"encoding/json"
	"os"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// object builds a JSON object with keys in insertion order (the payloads'
// key order is contract).
type object struct{ b []byte }

func (o *object) raw(key string, v []byte) *object {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = jsonx.AppendString(o.b, key)
	o.b = append(o.b, ':')
	o.b = append(o.b, v...)
	return o
}

func (o *object) str(key, v string) *object { return o.raw(key, jsonx.AppendString(nil, v)) }

func (o *object) bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

// event is what a payload is built from.
type event struct {
	point  string
	turn   int // 0: not a turn point
	source string
	prompt string
	call   *pipeline.Call
	result *string
}

// subagentType is the agent type of every child (SubagentStart and
// SubagentStop payloads, and their match query).
const subagentType = "general-purpose"

// payload returns the hook's stdin object for e in dialect d
// (hooks contract § 4).
func payload(d Dialect, s pipeline.Conversation, e event) []byte {
	id, cwd := "", processCwd()
	if s != nil {
		id = s.ID()
		if c := s.Cwd(); c != "" {
			cwd = c
		}
	}
	o := &object{}
	o.str("session_id", id)
	if d == Codex {
		o.raw("transcript_path", []byte("null"))
	}
	o.str("cwd", cwd).str("hook_event_name", e.point)
	if d == Codex {
		o.str("model", "").str("permission_mode", "default")
		if e.point != SessionStart && e.turn > 0 {
			o.str("turn_id", strconv.Itoa(e.turn))
		}
	}
	switch e.point {
	case SessionStart:
		o.str("source", e.source)
	case SubagentStart:
		o.str("agent_id", id).str("agent_type", subagentType)
	case SubagentStop:
		o.str("agent_id", id).str("agent_type", subagentType).raw("stop_hook_active", []byte("false"))
	case UserPromptSubmit:
		o.str("prompt", e.prompt)
	case PreToolUse, PostToolUse:
		o.str("tool_name", e.call.Name)
		o.raw("tool_input", toolInput(d, e.call.Args))
		o.str("tool_use_id", e.call.CallID)
		if e.point == PostToolUse && e.result != nil {
			o.str("tool_response", *e.result)
		}
	case Stop:
		o.raw("stop_hook_active", []byte("false"))
		if d == Codex {
			o.raw("last_assistant_message", []byte("null"))
		}
	}
	return o.bytes()
}

// toolInput is the parsed arguments (Claude) or {"command": <the command
// argument if a string, else "">} (Codex).
func toolInput(d Dialect, args json.RawMessage) []byte {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if d == Claude {
		return args
	}
	var a struct {
		Command json.RawMessage `json:"command"`
	}
	cmd := ""
	if json.Unmarshal(args, &a) == nil && a.Command != nil {
		_ = json.Unmarshal(a.Command, &cmd)
	}
	return (&object{}).str("command", cmd).bytes()
}

func processCwd() string {
	wd, _ := os.Getwd()
	return wd
}

// Log event types the bridges append (session-log contract § 2).
const (
	TypeHookInvoked = "hook/invoked"
	TypeHookResult  = "hook/result"
)

// Invoked is the data of hook/invoked.
type Invoked struct {
	Turn      int     `json:"turn"`
	Point     string  `json:"point"`
	Dialect   Dialect `json:"dialect"`
	HandlerID string  `json:"handlerId"`
	Matcher   *string `json:"matcher,omitempty"`
}

// Result is the data of hook/result.
type Result struct {
	Turn          int     `json:"turn"`
	Point         string  `json:"point"`
	HandlerID     string  `json:"handlerId"`
	Decision      string  `json:"decision"`
	ExitCode      *int    `json:"exitCode,omitempty"`
	StderrSummary string  `json:"stderrSummary,omitempty"`
	DurationMs    float64 `json:"durationMs"`
}

// summaryMax is the stderrSummary cap, in UTF-16 code units as upstream
// counts.
const summaryMax = 500

// summarize trims stderr and cuts it to summaryMax units plus "…".
func summarize(stderr string) string {
	units := 0
	for i, r := range stderr {
		n := 1
		if r >= 0x10000 && r != utf8.RuneError {
			n = utf16.RuneLen(r)
		}
		if units+n > summaryMax {
			return stderr[:i] + "…"
		}
		units += n
	}
	return stderr
}

// appendInvoked logs hook/invoked.
func appendInvoked(l *session.Log, v Invoked) { l.Append(TypeHookInvoked, v) }

// appendResult logs hook/result.
func appendResult(l *session.Log, v Result) { l.Append(TypeHookResult, v) }
