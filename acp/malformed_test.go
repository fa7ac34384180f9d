package acp

// The malformed-input catalogue: every bad input the wire can get, over the
// real framing and handlers (Harness + FakeAgent), each with its exact
// reply and followed by a valid request that must still be answered. At
// cleanup the harness checks that every line written is one JSON-RPC frame
// valid against the ACP schema.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func parseErr() string {
	return `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`
}

func invalidReq(id, details string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"Invalid Request","data":{"details":` + JSONQuote(details) + `}}}`
}

func badParamsLine(id, details string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"Invalid params","data":{"details":` + JSONQuote(details) + `}}}`
}

func paramsErr(id, detail string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":` + JSONQuote("Invalid params: "+detail) + `}}`
}

func notFoundLine(id, method string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":` + JSONQuote(`"Method not found": `+method) + `,"data":{"method":` + JSONQuote(method) + `}}}`
}

func okLine(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{}}` }

func req(id, method, params string) string { return RequestLine(id, method, params) }

func isStringish(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

func TestMalformedInputCatalogue(t *testing.T) {
	const maxLine = 64 << 10
	srv, fa := NewFakeServer(Options{Features: Features{ClearErrors: true, CheckCwd: true, ListSessions: true}, MaxLineBytes: maxLine})
	fa.Knobs = map[string]string{"sandbox-mode": "read-only"}
	h := StartHarness(t, srv)
	cwd := t.TempDir()
	file := filepath.Join(cwd, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	sid := h.NewSession(cwd)
	sidQ := JSONQuote(sid)
	big := strings.Repeat("a", maxLine)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tooLong := func(id, line string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"Invalid Request: message too large: a line of ` +
			strconv.Itoa(len(line)) + ` bytes exceeds the 64 KiB limit (65536 bytes); it was discarded"}}`
	}
	overReq := req("94", "session/prompt", PromptParams(sid, big))
	overLate := `{"jsonrpc":"2.0","method":"x","params":"` + big + `","id":95}`

	cases := []struct {
		name string
		in   string   // one input line, without its newline
		want []string // the replies, in order
	}{
		// Not JSON.
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":"initialize"`, []string{parseErr()}},
		{"trailing comma", `{"jsonrpc":"2.0","id":1,}`, []string{parseErr()}},
		{"plain text", `hello there`, []string{parseErr()}},
		{"single quotes", `{'jsonrpc':'2.0','id':1}`, []string{parseErr()}},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"authenticate"} x`, []string{parseErr()}},
		{"two objects", `{}{}`, []string{parseErr()}},
		{"binary garbage", "\x00\xff\xfe\x01\x02", []string{parseErr()}},
		{"NUL outside a string", "{\"jsonrpc\":\"2.0\",\x00\"id\":1}", []string{parseErr()}},
		{"too deep to parse", `{"jsonrpc":"2.0","id":9,"method":"session/new","params":` + deep(20000) + `}`, []string{parseErr()}},
		// Not a request object.
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"authenticate"}]`, []string{invalidReq("null", "batch and non-object messages are not supported")}},
		{"empty batch", `[]`, []string{invalidReq("null", "batch and non-object messages are not supported")}},
		{"bare string", `"authenticate"`, []string{invalidReq("null", "batch and non-object messages are not supported")}},
		{"bare number", `42`, []string{invalidReq("null", "batch and non-object messages are not supported")}},
		{"bare null", `null`, []string{invalidReq("null", "batch and non-object messages are not supported")}},
		{"empty object", `{}`, []string{invalidReq("null", "message has neither method nor result/error")}},
		{"id only", `{"jsonrpc":"2.0","id":13}`, []string{invalidReq("13", "message has neither method nor result/error")}},
		{"request and response", `{"jsonrpc":"2.0","id":14,"method":"authenticate","result":{}}`, []string{invalidReq("14", "a message cannot be both a request and a response")}},
		// The jsonrpc member.
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":15,"method":"authenticate"}`, []string{invalidReq("15", `jsonrpc must be "2.0"`)}},
		{"jsonrpc number", `{"jsonrpc":2,"id":16,"method":"authenticate"}`, []string{invalidReq("16", `jsonrpc must be "2.0"`)}},
		{"jsonrpc absent (tolerated)", `{"id":17,"method":"authenticate"}`, []string{okLine("17")}},
		{"jsonrpc escaped", `{"jsonrpc":"\u0032.0","id":18,"method":"authenticate"}`, []string{okLine("18")}},
		// The method member.
		{"method number", `{"jsonrpc":"2.0","id":77,"method":5}`, []string{invalidReq("77", "method must be a string")}},
		{"method null", `{"jsonrpc":"2.0","id":20,"method":null}`, []string{invalidReq("20", "method must be a string")}},
		{"method object", `{"jsonrpc":"2.0","id":21,"method":{"name":"authenticate"}}`, []string{invalidReq("21", "method must be a string")}},
		{"method empty", req("22", "", "{}"), []string{notFoundLine("22", "")}},
		{"method unknown", req("23", "x/y", "{}"), []string{notFoundLine("23", "x/y")}},
		{"notification method as request", req("24", "session/cancel", `{"sessionId":`+sidQ+`}`), []string{notFoundLine("24", "session/cancel")}},
		{"extension request", req("25", "_zed/thing", "{}"), []string{notFoundLine("25", "_zed/thing")}},
		{"long unknown method", req("26", "m/"+strings.Repeat("x", 5000), ""), []string{notFoundLine("26", "m/"+strings.Repeat("x", 5000))}},
		// Ids.
		{"string id", req(`"abc"`, "authenticate", "{}"), []string{okLine(`"abc"`)}},
		{"null id", req("null", "authenticate", "{}"), []string{okLine("null")}},
		{"object id", req(`{"a":1}`, "authenticate", "{}"), []string{invalidReq("null", "request id must be a string, an integer or null")}},
		{"array id", req(`[1]`, "authenticate", "{}"), []string{invalidReq("null", "request id must be a string, an integer or null")}},
		{"boolean id", req(`true`, "authenticate", "{}"), []string{invalidReq("null", "request id must be a string, an integer or null")}},
		{"fractional id", req(`1.5`, "authenticate", "{}"), []string{invalidReq("null", "request id must be a string, an integer or null")}},
		{"exponent id", req(`1e3`, "authenticate", "{}"), []string{okLine(`1e3`)}},
		{"integral decimal id", req(`2.50e1`, "authenticate", "{}"), []string{okLine(`2.50e1`)}},
		{"negative fraction id", req(`-0.5e-3`, "authenticate", "{}"), []string{invalidReq("null", "request id must be a string, an integer or null")}},
		{"huge integer id", req(`123456789012345678901234567890`, "authenticate", "{}"), []string{okLine(`123456789012345678901234567890`)}},
		{"duplicate id: the last wins", `{"jsonrpc":"2.0","id":1,"id":40,"method":"authenticate"}`, []string{okLine("40")}},
		{"escaped key", `{"jsonrpc":"2.0","\u0069d":41,"method":"authenticate"}`, []string{okLine("41")}},
		// Params of the wrong type, for every method.
		{"initialize params string", req("50", "initialize", `"x"`), []string{badParamsLine("50", "json: cannot unmarshal string into Go value of type acp.InitializeRequest")}},
		{"initialize params array", req("51", "initialize", `[]`), []string{badParamsLine("51", "json: cannot unmarshal array into Go value of type acp.InitializeRequest")}},
		{"session/new params array", req("52", "session/new", `[]`), []string{badParamsLine("52", "json: cannot unmarshal array into Go value of type acp.NewSessionRequest")}},
		{"session/new cwd number", req("53", "session/new", `{"cwd":5,"mcpServers":[]}`), []string{badParamsLine("53", "json: cannot unmarshal number into Go struct field NewSessionRequest.cwd of type string")}},
		{"session/new mcpServers string", req("54", "session/new", `{"cwd":"/w","mcpServers":"x"}`), []string{badParamsLine("54", "json: cannot unmarshal string into Go struct field NewSessionRequest.mcpServers of type []json.RawMessage")}},
		{"session/new relative cwd", req("55", "session/new", `{"cwd":"w","mcpServers":[]}`), []string{paramsErr("55", "cwd must be an absolute path: w")}},
		{"session/new missing cwd", req("56", "session/new", `{"cwd":`+JSONQuote(filepath.Join(cwd, "gone"))+`,"mcpServers":[]}`), []string{paramsErr("56", "cwd does not exist: "+filepath.Join(cwd, "gone"))}},
		{"session/new cwd is a file", req("57", "session/new", `{"cwd":`+JSONQuote(file)+`,"mcpServers":[]}`), []string{paramsErr("57", "cwd is not a directory: "+file)}},
		{"session/new no params", req("58", "session/new", ""), []string{paramsErr("58", "cwd must be an absolute path: ")}},
		{"session/load params number", req("59", "session/load", `5`), []string{badParamsLine("59", "json: cannot unmarshal number into Go value of type acp.LoadSessionRequest")}},
		{"session/load sessionId number", req("60", "session/load", `{"sessionId":5,"cwd":"/w","mcpServers":[]}`), []string{badParamsLine("60", "json: cannot unmarshal number into Go struct field LoadSessionRequest.sessionId of type string")}},
		{"session/load unknown session", req("61", "session/load", `{"sessionId":"nope","cwd":`+JSONQuote(cwd)+`,"mcpServers":[]}`),
			[]string{`{"jsonrpc":"2.0","id":61,"error":{"code":-32002,"message":"Resource not found: no stored session nope (it was deleted, or is stored under another sessions root)","data":{"sessionId":"nope"}}}`}},
		{"session/load live session", req("62", "session/load", `{"sessionId":`+sidQ+`,"cwd":`+JSONQuote(cwd)+`,"mcpServers":[]}`), []string{paramsErr("62", "session "+sid+" is already loaded")}},
		{"session/prompt null params", req("63", "session/prompt", `null`), []string{paramsErr("63", "unknown session: ")}},
		{"session/prompt prompt string", req("64", "session/prompt", `{"sessionId":`+sidQ+`,"prompt":"hi"}`), []string{badParamsLine("64", "json: cannot unmarshal string into Go struct field PromptRequest.prompt of type []acp.ContentBlock")}},
		{"session/prompt block number", req("65", "session/prompt", `{"sessionId":`+sidQ+`,"prompt":[5]}`), []string{badParamsLine("65", "json: cannot unmarshal number into Go struct field PromptRequest.prompt of type acp.ContentBlock")}},
		{"session/prompt text number", req("66", "session/prompt", `{"sessionId":`+sidQ+`,"prompt":[{"type":"text","text":5}]}`), []string{badParamsLine("66", "json: cannot unmarshal number into Go struct field ContentBlock.prompt.text of type string")}},
		{"session/prompt unknown session", req("67", "session/prompt", PromptParams("nope", "hi")), []string{paramsErr("67", "unknown session: nope")}},
		{"session/prompt image block", req("68", "session/prompt", `{"sessionId":`+sidQ+`,"prompt":[{"type":"image","data":"x","mimeType":"image/png"}]}`),
			[]string{paramsErr("68", "only text and resource_link prompt content is supported; image/audio/embedded resource blocks are rejected rather than silently dropped")}},
		{"session/prompt blank text", req("69", "session/prompt", PromptParams(sid, " \n\t")), []string{paramsErr("69", "empty prompt")}},
		{"session/set_mode modeId number", req("70", "session/set_mode", `{"sessionId":`+sidQ+`,"modeId":5}`), []string{badParamsLine("70", "json: cannot unmarshal number into Go struct field SetModeRequest.modeId of type string")}},
		{"session/set_mode unknown session", req("71", "session/set_mode", `{"sessionId":"nope","modeId":"plan"}`), []string{paramsErr("71", "unknown session: nope")}},
		{"set_config_option object value", req("72", "session/set_config_option", `{"sessionId":`+sidQ+`,"configId":"sandbox-mode","value":{"a":1}}`),
			[]string{paramsErr("72", "config option sandbox-mode is a select; its value must be a string, got an object")}},
		{"set_config_option number value", req("73", "session/set_config_option", `{"sessionId":`+sidQ+`,"configId":"sandbox-mode","value":3}`),
			[]string{paramsErr("73", "config option sandbox-mode is a select; its value must be a string, got a number")}},
		{"set_config_option null value", req("74", "session/set_config_option", `{"sessionId":`+sidQ+`,"configId":"sandbox-mode","value":null}`),
			[]string{paramsErr("74", "config option sandbox-mode is a select; its value must be a string, got null")}},
		{"set_config_option no value", req("75", "session/set_config_option", `{"sessionId":`+sidQ+`,"configId":"sandbox-mode"}`),
			[]string{paramsErr("75", "config option sandbox-mode is a select; its value must be a string, got no value")}},
		{"set_config_option boolean form", req("76", "session/set_config_option", `{"sessionId":`+sidQ+`,"configId":"sandbox-mode","type":"boolean","value":true}`),
			[]string{paramsErr("76", "config option sandbox-mode is a select; boolean values are not accepted")}},
		{"set_config_option configId number", req("78", "session/set_config_option", `{"sessionId":`+sidQ+`,"configId":5,"value":"x"}`),
			[]string{badParamsLine("78", "json: cannot unmarshal number into Go struct field SetConfigOptionRequest.configId of type string")}},
		{"set_config_option unknown session", req("79", "session/set_config_option", `{"sessionId":"nope","configId":"sandbox-mode","value":"read-only"}`), []string{paramsErr("79", "unknown session: nope")}},
		{"session/list cwd number", req("80", "session/list", `{"cwd":5}`), []string{badParamsLine("80", "json: cannot unmarshal number into Go struct field ListSessionsRequest.cwd of type string")}},
		{"session/list relative cwd", req("81", "session/list", `{"cwd":"rel"}`), []string{paramsErr("81", "cwd must be an absolute path: rel")}},
		{"authenticate params ignored", req("82", "authenticate", `"whatever"`), []string{okLine("82")}},
		{"deep but parseable params", req("83", "session/new", deep(5000)), []string{badParamsLine("83", "json: cannot unmarshal array into Go value of type acp.NewSessionRequest")}},
		{"huge number in params", req("84", "session/set_mode", `{"sessionId":"nope","modeId":"plan","x":1e999999}`), []string{paramsErr("84", "unknown session: nope")}},
		{"invalid UTF-8 in a string", req("85", "session/prompt", `{"sessionId":"no`+"\xff"+`pe","prompt":[]}`), []string{paramsErr("85", "unknown session: no\uFFFDpe")}},
		// Notifications never get a reply.
		{"unknown notification", NotificationLine("x/y", "{}"), nil},
		{"cancel unknown session", NotificationLine("session/cancel", `{"sessionId":"nope"}`), nil},
		{"cancel with garbage params", NotificationLine("session/cancel", `[1,2]`), nil},
		{"request method as notification", NotificationLine("initialize", `{"protocolVersion":1}`), nil},
		{"response to no call", `{"jsonrpc":"2.0","id":999,"result":{}}`, nil},
		// Framing.
		{"empty line", ``, nil},
		{"whitespace line", " \t \r", nil},
		{"BOM only", "\xEF\xBB\xBF", nil},
		{"BOM before a request", "\xEF\xBB\xBF" + req("90", "authenticate", "{}"), []string{okLine("90")}},
		{"CRLF", req("91", "authenticate", "{}") + "\r", []string{okLine("91")}},
		{"surrounding blanks", "  \t" + req("92", "authenticate", "{}") + "  ", []string{okLine("92")}},
		{"line at the limit", req("93", "x/y", `{"pad":"`+big[:maxLine-len(req("93", "x/y", `{"pad":""}`))]+`"}`), []string{notFoundLine("93", "x/y")}},
		{"oversized request", overReq, []string{tooLong("94", overReq)}},
		{"oversized, id after params", overLate, []string{tooLong("null", overLate)}},
		{"oversized garbage", big + big, []string{tooLong("null", big+big)}},
	}
	require.GreaterOrEqual(t, len(cases), 40)
	for i, c := range cases {
		ping := `"ok-` + strconv.Itoa(i) + `"`
		var b bytes.Buffer
		b.WriteString(c.in)
		b.WriteByte('\n')
		b.WriteString(req(ping, "authenticate", "{}"))
		b.WriteByte('\n')
		// Tell the harness which method each answered id had (for the
		// schema check of results).
		if env, _, ok := scanEnvelope(trimLine([]byte(c.in))); ok && env.id != nil && isStringish(env.method) {
			var m string
			_ = json.Unmarshal(env.method, &m)
			h.Expect(string(env.id), m)
		}
		h.Expect(ping, "authenticate")
		h.SendRaw(b.Bytes(), WaitFor)
		resp, before := h.Await(ping)
		require.Equal(t, okLine(ping), string(resp), "%s: the next request must still work", c.name)
		got := make([]string, len(before))
		for j, l := range before {
			got[j] = string(l)
		}
		for len(got) < len(c.want) { // deferred answers (session/load) may come after the ping
			got = append(got, string(h.Next()))
		}
		if len(c.want) == 0 {
			require.Empty(t, got, "%s: no reply expected", c.name)
			continue
		}
		require.Equal(t, c.want, got, c.name)
	}
	// Nothing reached the session.
	require.Empty(t, fa.Session(t, sid).Prompts())
}
