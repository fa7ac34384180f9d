package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/capabilities/structured"
	"github.com/dsh-acp/dsh-acp/capabilities/subagent"
)

// Engine limits (subagents-workflows § 4).
const (
	// DefaultMaxTotalAgents is the per-run agent cap, a runaway-loop backstop.
	DefaultMaxTotalAgents = 1000
	// DefaultMaxItemsPerCall caps the arrays given to parallel and pipeline.
	DefaultMaxItemsPerCall = 4096
	// DefaultSyncLimit bounds the script's initial synchronous slice.
	DefaultSyncLimit = 5000 * time.Millisecond
	// DefaultGrace bounds how long a finished or cancelled run waits for
	// its children to wind down.
	DefaultGrace = 5 * time.Second
)

// Config sets the engine's limits; zero fields take the defaults.
type Config struct {
	// Concurrency is how many children run at once (default
	// min(16, max(1, CPU cores − 2))).
	Concurrency int
	// MaxTotalAgents caps the agents one run starts.
	MaxTotalAgents int
	// MaxItemsPerCall caps the items of one parallel or pipeline call.
	MaxItemsPerCall int
	// SyncLimit bounds each synchronous slice of the script: the first,
	// and every one after an await.
	SyncLimit time.Duration
	// Grace bounds the wait for children after the run settles.
	Grace time.Duration
	// StructuredNudges is how many times a structured child that finishes
	// without a capture is told to call structured_output (0: upstream).
	StructuredNudges int
	// OnAgent, when set, is told about each child when agent() starts it
	// (on the run's goroutine, in call order) and when it ends (on the
	// child's goroutine): progress, like upstream's bus-only
	// workflow/agent-* events.
	OnAgent func(AgentEvent)
}

// AgentEvent is one child's progress.
type AgentEvent struct {
	// Index numbers the run's agents from 1.
	Index int
	// Label is the agent's label (default: the prompt's first line, cut).
	Label string
	// Phase is the phase it runs in.
	Phase string
	// Done is set when it ended, with its stop reason.
	Done bool
	Stop string
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = min(16, max(1, runtime.NumCPU()-2))
	}
	if c.MaxTotalAgents <= 0 {
		c.MaxTotalAgents = DefaultMaxTotalAgents
	}
	if c.MaxItemsPerCall <= 0 {
		c.MaxItemsPerCall = DefaultMaxItemsPerCall
	}
	if c.SyncLimit <= 0 {
		c.SyncLimit = DefaultSyncLimit
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	return c
}

// Error codes of WorkflowError.
const (
	CodeMetaInvalid  = "META_INVALID"
	CodeScriptParse  = jsproto.CodeScriptParse
	CodeUnserialized = jsproto.CodeUnserialized
	CodeRunFailed    = jsproto.CodeRunFailed
	CodeCancelled    = "CANCELLED"
)

// wfError is a WorkflowError with a code.
func wfError(code, msg string) error {
	return &capabilities.CodedError{Name: "WorkflowError", Code: code, Message: msg}
}

// Outcome is a completed run.
type Outcome struct {
	// Value is JSON.stringify(value, null, 2) of the returned value.
	Value string
	// Agents is how many agents the run started.
	Agents int
}

// Run executes script as the body of an async function in the program
// worker (package script is its engine), with children started through
// sp: each agent() call comes back here as a request. args (nil:
// undefined) is the script's args.
func (c Config) Run(ctx context.Context, programs *jsworker.Pool, sp capabilities.Spawner, script string, args json.RawMessage) (Outcome, error) {
	c = c.withDefaults()
	if programs == nil {
		return Outcome{}, errors.New("workflow: no program worker is configured")
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	k := &kids{cfg: c, sp: sp, ctx: runCtx, sem: make(chan struct{}, c.Concurrency)}
	defer func() {
		cancel(errors.New("workflow run ended"))
		k.wait()
	}()
	d, err := programs.Run(ctx, jsproto.Run{Kind: jsproto.KindWorkflow, Source: script, Args: args,
		ComputeMS: c.SyncLimit.Milliseconds(), MaxDepth: jsproto.DefaultMaxDepth,
		MaxTotalAgents: c.MaxTotalAgents, MaxItemsPerCall: c.MaxItemsPerCall}, jsworker.Limits{}, k.request)
	if err != nil {
		return Outcome{}, fmt.Errorf("workflow engine: %w", err)
	}
	switch {
	case d.Fail == "":
		return Outcome{Value: d.Value, Agents: d.Agents}, nil
	case ctx.Err() != nil:
		return Outcome{}, cancelled(ctx)
	case d.Fail == jsproto.FailCancelled:
		return Outcome{}, wfError(CodeCancelled, "workflow run was cancelled (workflow run cancelled: "+d.Message+")")
	case d.Code != "":
		return Outcome{}, wfError(d.Code, d.Message)
	case d.Fail == jsproto.FailException:
		return Outcome{}, errors.New(d.Message)
	}
	// The worker's limits and crashes: the compute watchdog, the memory
	// cap, a stack overflow.
	return Outcome{}, wfError(CodeRunFailed, "workflow run failed: "+d.Message)
}

// cancelled is the cancelled run's error.
func cancelled(ctx context.Context) error {
	return wfError(CodeCancelled, "workflow run was cancelled (workflow run cancelled: "+context.Cause(ctx).Error()+")")
}

// kids are the children one run started.
type kids struct {
	cfg Config
	sp  capabilities.Spawner
	ctx context.Context
	sem chan struct{}
	wg  sync.WaitGroup

	turn chan struct{} // closed once the latest started child took its slot (reader goroutine only)
}

// wait waits (up to the grace) for started children to end.
func (k *kids) wait() {
	done := make(chan struct{})
	go func() {
		k.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(k.cfg.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// request handles a batch of agent() spawns of the worker (on the pool's
// reader goroutine): every child of the batch is numbered and announced
// (OnAgent) in call order before any starts, as when one synchronous
// stretch of the script registered them all; then each starts on its own
// goroutine, taking a slot (at most Concurrency at a time) in call order,
// so which child runs first does not depend on the scheduler either.
func (k *kids) request(batch []jsworker.Request) {
	type child struct {
		req    subagent.Request
		ev     AgentEvent
		answer func(jsproto.Reply)
	}
	children := make([]child, 0, len(batch))
	for _, r := range batch {
		if r.Type != jsproto.TypeSpawn || r.Spawn == nil {
			r.Answer(jsproto.Reply{Err: "a workflow script can only start agents"})
			continue
		}
		s := *r.Spawn
		req := subagent.Request{Prompt: s.Prompt, Model: s.Model}
		if len(s.Schema) > 0 {
			sch, err := structured.Parse(s.Schema)
			if err != nil {
				r.Answer(jsproto.Reply{Err: err.Error()})
				continue
			}
			req.Schema, req.Nudges = sch, k.cfg.StructuredNudges
		}
		ev := AgentEvent{Index: int(s.ID), Label: s.Label, Phase: s.Phase}
		if k.cfg.OnAgent != nil {
			k.cfg.OnAgent(ev)
		}
		children = append(children, child{req, ev, r.Answer})
	}
	for _, c := range children {
		k.start(c.req, c.ev, c.answer)
	}
}

// start runs one child on its own goroutine once the children started
// before it took their slots.
func (k *kids) start(req subagent.Request, ev AgentEvent, answer func(jsproto.Reply)) {
	prev, mine := k.turn, make(chan struct{})
	k.turn = mine
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		if prev != nil {
			<-prev // never blocks past a cancel: every turn is passed on
		}
		select {
		case k.sem <- struct{}{}:
			close(mine)
		case <-k.ctx.Done():
			close(mine)
			answer(jsproto.Reply{})
			return
		}
		out, err := subagent.Run(k.ctx, k.sp, req)
		// Told done before the slot is given up: the child waiting for
		// it cannot end, and be told so, before this one.
		if k.cfg.OnAgent != nil {
			ev.Done, ev.Stop = true, out.Stop
			k.cfg.OnAgent(ev)
		}
		<-k.sem
		if err != nil {
			answer(jsproto.Reply{Err: err.Error()})
			return
		}
		answer(jsproto.Reply{Completed: out.Stop == subagent.StopCompleted, Text: out.Text, Value: out.Value})
	}()
}
