package hooks

import (
	"encoding/json"
	"strings"
)

// Raw decisions a hook's output can carry.
const (
	decisionBlock   = "block"
	decisionApprove = "approve"
	decisionAllow   = "allow"
	decisionDeny    = "deny"
	decisionAsk     = "ask"
)

// Output is one hook run decoded (hooks contract § 5).
type Output struct {
	ExitCode *int
	Stdout   string // trimmed
	Stderr   string // trimmed
	// Decision is the raw decision ("block", "approve", "allow", "deny",
	// "ask") or "".
	Decision string
	Reason   string
	// Continue is the structured continue flag (nil when absent).
	Continue          *bool
	StopReason        string
	SystemMessage     string
	AdditionalContext string
	// UpdatedInput is set when the hook asked to rewrite the tool input
	// (not honored).
	UpdatedInput bool
}

// Decode interprets a finished run for point in dialect d.
func Decode(d Dialect, point string, r Run) Output {
	o := Output{ExitCode: r.ExitCode, Stdout: strings.TrimSpace(r.Stdout), Stderr: strings.TrimSpace(r.Stderr)}
	if r.ExitCode == nil {
		return o
	}
	switch *r.ExitCode {
	case 2:
		o.Decision = decisionBlock
		o.Reason = o.Stderr
	case 0:
		if strings.HasPrefix(o.Stdout, "{") {
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(o.Stdout), &obj) == nil && obj != nil {
				o.structured(point, obj)
			}
		}
		if d == Codex && (point == SessionStart || point == UserPromptSubmit) &&
			o.AdditionalContext == "" && o.Stdout != "" && !strings.HasPrefix(o.Stdout, "{") {
			o.AdditionalContext = o.Stdout
		}
	}
	return o
}

// structured folds a JSON object printed on stdout into o.
func (o *Output) structured(point string, obj map[string]json.RawMessage) {
	if b := jsonBool(obj["continue"]); b != nil {
		o.Continue = b
	}
	if s := jsonString(obj["stopReason"]); s != nil {
		o.StopReason = *s
	}
	if s := jsonString(obj["systemMessage"]); s != nil {
		o.SystemMessage = *s
	}
	if s := jsonString(obj["decision"]); s != nil && (*s == decisionApprove || *s == decisionBlock) {
		o.Decision = *s
	}
	if s := jsonString(obj["reason"]); s != nil {
		o.Reason = *s
	}
	raw, ok := obj["hookSpecificOutput"]
	if !ok || !isObject(raw) {
		return
	}
	var hso map[string]json.RawMessage
	if json.Unmarshal(raw, &hso) != nil {
		return
	}
	if name := jsonString(hso["hookEventName"]); name == nil || *name != point {
		return
	}
	if s := jsonString(hso["permissionDecision"]); s != nil && (*s == decisionAllow || *s == decisionDeny || *s == decisionAsk) {
		o.Decision = *s
	}
	if s := jsonString(hso["permissionDecisionReason"]); s != nil {
		o.Reason = *s
	}
	if s := jsonString(hso["additionalContext"]); s != nil {
		o.AdditionalContext = *s
	}
	if u, ok := hso["updatedInput"]; ok && isObject(u) {
		o.UpdatedInput = true
	}
}

// Recorded is the decision hook/result records: the output's decision,
// else "stop" for continue:false, else "pass".
func (o Output) Recorded() string {
	switch {
	case o.Decision != "":
		return o.Decision
	case o.Continue != nil && !*o.Continue:
		return "stop"
	}
	return "pass"
}

// Merged decisions of one point.
const (
	MergedNone  = "none"
	MergedAllow = "allow"
	MergedAsk   = "ask"
	MergedDeny  = "deny"
)

// Merged is the outcome of every hook that ran at one point.
type Merged struct {
	// Decision is MergedDeny, MergedAsk, MergedAllow or MergedNone.
	Decision string
	// Reason joins the non-empty reasons of the outputs at the winning
	// rank (deny and ask only) with a blank line.
	Reason string
	// Contexts are the non-empty additional contexts, in hook order.
	Contexts []string
	// Stop, StopReason and SystemMessages are collected; they have no
	// effect.
	Stop           bool
	StopReason     string
	SystemMessages []string
}

func rank(decision string) int {
	switch decision {
	case decisionDeny, decisionBlock:
		return 3
	case decisionAsk:
		return 2
	case decisionApprove, decisionAllow:
		return 1
	}
	return 0
}

// Merge folds the outputs of one point, most restrictive first
// (hooks contract § 5).
func Merge(outs []Output) Merged {
	top := 0
	reasons := map[int][]string{}
	m := Merged{}
	for _, o := range outs {
		r := rank(o.Decision)
		top = max(top, r)
		if (r == 3 || r == 2) && o.Reason != "" {
			reasons[r] = append(reasons[r], o.Reason)
		}
		if o.Continue != nil && !*o.Continue && !m.Stop {
			m.Stop, m.StopReason = true, o.StopReason
		}
		if o.AdditionalContext != "" {
			m.Contexts = append(m.Contexts, o.AdditionalContext)
		}
		if o.SystemMessage != "" {
			m.SystemMessages = append(m.SystemMessages, o.SystemMessage)
		}
	}
	m.Decision = [...]string{MergedNone, MergedAllow, MergedAsk, MergedDeny}[top]
	m.Reason = strings.Join(reasons[top], "\n\n")
	return m
}
