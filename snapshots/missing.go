package snapshots

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/composition"
)

// missingCapabilities names what a scenario needs that this build lacks:
// tools its recorded model calls that the composition does not register,
// and features its recorded logs or client ops exercise.
func missingCapabilities(sc *Scenario) []string {
	comp, err := composition.Load(sc.Meta.Composition)
	if err != nil {
		return []string{"composition " + sc.Meta.Composition}
	}
	reg := comp.Registry(nil, composition.Deps{})
	need := map[string]bool{}
	feature := func(f string) {
		if !composition.Built(f) {
			need[f] = true
		}
	}
	files := append([]string{sc.File("session.jsonl")}, sc.ChildFiles()...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var ev struct {
				Type string `json:"type"`
				Data struct {
					Name string `json:"name"`
				} `json:"data"`
			}
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			switch {
			case ev.Type == "tool/call":
				if _, ok := reg.Lookup(ev.Data.Name); !ok {
					need["tool "+ev.Data.Name] = true
				}
			case strings.HasPrefix(ev.Type, "hook/"):
				feature(composition.FeatureHooks)
			case strings.HasPrefix(ev.Type, "approval/"):
				feature(composition.FeatureApproval)
			case ev.Type == "bash/sandbox-mode":
				feature(composition.FeatureSandbox)
			case ev.Type == "mode/set":
				feature(composition.FeatureModes)
			case ev.Type == "tool/code-dispatch":
				feature(composition.FeatureCodeMode)
			}
		}
	}
	if len(sc.ChildFiles()) > 0 {
		feature(composition.FeatureSubagents)
	}
	for _, st := range sc.Input.Steps {
		switch st.Op {
		case "setConfigOption", "setConfigOptionExpectError":
			feature(composition.FeatureSandbox)
		case "setMode", "setModeExpectError":
			feature(composition.FeatureModes)
		}
	}
	if _, err := os.Stat(sc.File("workspace/hooks.json")); err == nil {
		feature(composition.FeatureHooks)
	}
	if _, err := os.Stat(sc.File("workspace/codex-hooks.json")); err == nil {
		feature(composition.FeatureHooks)
	}
	if comp.Modes {
		feature(composition.FeatureModes)
	}
	if comp.Sandbox != "" {
		feature(composition.FeatureSandbox)
	}
	if comp.ToolMode == agent.ToolModeCode || comp.ToolMode == agent.ToolModeBoth {
		feature(composition.FeatureCodeMode)
	}
	out := make([]string, 0, len(need))
	for k := range need {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// explainMissing appends the missing capabilities to a failure message.
func explainMissing(sc *Scenario, msg string) string {
	m := missingCapabilities(sc)
	if len(m) == 0 {
		return msg
	}
	return fmt.Sprintf("%s\n(this scenario needs what this build does not have yet: %s)", msg, strings.Join(m, ", "))
}
