// Command dsh-acp-worker runs the model-written programs of dsh-acp
// (run_code programs and workflow scripts), and converts the HTML pages
// web_fetch reads, in a process of their own, so
// that a stack overflow, a memory bomb or a spin costs one tool result and
// never the agent. The agent starts it (found beside its own executable),
// confined by the session's sandbox backend, and speaks package jsproto
// over its stdin and stdout: the worker transforms and runs each program
// and sends every tool call and agent() spawn back as a request, the
// requests of each synchronous stretch together in one batch. It never
// touches the session, its log, the files or the network itself; on Linux
// it also takes those away from itself with Landlock before it reads the
// first program, and everywhere it caps its own memory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities/code/program"
	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/web/htmlmd"
	"github.com/dsh-acp/dsh-acp/capabilities/workflow/script"
)

func main() {
	mem := flag.Int64("mem", 256<<20, "memory cap in bytes (0: none)")
	stack := flag.Int("max-stack", 64<<20, "maximum goroutine stack in bytes")
	flag.Parse()
	debug.SetMaxStack(*stack)
	if *mem > 0 {
		// The collector works hard well before the cap; the cap itself is
		// the kernel's (or the Job Object's) and ends the process.
		debug.SetMemoryLimit(*mem * 3 / 4)
		if err := capMemory(*mem); err != nil {
			fmt.Fprintln(os.Stderr, "dsh-acp-worker: memory cap:", err)
			os.Exit(3)
		}
	}
	if err := confine(); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp-worker: confine:", err)
		os.Exit(3)
	}
	conn := jsproto.NewConn(os.Stdin, os.Stdout)
	if err := conn.Send(jsproto.Message{Type: jsproto.TypeReady}); err != nil {
		os.Exit(1)
	}
	if err := serve(conn); !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "dsh-acp-worker:", err)
		os.Exit(1)
	}
}

// worker is the serving state: the running program's cancel and its
// outstanding requests.
type worker struct {
	conn *jsproto.Conn

	mu      sync.Mutex
	cancel  context.CancelCauseFunc // the running program's; nil when idle
	replies map[int64]func(jsproto.Reply)

	held []jsproto.Message // requests not yet sent (the program's goroutine only)
}

// serve reads messages until the agent closes stdin.
func serve(conn *jsproto.Conn) error {
	w := &worker{conn: conn, replies: map[int64]func(jsproto.Reply){}}
	for {
		m, err := conn.Receive()
		if err != nil {
			w.stop(errors.New("the agent closed the worker's input"))
			return err
		}
		switch m.Type {
		case jsproto.TypeRun:
			if m.Run == nil {
				return errors.New("run message without a run")
			}
			if err := w.start(*m.Run); err != nil {
				return err
			}
		case jsproto.TypeCancel:
			cause := errors.New("cancelled")
			if m.Cancel != nil {
				cause = errors.New(m.Cancel.Reason)
				if m.Cancel.Wall {
					cause = program.ErrWall
				}
			}
			w.stop(cause)
		case jsproto.TypeReply:
			if m.Reply == nil {
				return errors.New("reply message without a reply")
			}
			w.mu.Lock()
			f := w.replies[m.Reply.ID]
			delete(w.replies, m.Reply.ID)
			w.mu.Unlock()
			if f != nil {
				f(*m.Reply)
			}
		default:
			return fmt.Errorf("unexpected message %q", m.Type)
		}
	}
}

// stop cancels the running program, if any.
func (w *worker) stop(cause error) {
	w.mu.Lock()
	c := w.cancel
	w.mu.Unlock()
	if c != nil {
		c(cause)
	}
}

// start runs r on a goroutine of its own; one program at a time.
func (w *worker) start(r jsproto.Run) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return errors.New("a run while another is running")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	w.cancel = cancel
	w.replies = map[int64]func(jsproto.Reply){}
	go func() {
		d, escaped := escape(r)
		if !escaped {
			switch r.Kind {
			case jsproto.KindCode:
				d = program.Run(ctx, r, w)
			case jsproto.KindWorkflow:
				d = script.Run(ctx, r, w)
			case jsproto.KindHTML:
				d = convertHTML(r)
			default:
				d = jsproto.Done{Fail: jsproto.FailException, Message: fmt.Sprintf("unknown program kind %q", r.Kind)}
			}
		}
		w.Flush() // nothing is held past a program's end
		w.mu.Lock()
		w.cancel = nil
		w.replies = map[int64]func(jsproto.Reply){}
		w.mu.Unlock()
		cancel(nil)
		if err := w.conn.Send(jsproto.Message{Type: jsproto.TypeDone, Done: &d}); err != nil {
			os.Exit(1)
		}
	}()
	return nil
}

// convertHTML converts a fetched page (web_fetch's markdown).
func convertHTML(r jsproto.Run) jsproto.Done {
	u, err := url.Parse(r.URL)
	if err != nil {
		return jsproto.Done{Fail: jsproto.FailException, Message: err.Error()}
	}
	title, md := htmlmd.Convert(r.Body, u, r.Raw)
	return jsproto.Done{Title: title, Text: md}
}

// request registers reply under id and holds m for the next Flush.
func (w *worker) request(id int64, m jsproto.Message, reply func(jsproto.Reply)) {
	w.mu.Lock()
	w.replies[id] = reply
	w.mu.Unlock()
	w.held = append(w.held, m)
}

// Flush implements program.Host and script.Host: the held requests go
// out as one batch, in call order.
func (w *worker) Flush() {
	if len(w.held) == 0 {
		return
	}
	err := w.conn.Send(jsproto.Message{Type: jsproto.TypeBatch, Batch: w.held})
	clear(w.held)
	w.held = w.held[:0] // Send encoded it: the array serves the next batch
	if err != nil {
		os.Exit(1) // the agent is gone
	}
}

// Call implements program.Host.
func (w *worker) Call(c jsproto.Call, reply func(jsproto.Reply)) {
	w.request(c.ID, jsproto.Message{Type: jsproto.TypeCall, Call: &c}, reply)
}

// Spawn implements script.Host.
func (w *worker) Spawn(s jsproto.Spawn, reply func(jsproto.Reply)) {
	w.request(s.ID, jsproto.Message{Type: jsproto.TypeSpawn, Spawn: &s}, reply)
}
