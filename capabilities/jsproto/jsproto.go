// Package jsproto is the protocol between the agent and its program worker
// (cmd/dsh-acp-worker), the process that runs model-written programs
// (run_code and workflow scripts) so that a crash, a memory bomb or a spin
// costs one tool result, never the agent.
//
// The two speak newline-delimited JSON over the worker's stdin and stdout,
// one [Message] a line. The agent starts a program with a [TypeRun]; every
// tool call and agent() spawn the program makes comes back as a [TypeCall]
// or [TypeSpawn] with an id the agent answers with a [TypeReply]; the
// program ends with a [TypeDone]. The agent may send a [TypeCancel] at any
// time.
//
// Requests travel in batches: the worker holds the requests of one
// synchronous stretch of the program (its first run up to its first
// await, or one resumption after an await, its microtasks included) and
// sends them at the stretch's end as one [TypeBatch], in the order the
// program made them. The agent takes in a whole batch
// before it starts any request of it, so every agent() of a stretch is
// registered (numbered, shown) before any child runs, and a stretch's tool
// calls queue in call order behind each other, however fast the first one
// would finish: the order the agent sees does not depend on timing, as it
// did not when programs ran inside the agent. A worker always flushes its
// held requests before its Done; a lone TypeCall or TypeSpawn is taken as
// a batch of one. A worker runs one program at a time and never touches the session,
// its log, the files or the network: everything with an effect is a
// request back to the agent, dispatched there through the session's whole
// pipeline.
package jsproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Type is a message's kind.
type Type string

// The message types.
const (
	// TypeRun (agent → worker) starts a program: [Run].
	TypeRun Type = "run"
	// TypeCancel (agent → worker) stops the running program: [Cancel].
	TypeCancel Type = "cancel"
	// TypeReply (agent → worker) answers a call or spawn: [Reply].
	TypeReply Type = "reply"
	// TypeCall (worker → agent) is a tools.<name>(args) call: [Call].
	TypeCall Type = "call"
	// TypeSpawn (worker → agent) is a workflow agent() call: [Spawn].
	TypeSpawn Type = "spawn"
	// TypeBatch (worker → agent) carries the requests (TypeCall and
	// TypeSpawn messages) of one synchronous stretch, in call order.
	TypeBatch Type = "batch"
	// TypeDone (worker → agent) ends the program: [Done].
	TypeDone Type = "done"
	// TypeReady (worker → agent) is the worker's first line: it started,
	// capped and confined itself, and reads programs now.
	TypeReady Type = "ready"
)

// Kind is the language of a program.
type Kind string

// The program kinds.
const (
	// KindCode is a run_code program: TypeScript, the body of an async
	// function of (tools, console, process).
	KindCode Kind = "code"
	// KindWorkflow is a workflow script: JavaScript, the body of an async
	// function with agent, parallel, pipeline, phase, log and args.
	KindWorkflow Kind = "workflow"
	// KindHTML is a fetched HTML page to convert to markdown (package
	// htmlmd): hostile HTML fails in the worker too.
	KindHTML Kind = "html"
)

// Message is one line of the protocol; Type says which field is set.
type Message struct {
	Type   Type    `json:"t"`
	Run    *Run    `json:"run,omitempty"`
	Cancel *Cancel `json:"cancel,omitempty"`
	Reply  *Reply  `json:"reply,omitempty"`
	Call   *Call   `json:"call,omitempty"`
	Spawn  *Spawn  `json:"spawn,omitempty"`
	Done   *Done   `json:"done,omitempty"`
	// Batch is a TypeBatch's requests; none of them is a batch.
	Batch []Message `json:"batch,omitempty"`
}

// Run starts a program.
type Run struct {
	Kind Kind `json:"kind"`
	// Source is the program text.
	Source string `json:"source"`
	// Tools are the names tools.<name> may call (code).
	Tools []string `json:"tools,omitempty"`
	// Args is the workflow's args (JSON; empty: undefined).
	Args json.RawMessage `json:"args,omitempty"`
	// Body is an HTML page's bytes, URL its address and Raw asks for the
	// whole page, not only its article (html).
	Body []byte `json:"body,omitempty"`
	URL  string `json:"url,omitempty"`
	Raw  bool   `json:"raw,omitempty"`
	// ComputeMS bounds each synchronous stretch of the program, the first
	// and every one after an await, in milliseconds.
	ComputeMS int64 `json:"computeMs"`
	// MaxDepth bounds the bracket nesting of the source (and so the
	// recursion of parse and transform).
	MaxDepth int `json:"maxDepth"`
	// MaxTotalAgents and MaxItemsPerCall are the workflow's caps.
	MaxTotalAgents  int `json:"maxTotalAgents,omitempty"`
	MaxItemsPerCall int `json:"maxItemsPerCall,omitempty"`
}

// Cancel stops the running program.
type Cancel struct {
	// Reason is why (the cancellation's cause), shown in the result.
	Reason string `json:"reason"`
	// Wall is set when the run's wall-clock limit ended it.
	Wall bool `json:"wall,omitempty"`
}

// Call is a tools.<name>(args) call of a code program.
type Call struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Args is the arguments' compact JSON text.
	Args string `json:"args"`
}

// Spawn is an agent(prompt, opts) call of a workflow.
type Spawn struct {
	ID     int64  `json:"id"`
	Prompt string `json:"prompt"`
	Model  string `json:"model,omitempty"`
	// Schema is the structured-output schema (already checked against
	// the supported subset; empty: a text run).
	Schema json.RawMessage `json:"schema,omitempty"`
	Label  string          `json:"label"`
	Phase  string          `json:"phase,omitempty"`
}

// Reply answers a Call or a Spawn.
type Reply struct {
	ID int64 `json:"id"`
	// Text is a call's result text or a child's final answer.
	Text string `json:"text,omitempty"`
	// IsError marks a failed call.
	IsError bool `json:"isError,omitempty"`
	// Completed is set for a child that completed its run.
	Completed bool `json:"completed,omitempty"`
	// Value is a structured child's value.
	Value json.RawMessage `json:"value,omitempty"`
	// Err is set when the child could not be started.
	Err string `json:"err,omitempty"`
}

// Failure kinds of a Done.
const (
	// FailException is a program that threw or did not parse.
	FailException = "exception"
	// FailTimeout is a program stopped by its compute limit.
	FailTimeout = "timeout"
	// FailCancelled is a program stopped by a Cancel.
	FailCancelled = "cancelled"
	// FailWall is a program stopped by its wall-clock limit.
	FailWall = "wall"
)

// Log is one captured output entry of a code program.
type Log struct {
	Source string `json:"source"`
	Level  string `json:"level,omitempty"`
	Text   string `json:"text"`
}

// Done ends a program.
type Done struct {
	// Fail is the failure kind (empty: success).
	Fail string `json:"fail,omitempty"`
	// Code is a workflow failure's WorkflowError code.
	Code string `json:"code,omitempty"`
	// Message is the failure's text.
	Message string `json:"message,omitempty"`
	// Text is a code program's result text; Value a workflow's returned
	// value as JSON.stringify(v, null, 2).
	Text  string `json:"text,omitempty"`
	Value string `json:"value,omitempty"`
	// Title is an HTML page's title.
	Title string `json:"title,omitempty"`
	// Logs are a code program's captured output.
	Logs []Log `json:"logs,omitempty"`
	// Calls counts a code program's dispatches; Agents a workflow's.
	Calls  int `json:"calls,omitempty"`
	Agents int `json:"agents,omitempty"`
}

// DefaultMaxDepth is the usual Run.MaxDepth. Parsers and transforms
// recurse once per nesting level or more; a program nested deeper (deeper
// than any real program) is refused before either sees it.
const DefaultMaxDepth = 1000

// MaxLine bounds one message line (a program's source or a tool result
// is far smaller; a longer line is a protocol error).
const MaxLine = 64 << 20

// Conn reads and writes messages on a pair of streams. Send is safe for
// concurrent use; Receive must be called from one goroutine.
type Conn struct {
	r  *bufio.Reader
	mu sync.Mutex
	w  *bufio.Writer
}

// NewConn returns a Conn reading r and writing w.
func NewConn(r io.Reader, w io.Writer) *Conn {
	return &Conn{r: bufio.NewReaderSize(r, 64<<10), w: bufio.NewWriterSize(w, 64<<10)}
}

// Send writes m as one line and flushes it.
func (c *Conn) Send(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("jsproto: encode %s: %w", m.Type, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return c.w.Flush()
}

// ErrLineTooLong is Receive's error for a line over MaxLine.
var ErrLineTooLong = errors.New("jsproto: message line too long")

// Receive reads the next message; io.EOF at the end of the stream.
func (c *Conn) Receive() (Message, error) {
	var line []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return Message{}, ErrLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return Message{}, io.ErrUnexpectedEOF
			}
			return Message{}, err
		}
		break
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("jsproto: decode: %w", err)
	}
	return m, nil
}

// The WorkflowError codes a worker reports in Done.Code.
const (
	CodeScriptParse  = "SCRIPT_PARSE"
	CodeUnserialized = "RESULT_UNSERIALIZABLE"
	CodeRunFailed    = "RUN_FAILED"
)
