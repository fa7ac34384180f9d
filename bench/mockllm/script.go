package mockllm

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Magic prompt markers, searched in the text of the last user message.
const (
	MagicSlow   = "MOCK:SLOW"
	MagicChunks = "MOCK:CHUNKS="
	MagicTool   = "MOCK:TOOL"
	MagicPath   = "MOCK:PATH="
)

// DefaultPath is {{path}} when the prompt has no MOCK:PATH=.
const DefaultPath = "bench.txt"

// ToolContent is the file content of the default tool scripts.
const ToolContent = "hello from mockllm\\n"

// ToolCall is the tool call MOCK:TOOL answers with. Arguments is a JSON
// object in which {{path}} (MOCK:PATH=, default "bench.txt") and {{base}}
// (its last element) are replaced, JSON-escaped.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// DefaultTools are the tool scripts per dialect, chosen for the agents
// that usually speak it: dsh-acp's `write` (OpenAI chat), Codex's
// `exec_command` running printf (Responses), Claude Code's `Write` as
// claude-agent-acp exposes it (Anthropic; the older claude-code-acp named
// it `mcp__acp__Write`), and Gemini CLI's `write_file` (Gemini).
func DefaultTools() map[string]ToolCall {
	return map[string]ToolCall{
		DialectOpenAI:    {Name: "write", Arguments: `{"file_path":"{{base}}","content":"` + ToolContent + `"}`},
		DialectResponses: {Name: "exec_command", Arguments: `{"cmd":"printf 'hello from mockllm\\n' > '{{path}}'"}`},
		DialectAnthropic: {Name: "Write", Arguments: `{"file_path":"{{path}}","content":"` + ToolContent + `"}`},
		DialectGemini:    {Name: "write_file", Arguments: `{"file_path":"{{path}}","content":"` + ToolContent + `"}`},
	}
}

// ParseToolFlag parses "KEY=NAME:ARGS", KEY being "DIALECT" or
// "LABEL/DIALECT" and ARGS a JSON object, e.g.
// `anthropic=Write:{"file_path":"{{path}}","content":"x"}`.
func ParseToolFlag(s string) (string, ToolCall, error) {
	key, rest, ok := strings.Cut(s, "=")
	name, args, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || key == "" || name == "" {
		return "", ToolCall{}, fmt.Errorf("tool %q: want KEY=NAME:{json}", s)
	}
	d := key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		d = key[i+1:]
	}
	switch d {
	case DialectOpenAI, DialectResponses, DialectAnthropic, DialectGemini:
	default:
		return "", ToolCall{}, fmt.Errorf("tool %q: unknown dialect %q", s, d)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return "", ToolCall{}, fmt.Errorf("tool %q: arguments are not a JSON object: %w", s, err)
	}
	return key, ToolCall{Name: name, Arguments: args}, nil
}

// Reply is what one request is answered with.
type Reply struct {
	// Kind is one of the Kind constants.
	Kind string
	// ID numbers the reply (the request's Seq).
	ID uint64
	// Reasoning and Text are the streamed chunks.
	Reasoning []string
	Text      []string
	// Generated text chunks "w<i> " follow Text.
	Generated int
	// Tool, when set, is the call made after the text (arguments resolved).
	Tool *ToolCall
	// Delay is slept before every content chunk but the first.
	Delay time.Duration
	// FlushEach flushes every chunk; otherwise only full buffers and the end.
	FlushEach bool
	// PromptTokens is reported as input usage.
	PromptTokens int
}

// Texts yields the text chunks.
func (r *Reply) Texts() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, t := range r.Text {
			if !yield(t) {
				return
			}
		}
		var b []byte
		for i := range r.Generated {
			b = append(strconv.AppendInt(append(b[:0], 'w'), int64(i), 10), ' ')
			if !yield(string(b)) {
				return
			}
		}
	}
}

// FullText is the concatenated text.
func (r *Reply) FullText() string {
	var sb strings.Builder
	for t := range r.Texts() {
		sb.WriteString(t)
	}
	return sb.String()
}

// CompletionTokens is the output usage: one token per chunk, one per tool
// call.
func (r *Reply) CompletionTokens() int {
	n := len(r.Reasoning) + len(r.Text) + r.Generated
	if r.Tool != nil {
		n++
	}
	return n
}

// The scripted texts.
var (
	defaultReasoning = []string{"The user", " wants a", " short", " greeting."}
	defaultText      = []string{"Hello", " from", " the", " mock", " LLM", "."}
	followUpText     = []string{"Done:", " the", " file", " is", " written."}
)

// script picks the reply to a parsed request.
func (s *Server) script(dialect, label string, p *parsed) *Reply {
	r := &Reply{Kind: KindText, Delay: s.opts.ChunkDelay, FlushEach: true}
	text := p.UserText
	switch {
	case p.ToolResult:
		r.Kind, r.Text = KindFollowUp, followUpText
	case p.JSONMode: // an agent's side query (routing, next speaker) never streams slowly
		r.Text = []string{`{"reasoning":"mock","next_speaker":"user","model_choice":"flash","complexity_score":1}`}
	case strings.Contains(text, MagicSlow) && p.Stream:
		r.Kind, r.Delay = KindSlow, s.opts.SlowInterval
		r.Generated = max(1, int(s.opts.SlowMax/s.opts.SlowInterval))
	case strings.Contains(text, MagicChunks) && p.Stream:
		r.Kind, r.FlushEach, r.Delay = KindChunks, false, 0
		r.Generated = min(s.opts.MaxChunks, max(1, leadingInt(text[strings.Index(text, MagicChunks)+len(MagicChunks):])))
	case strings.Contains(text, MagicTool) && p.HasTools:
		r.Kind = KindTool
		tc := s.tool(dialect, label)
		path := DefaultPath
		if i := strings.Index(text, MagicPath); i >= 0 {
			if f := strings.Fields(text[i+len(MagicPath):]); len(f) > 0 {
				path = f[0]
			}
		}
		tc.Arguments = strings.NewReplacer("{{path}}", jsonInner(path), "{{base}}", jsonInner(filepath.Base(path))).
			Replace(tc.Arguments)
		r.Tool = &tc
	default:
		r.Reasoning, r.Text = defaultReasoning, defaultText
	}
	return r
}

// tool returns the script for LABEL/DIALECT, DIALECT, or the default.
func (s *Server) tool(dialect, label string) ToolCall {
	if label != "" {
		if tc, ok := s.opts.Tools[label+"/"+dialect]; ok {
			return tc
		}
	}
	if tc, ok := s.opts.Tools[dialect]; ok {
		return tc
	}
	return DefaultTools()[dialect]
}

// jsonInner is s JSON-escaped, without the quotes.
func jsonInner(s string) string {
	b := jsonx.AppendString(nil, s)
	return string(b[1 : len(b)-1])
}

// leadingInt parses the decimal digits at the start of s (0 if none).
func leadingInt(s string) int {
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' || n > 1<<40 {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// splitArgs cuts tool arguments into streaming pieces of at most n bytes,
// never inside a UTF-8 sequence.
func splitArgs(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return append(out, s)
}

// argPiece is the size of streamed tool-argument pieces.
const argPiece = 48

// decodeObject unmarshals a JSON object body into v.
func decodeObject(body []byte, v any) error {
	if len(body) == 0 || body[0] != '{' {
		trimmed := strings.TrimSpace(string(body))
		if !strings.HasPrefix(trimmed, "{") {
			return errNotObject
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil // tolerate fields of unexpected types
		}
		return err
	}
	return nil
}

// textOf extracts the text of a content value that is a string or an array
// of parts with a "text" field.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}
