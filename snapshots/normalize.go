package snapshots

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Tokens written by the normalizer (replay.md § 4 and the corpus README).
const (
	CwdToken           = "{{cwd}}"
	SessionIDToken     = "{{sessionId}}"
	AgentToken         = "{{agent}}"
	SystemToken        = "{{system}}"
	ToolsToken         = "{{tools}}"
	MessagePrefixToken = "{{messagePrefix}}"
	// TerminalCommandToken and TerminalArgsToken stand for the command and
	// args of a terminal/create request: the agent's confined argv, which
	// depends on the machine (the sandbox backend and its paths, the
	// session's private /tmp, the environment behind env -i).
	TerminalCommandToken = "{{terminalCommand}}"
	TerminalArgsToken    = "{{terminalArgs}}"
)

// uuidPattern is upstream's /[0-9a-f]{8}-…-[0-9a-f]{12}/gi.
var uuidPattern = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// ScrubString scrubs one string value, in this order: every occurrence of
// cwd becomes {{cwd}} (skipped when cwd is empty), every occurrence of each
// known session id becomes {{sessionId}} (empty ids are skipped), and every
// remaining UUID-shaped substring (case-insensitive) becomes {{sessionId}}.
func ScrubString(s, cwd string, sessionIDs []string) string {
	if cwd != "" {
		s = strings.ReplaceAll(s, cwd, CwdToken)
	}
	for _, id := range sessionIDs {
		if id != "" {
			s = strings.ReplaceAll(s, id, SessionIDToken)
		}
	}
	return uuidPattern.ReplaceAllLiteralString(s, SessionIDToken)
}

// Scrub applies ScrubString, in place, to every string value inside v
// (object keys are left alone).
func Scrub(v *JSValue, cwd string, sessionIDs []string) {
	v.MapStrings(func(s string) string { return ScrubString(s, cwd, sessionIDs) })
}

// jsonLines splits data on "\n", drops blank lines and parses each line as
// JSON. what names the input in errors ("stdout", "session log").
func jsonLines(data []byte, what string) ([]*JSValue, error) {
	var out []*JSValue
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := ParseJS(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d is not JSON: %w: %s", what, i+1, err, excerpt(line))
		}
		out = append(out, v)
	}
	return out, nil
}

// excerpt shortens a line for an error message.
func excerpt(line []byte) string {
	const limit = 200
	if len(line) <= limit {
		return fmt.Sprintf("%q", line)
	}
	return fmt.Sprintf("%q…", line[:limit])
}

// joinLines serializes each value on its own line, each with a trailing "\n".
func joinLines(values []*JSValue) []byte {
	var out []byte
	for _, v := range values {
		out = v.AppendJS(out)
		out = append(out, '\n')
	}
	return out
}

// NormalizeStdout normalizes an agent's stdout (replay.md § 4): every
// non-blank line must be JSON (stdout purity) or an error naming the line is
// returned; every frame with a non-null "id" gets a sequence number, starting
// at 1, assigned by first appearance of the id's JSON serialization over all
// frames; a terminal/create request's command and args become
// {{terminalCommand}} and {{terminalArgs}}; every string is scrubbed
// (ScrubString); in the initialize response
// (a result object holding "protocolVersion") the values of "agentInfo" and
// "agentCapabilities", when present, become "{{agent}}". Each frame is
// written JavaScript-style on its own line with a trailing "\n". The
// transformation is idempotent.
func NormalizeStdout(stdout []byte, cwd string, sessionIDs []string) ([]byte, error) {
	frames, err := jsonLines(stdout, "stdout")
	if err != nil {
		return nil, fmt.Errorf("stdout purity: %w", err)
	}
	seq := map[string]int{}
	for _, f := range frames {
		id, ok := f.Get("id")
		if !ok || id.IsNull() {
			continue
		}
		key := id.String()
		n, seen := seq[key]
		if !seen {
			n = len(seq) + 1
			seq[key] = n
		}
		f.Set("id", NewJSNumber(float64(n)))
	}
	for _, f := range frames {
		scrubTerminalCreate(f)
		Scrub(f, cwd, sessionIDs)
		if res, ok := f.Get("result"); ok && res.Has("protocolVersion") {
			for _, k := range []string{"agentInfo", "agentCapabilities"} {
				if res.Has(k) {
					res.Set(k, NewJSString(AgentToken))
				}
			}
		}
	}
	return joinLines(frames), nil
}

// NormalizeLog normalizes a JSONL session log (replay.md § 4): the header
// line (type "session") gets createdAt 0; every event gets time 0, and a
// "hook/result" event whose data has durationMs gets durationMs 0; seq is
// kept. With scrubHeaders, request headers are scrubbed as well (see
// ScrubRequestHeader). Then every string is scrubbed with cwd and
// sessionIDs, and each line is re-serialized JavaScript-style with a
// trailing "\n". The transformation is idempotent.
func NormalizeLog(log []byte, cwd string, sessionIDs []string, scrubHeaders bool) ([]byte, error) {
	lines, err := jsonLines(log, "session log")
	if err != nil {
		return nil, err
	}
	for i, v := range lines {
		if v.Kind() != JSObject {
			return nil, fmt.Errorf("session log entry %d is not an object: %s", i+1, excerpt(v.Stringify()))
		}
		typ, _ := member(v, "type").StringValue()
		if typ == "session" {
			v.Set("createdAt", NewJSNumber(0))
		} else {
			v.Set("time", NewJSNumber(0))
			if typ == "hook/result" {
				if data := member(v, "data"); data.Has("durationMs") {
					data.Set("durationMs", NewJSNumber(0))
				}
			}
		}
		if scrubHeaders {
			ScrubRequestHeader(v)
		}
		Scrub(v, cwd, sessionIDs)
	}
	return joinLines(lines), nil
}

// scrubTerminalCreate replaces the command and args of a terminal/create
// request by their tokens (other frames are left alone).
func scrubTerminalCreate(f *JSValue) {
	if m, _ := member(f, "method").StringValue(); m != "terminal/create" {
		return
	}
	params := member(f, "params")
	if params.Has("command") {
		params.Set("command", NewJSString(TerminalCommandToken))
	}
	if params.Has("args") {
		params.Set("args", NewJSString(TerminalArgsToken))
	}
}

// member returns an object member or nil (a nil *JSValue is null).
func member(v *JSValue, key string) *JSValue {
	m, _ := v.Get(key)
	return m
}

// ScrubRequestHeader applies the request-header scrub with the project rule
// (replay.md §§ 4, 5) to one parsed log event, in place; other events are
// left untouched. For "request/header": data.header.system → "{{system}}",
// data.header.tools → "{{tools}}", each data.header.messagePrefix element →
// "{{messagePrefix}}" (absent fields stay absent). For
// "request/header-delta": the whole data.system → "{{system}}", every key
// but "name" of each data.tools.added[] / data.tools.changed[] entry →
// "{{tools}}" (removed kept), each data.messagePrefix element →
// "{{messagePrefix}}". It is idempotent.
func ScrubRequestHeader(event *JSValue) {
	typ, _ := member(event, "type").StringValue()
	data := member(event, "data")
	switch typ {
	case "request/header":
		header := member(data, "header")
		if header.Kind() != JSObject {
			return
		}
		if header.Has("system") {
			header.Set("system", NewJSString(SystemToken))
		}
		if header.Has("tools") {
			header.Set("tools", NewJSString(ToolsToken))
		}
		tokenizeItems(member(header, "messagePrefix"), MessagePrefixToken)
	case "request/header-delta":
		if data.Kind() != JSObject {
			return
		}
		if data.Has("system") {
			data.Set("system", NewJSString(SystemToken))
		}
		tools := member(data, "tools")
		for _, list := range []string{"added", "changed"} {
			for _, entry := range member(tools, list).Items() {
				for _, k := range entry.Keys() {
					if k != "name" {
						entry.Set(k, NewJSString(ToolsToken))
					}
				}
			}
		}
		tokenizeItems(member(data, "messagePrefix"), MessagePrefixToken)
	}
}

// tokenizeItems replaces every element of an array by the string token.
func tokenizeItems(arr *JSValue, token string) {
	items := arr.Items()
	for i := range items {
		items[i] = NewJSString(token)
	}
}

// LogIdentity returns the id and cwd of a session log's header line (the
// first non-blank line, when its type is "session"); missing values are "".
func LogIdentity(log []byte) (id, cwd string) {
	for _, line := range bytes.Split(log, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := ParseJS(line)
		if err != nil {
			return "", ""
		}
		if typ, _ := member(v, "type").StringValue(); typ != "session" {
			return "", ""
		}
		id, _ = member(v, "id").StringValue()
		cwd, _ = member(v, "cwd").StringValue()
		return id, cwd
	}
	return "", ""
}
