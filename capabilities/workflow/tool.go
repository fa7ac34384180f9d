// Package workflow is the workflow tool (tools § 11, subagents-workflows
// § 4): the model writes a JavaScript body that orchestrates child agents
// with agent, parallel, pipeline, phase, log and args. The script runs in
// the program worker (package jsworker; its engine is package script, on
// goja); every agent() call comes back here and starts the child.
package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// Name is the tool's wire name.
const Name = "workflow"

// ErrNoAgent is the error of a call without a calling agent.
const ErrNoAgent = "workflow tool requires a calling agent (exec.agent was undefined)"

// maxResultChars cuts the result text (UTF-16 units, as JavaScript counts).
const maxResultChars = 50000

// Tool is the workflow tool.
type Tool struct {
	// Engine sets the engine's limits.
	Engine Config
	// Progress logs the run's agents as tool/progress while it runs (the
	// default composition's live card); upstream shows nothing.
	Progress bool
	// Programs runs the scripts (nil: the tool fails with a clear error).
	Programs *jsworker.Pool
}

// Name implements capabilities.Tool.
func (Tool) Name() string { return Name }

// Traits implements capabilities.Tool.
func (Tool) Traits() capabilities.Traits { return capabilities.Traits{Delegates: true} }

// Description implements capabilities.Tool.
func (Tool) Description() string {
	return "Run a JavaScript workflow that orchestrates child agents. The script is the body of an async function " +
		"(plain JavaScript, no TypeScript, no imports) and may use: agent(prompt, {label, phase, model, schema}) → " +
		"the child's final text, or with a JSON schema its structured value (null if the child failed); " +
		"parallel([() => …]) to run thunks concurrently; pipeline(items, ...stages) to run stages per item; " +
		"phase(title) and log(message) for progress; args (the call's args). Return plain JSON data."
}

// Schema implements capabilities.Tool.
func (Tool) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("script", capabilities.String("The workflow body: JavaScript run inside an async function; return the result.")),
		capabilities.Req("meta", &capabilities.Schema{Type: "object", Description: "What the workflow is.", Properties: []capabilities.Property{
			capabilities.Req("name", capabilities.String("A short kebab-case name.")),
			capabilities.Req("description", capabilities.String("What the workflow does, in one sentence.")),
			capabilities.Opt("whenToUse", capabilities.String("When this workflow is the right tool.")),
			capabilities.Opt("phases", capabilities.Array("The phases the script announces with phase().", capabilities.Object(
				capabilities.Req("title", capabilities.String("The phase title.")),
				capabilities.Opt("detail", capabilities.String("What happens in it.")),
				capabilities.Opt("model", capabilities.String("The model its agents use.")),
			))),
		}}),
		capabilities.Opt("args", &capabilities.Schema{Type: "object", Description: "JSON arguments the script reads as `args`."}),
	)
}

// PromptSection implements capabilities.Sectioner (tool:workflow, 115).
func (Tool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tool:workflow", Order: 115, Text: "For work that splits into many independent " +
		"subtasks, the `workflow` tool runs a JavaScript orchestration of child agents: fan out with parallel() or " +
		"pipeline(), ask for structured results with a schema, and return a JSON summary. Children start with none " +
		"of this conversation, so every agent() prompt must stand on its own."}
}

// PresentCall implements capabilities.CallPresenter: "workflow: <name>",
// the script as raw input.
func (Tool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a struct {
		Script string `json:"script"`
		Meta   struct {
			Name string `json:"name"`
		} `json:"meta"`
	}
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "workflow: " + a.Meta.Name, ToolKind: capabilities.ToolKindOther,
		RawInput: jsonx.MustMarshal(a.Script)}
}

// Run implements capabilities.Tool.
func (t Tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	sp := capabilities.HostOf(call.Session).Spawner
	if sp == nil {
		return capabilities.Result{}, errors.New(ErrNoAgent)
	}
	var a struct {
		Script string          `json:"script"`
		Meta   json.RawMessage `json:"meta"`
		Args   json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, err
	}
	if v := validateMeta(a.Meta); len(v) > 0 {
		return capabilities.Result{}, wfError(CodeMetaInvalid, "invalid meta: "+strings.Join(v, "; "))
	}
	var meta struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(a.Meta, &meta)
	cfg := t.Engine
	if t.Progress && call.Session != nil && call.Session.Log() != nil {
		cfg.OnAgent = progress(call, cfg.OnAgent)
	}
	out, err := cfg.Run(ctx, t.Programs, sp, a.Script, a.Args)
	if err != nil {
		return capabilities.Result{}, err
	}
	unit := "agents"
	if out.Agents == 1 {
		unit = "agent"
	}
	text := fmt.Sprintf("workflow %q completed (%d %s).\nReturn value:\n%s", meta.Name, out.Agents, unit, out.Value)
	return capabilities.TextResult(truncate(text)), nil
}

// truncate cuts text beyond maxResultChars UTF-16 units.
func truncate(text string) string {
	u := utf16.Encode([]rune(text))
	if len(u) <= maxResultChars {
		return text
	}
	return string(utf16.Decode(u[:maxResultChars])) + fmt.Sprintf("\n… [truncated: %d more characters]", len(u)-maxResultChars)
}

// validateMeta names every problem of meta (the fields the schema check
// does not cover: unknown keys, empty strings, phase entries).
func validateMeta(raw json.RawMessage) []string {
	var v []string
	keys, vals, ok := objectMembers(raw)
	if !ok {
		return []string{"meta must be an object"}
	}
	for i, k := range keys {
		val := vals[i]
		switch k {
		case "name", "description":
			if s, ok := stringOf(val); !ok || s == "" {
				v = append(v, fmt.Sprintf("meta.%s must be a non-empty string", k))
			}
		case "whenToUse":
			if _, ok := stringOf(val); !ok {
				v = append(v, "meta.whenToUse must be a string")
			}
		case "phases":
			var items []json.RawMessage
			if json.Unmarshal(val, &items) != nil || items == nil {
				v = append(v, "meta.phases must be an array")
				continue
			}
			for j, it := range items {
				pk, pv, ok := objectMembers(it)
				if !ok {
					v = append(v, fmt.Sprintf("meta.phases[%d] must be an object", j))
					continue
				}
				hasTitle := false
				for n, key := range pk {
					switch key {
					case "title":
						hasTitle = true
						if s, ok := stringOf(pv[n]); !ok || s == "" {
							v = append(v, fmt.Sprintf("meta.phases[%d].title must be a non-empty string", j))
						}
					case "detail", "model":
						if _, ok := stringOf(pv[n]); !ok {
							v = append(v, fmt.Sprintf("meta.phases[%d].%s must be a string", j, key))
						}
					default:
						v = append(v, fmt.Sprintf("meta.phases[%d].%s is not a recognized field", j, key))
					}
				}
				if !hasTitle {
					v = append(v, fmt.Sprintf("meta.phases[%d].title must be a non-empty string", j))
				}
			}
		default:
			v = append(v, fmt.Sprintf("meta.%s is not a recognized field (name/description/whenToUse/phases)", k))
		}
	}
	for _, req := range []string{"name", "description"} {
		found := false
		for _, k := range keys {
			found = found || k == req
		}
		if !found {
			v = append(v, fmt.Sprintf("meta.%s must be a non-empty string", req))
		}
	}
	return v
}

// stringOf decodes a JSON string.
func stringOf(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// objectMembers returns a JSON object's keys in order with their values.
func objectMembers(raw json.RawMessage) ([]string, []json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals, true
}

// progress returns an OnAgent that logs the run as the call's
// tool/progress: the phase, how many of the started agents are done (and
// failed), and their labels in call order. Counts, not per-agent states,
// so the card does not depend on which parallel child finishes first.
func progress(call *capabilities.Call, next func(AgentEvent)) func(AgentEvent) {
	log := call.Session.Log()
	turn, step := 0, 0
	events := log.Events()
	for i := len(events) - 1; i >= 0; i-- {
		var tc session.ToolCall
		if events[i].Type == session.TypeToolCall && events[i].Decode(&tc) == nil && tc.CallID == call.CallID {
			turn, step = tc.Turn, tc.Step
			break
		}
	}
	var mu sync.Mutex
	var labels []string
	var done, failed int
	phase := ""
	return func(ev AgentEvent) {
		if next != nil {
			next(ev)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !ev.Done:
			labels = append(labels, ev.Label)
			phase = ev.Phase
		case ev.Stop == "completed":
			done++
		default:
			done++
			failed++
		}
		var b strings.Builder
		if phase != "" {
			b.WriteString(phase + " — ")
		}
		unit := "agents"
		if len(labels) == 1 {
			unit = "agent"
		}
		fmt.Fprintf(&b, "%d of %d %s done", done, len(labels), unit)
		if failed > 0 {
			fmt.Fprintf(&b, ", %d failed", failed)
		}
		const shown = 12
		for i, l := range labels {
			if i == shown {
				fmt.Fprintf(&b, "\n… %d more", len(labels)-shown)
				break
			}
			b.WriteString("\n• " + l)
		}
		log.Append(session.TypeToolProgress, session.ToolProgress{Turn: turn, Step: step, CallID: call.CallID,
			Content: []session.Block{session.TextBlock(b.String())}})
	}
}
