package capabilities

import "context"

// Dispatcher is implemented by a calling session that can run a tool call
// from inside another tool (run_code's tools.<name>(args)): through the
// session's whole pipeline — pre-execute gates, approval, the tool, the
// post-execute chain — without a tool/call or tool/result of its own. A
// tool finds it in its session's Host; agent.Session implements it.
type Dispatcher interface {
	Dispatch(ctx context.Context, parentCallID, callID, name, arguments string) Outcome
}
