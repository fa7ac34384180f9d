package reliability

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The model is a scripted OpenAI-compatible chat endpoint (POST
// …/chat/completions, SSE chat.completion.chunk frames, the dialect the
// deepseek provider speaks). What it answers depends only on the request:
// the last user message carrying a marker "[[script=NAME id=ID]]" names
// the script, and the number of assistant tool-call messages after it is
// the step reached. So the script survives any number of agent restarts,
// and a loaded session continues where its log stopped.
//
// Every request is checked to be a valid chat sequence: each assistant
// message with tool_calls is followed by one tool message per call before
// any other message, no tool message answers an unknown call, and the
// request ends with user or tool input. Violations are kept for the tests.

// markerRE finds a prompt's script marker.
var markerRE = regexp.MustCompile(`\[\[script=(\w+) id=([\w.-]+)\]\]`)

// marker returns the text that makes the model follow script for id.
func marker(script, id string) string { return "[[script=" + script + " id=" + id + "]]" }

// toolCall is one scripted call: the tool's name and its JSON arguments.
type toolCall struct {
	name string
	args string
}

// script is a turn: steps of tool calls, then a final text.
type script struct {
	steps [][]toolCall
	text  []string
}

// bashCall is a bash tool call running command.
func bashCall(command string) toolCall {
	return toolCall{"bash", fmt.Sprintf(`{"command":%s,"description":"run a command"}`, strconv.Quote(command))}
}

// scriptFor returns the named script for prompt id.
func scriptFor(name, id string) (script, bool) {
	file := "f-" + id + ".txt"
	final := []string{"All", " done", " for ", id, "."}
	switch name {
	case "tools": // a bash, a write, a read, then text
		return script{steps: [][]toolCall{
			{bashCall("echo hi")},
			{{"write", fmt.Sprintf(`{"file_path":%q,"content":"content of %s\n"}`, file, id)}},
			{{"read", fmt.Sprintf(`{"file_path":%q}`, file)}},
		}, text: final}, true
	case "soak": // a slow command, then two calls in one step, then text
		return script{steps: [][]toolCall{
			{bashCall("sleep 0.3; echo slept")},
			{{"write", fmt.Sprintf(`{"file_path":%q,"content":"soak %s\n"}`, file, id)},
				{"read", fmt.Sprintf(`{"file_path":%q}`, file)}},
		}, text: final}, true
	case "trap": // a command that ignores SIGTERM
		return script{steps: [][]toolCall{{bashCall("trap '' TERM; sleep 5")}}, text: final}, true
	case "text":
		return script{text: final}, true
	case "prog": // the program named by id (programs_test.go), then text
		if c, ok := programCall(id); ok {
			return script{steps: [][]toolCall{{c}}, text: final}, true
		}
	}
	return script{}, false
}

// modelRequest is what the model saw of one request.
type modelRequest struct {
	// Prompt is the id of the marker the script followed ("" if none).
	Prompt string
	// Step is the number of tool-call steps already answered in that turn.
	Step int
	// Users are the texts of every user message, in order.
	Users []string
	// Messages is the number of messages.
	Messages int
	// Results are the texts of the tool messages after the marker, in
	// order.
	Results []string
}

// model is the scripted endpoint. Its zero delay streams as fast as it can.
type model struct {
	srv   *httptest.Server
	delay time.Duration // between chunks

	mu         sync.Mutex
	seq        int
	requests   []modelRequest
	violations []string
}

// newModel starts a model streaming one chunk every delay.
func newModel(t testing.TB, delay time.Duration) *model {
	m := &model{delay: delay}
	m.srv = httptest.NewServer(m)
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the API root to hand the agent (DEEPSEEK_BASE_URL).
func (m *model) URL() string { return m.srv.URL + "/v1" }

// wireMessage is one message of a chat request.
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// text is the message content as a string ("" for null).
func (w wireMessage) text() string {
	var s string
	_ = json.Unmarshal(w.Content, &s)
	return s
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Messages []wireMessage     `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	mr, name := describe(req.Messages)
	bad := validate(req.Messages)
	m.mu.Lock()
	m.seq++
	seq := m.seq
	m.requests = append(m.requests, mr)
	for _, v := range bad {
		m.violations = append(m.violations, fmt.Sprintf("request %d (prompt %q step %d): %s", seq, mr.Prompt, mr.Step, v))
	}
	m.mu.Unlock()

	sc, ok := scriptFor(name, mr.Prompt)
	if !ok {
		sc = script{text: []string{"Hello", "."}}
	}
	var calls []toolCall
	if mr.Step < len(sc.steps) {
		calls = sc.steps[mr.Step]
	}
	m.stream(w, r, seq, mr, sc, calls)
}

// describe finds the script a request follows and where it stands.
func describe(msgs []wireMessage) (modelRequest, string) {
	mr := modelRequest{Messages: len(msgs)}
	name, last := "", -1
	for i, msg := range msgs {
		if msg.Role != "user" {
			continue
		}
		text := msg.text()
		mr.Users = append(mr.Users, text)
		if sm := markerRE.FindStringSubmatch(text); sm != nil {
			name, mr.Prompt, last = sm[1], sm[2], i
		}
	}
	if last >= 0 {
		for _, msg := range msgs[last+1:] {
			if msg.Role == "assistant" && len(msg.ToolCalls) > 0 {
				mr.Step++
			}
			if msg.Role == "tool" {
				mr.Results = append(mr.Results, msg.text())
			}
		}
	}
	return mr, name
}

// validate returns how msgs break the chat sequence rules.
func validate(msgs []wireMessage) []string {
	var bad []string
	if len(msgs) == 0 {
		return []string{"no messages"}
	}
	pending := map[string]bool{}
	seen := map[string]bool{}
	open := func(i int, role string) {
		if len(pending) > 0 {
			bad = append(bad, fmt.Sprintf("message %d (%s) while tool calls %v are unanswered", i, role, keys(pending)))
			clear(pending)
		}
	}
	for i, msg := range msgs {
		switch msg.Role {
		case "system":
			if i != 0 {
				bad = append(bad, fmt.Sprintf("system message at %d", i))
			}
		case "user":
			open(i, "user")
		case "assistant":
			open(i, "assistant")
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || seen[tc.ID] {
					bad = append(bad, fmt.Sprintf("message %d: tool call id %q empty or repeated", i, tc.ID))
				}
				seen[tc.ID] = true
				pending[tc.ID] = true
			}
		case "tool":
			if !pending[msg.ToolCallID] {
				bad = append(bad, fmt.Sprintf("message %d: tool result for %q answers no open tool call", i, msg.ToolCallID))
			}
			delete(pending, msg.ToolCallID)
		default:
			bad = append(bad, fmt.Sprintf("message %d: unknown role %q", i, msg.Role))
		}
	}
	if len(pending) > 0 {
		bad = append(bad, fmt.Sprintf("request ends with tool calls %v unanswered", keys(pending)))
	}
	if r := msgs[len(msgs)-1].Role; r != "user" && r != "tool" {
		bad = append(bad, fmt.Sprintf("request ends with a %s message", r))
	}
	return bad
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// stream writes the reply: a thought, the text of the step, then calls
// (finish tool_calls) or, without calls, the final text (finish stop).
func (m *model) stream(w http.ResponseWriter, r *http.Request, seq int, mr modelRequest, sc script, calls []toolCall) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	id := "chatcmpl-" + strconv.Itoa(seq)
	frame := func(delta, finish string) bool {
		if r.Context().Err() != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, `data: {"id":%q,"object":"chat.completion.chunk","created":1,"model":"mock","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n",
			id, delta, finish); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	pace := func() bool {
		if m.delay <= 0 {
			return r.Context().Err() == nil
		}
		t := time.NewTimer(m.delay)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	if !frame(`{"role":"assistant","content":""}`, "null") {
		return
	}
	for _, s := range []string{"Thinking", " about ", mr.Prompt} {
		if !pace() || !frame(`{"reasoning_content":`+strconv.Quote(s)+`}`, "null") {
			return
		}
	}
	texts := sc.text
	if len(calls) > 0 {
		texts = []string{"Step ", strconv.Itoa(mr.Step + 1), "."}
	}
	for _, s := range texts {
		if !pace() || !frame(`{"content":`+strconv.Quote(s)+`}`, "null") {
			return
		}
	}
	for i, c := range calls {
		callID := fmt.Sprintf("call_%d_%d", seq, i)
		half := len(c.args) / 2
		first := fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`,
			i, callID, c.name, strconv.Quote(c.args[:half]))
		rest := fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, strconv.Quote(c.args[half:]))
		if !pace() || !frame(first, "null") || !pace() || !frame(rest, "null") {
			return
		}
	}
	finish := `"stop"`
	if len(calls) > 0 {
		finish = `"tool_calls"`
	}
	if !frame(`{}`, finish) {
		return
	}
	fmt.Fprintf(w, `data: {"id":%q,"object":"chat.completion.chunk","created":1,"model":"mock","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":9,"total_tokens":%d}}`+"\n\n",
		id, 100+mr.Messages, 109+mr.Messages)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// Violations returns the chat-sequence violations seen so far.
func (m *model) Violations() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.violations...)
}

// Requests returns the requests seen so far.
func (m *model) Requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.requests...)
}

// RequestsFor returns the requests that followed prompt id's script.
func (m *model) RequestsFor(id string) []modelRequest {
	var out []modelRequest
	for _, r := range m.Requests() {
		if r.Prompt == id {
			out = append(out, r)
		}
	}
	return out
}
