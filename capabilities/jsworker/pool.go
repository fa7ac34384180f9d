// Package jsworker is the agent's side of the program worker
// (cmd/dsh-acp-worker): a [Pool] of worker processes, started lazily and
// kept warm, that runs one model-written program at a time each and hands
// the program's requests (tool calls, agent() spawns) to the calling tool,
// which dispatches them through the session's pipeline, a batch (one
// synchronous stretch of the program) at a time.
//
// The limits hold from outside the program: the worker caps its own memory
// before it reads a program (RLIMIT_AS on Linux, a Job Object on Windows),
// interrupts every synchronous stretch past the compute limit, and the
// pool kills a worker that stays silent past that limit while it owes the
// agent an answer, or does not stop within a grace after a cancel or the
// wall-clock limit. A worker that dies (a stack overflow, the memory cap,
// a kill) ends its program with a Done whose Fail says which; the next
// program gets a fresh worker.
package jsworker

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// Defaults of a pool.
const (
	// DefaultMemory is each worker's memory cap.
	DefaultMemory = 256 << 20
	// DefaultIdle is how long an idle warm worker is kept.
	DefaultIdle = 2 * time.Minute
	// DefaultGrace is how long a worker has to stop after a cancel, or
	// past its compute limit, before it is killed.
	DefaultGrace = 2 * time.Second
	// maxIdle is how many idle workers are kept warm.
	maxIdle = 2
)

// Executable is the worker's file name beside the agent's executable.
const Executable = "dsh-acp-worker"

// EnvPath names the variable that overrides where the worker is found
// (tests set it to the worker they built).
const EnvPath = "DSH_ACP_WORKER"

// Failure kinds a pool adds to jsproto's.
const (
	// FailMemory is a worker that died of its memory cap.
	FailMemory = "memory"
	// FailCrash is a worker that died for any other reason.
	FailCrash = "crash"
)

// Confiner confines the worker's command (sandbox.Provider).
type Confiner interface {
	Confine(ctx context.Context, argv []string, p sandbox.Policy) (sandbox.Confined, error)
}

// Options configure a Pool.
type Options struct {
	// Path is the worker executable (empty: [Locate] with os.Getenv at
	// the first program).
	Path string
	// Memory caps each worker (zero: DefaultMemory; negative: none).
	Memory int64
	// Confiner starts workers under the host's sandbox backend,
	// read-only and without network (nil, or no usable backend: the
	// worker's own confinement only). On macOS it is not used: every
	// worker runs under Seatbelt with a profile of its own, stricter than
	// a session's.
	Confiner Confiner
	// Idle is how long an idle worker is kept warm (zero: DefaultIdle).
	Idle time.Duration
	// Grace bounds a worker's stop (zero: DefaultGrace).
	Grace time.Duration
}

// Pool runs programs in worker processes. It is safe for concurrent use;
// each program has a worker to itself.
type Pool struct {
	o Options

	mu     sync.Mutex
	idle   []*worker
	closed bool
}

// NewPool returns a pool; no worker starts before the first program.
func NewPool(o Options) *Pool {
	if o.Memory == 0 {
		o.Memory = DefaultMemory
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	return &Pool{o: o}
}

// Memory is each worker's memory cap in bytes (≤ 0: none).
func (p *Pool) Memory() int64 { return p.o.Memory }

// Locate finds the worker: $DSH_ACP_WORKER, else dsh-acp-worker beside the
// running executable.
func Locate(getenv func(string) string) (string, error) {
	if v := getenv(EnvPath); v != "" {
		return v, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the program worker: %w", err)
	}
	name := Executable
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	path := filepath.Join(filepath.Dir(exe), name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the program worker %s is not installed beside %s (make build puts both in bin/; %s=PATH overrides): %w",
			name, exe, EnvPath, err)
	}
	return path, nil
}

// Close stops the idle workers; programs running now finish, and their
// workers stop after them.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, w := range idle {
		w.close()
	}
}

// Request is one request of a program (a TypeCall or TypeSpawn message)
// with its answer, which must be called exactly once, from any goroutine.
type Request struct {
	jsproto.Message
	Answer func(jsproto.Reply)
}

// Handler receives a program's requests a batch at a time (one
// synchronous stretch of the program, in call order; see package jsproto)
// on the pool's reader goroutine: it must not block, and it should take in
// the whole batch (register, number, queue) before it starts any of it, so
// that what the session shows does not depend on how fast the first
// request ends.
type Handler func(batch []Request)

// Limits of one run, enforced by the pool.
type Limits struct {
	// Wall bounds the whole run (zero: none beyond ctx).
	Wall time.Duration
}

// Run runs r in a worker and returns how it ended. Requests go to h.
// Cancelling ctx stops the program (a Done with FailCancelled); the error
// is for a worker that could not be started.
func (p *Pool) Run(ctx context.Context, r jsproto.Run, lim Limits, h Handler) (jsproto.Done, error) {
	w, err := p.get(ctx)
	if err != nil {
		return jsproto.Done{}, err
	}
	d, healthy := w.run(ctx, r, lim, h, p.o.Grace)
	if healthy {
		p.put(w)
	} else {
		w.kill()
	}
	return d, nil
}

// get takes an idle worker or starts one.
func (p *Pool) get(ctx context.Context) (*worker, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if w.take() {
			p.mu.Unlock()
			return w, nil
		}
	}
	p.mu.Unlock()
	return p.start(ctx)
}

// put returns a healthy worker to the idle set (or stops it).
func (p *Pool) put(w *worker) {
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdle {
		p.mu.Unlock()
		w.close()
		return
	}
	// Parked before it is published: a get must find its idle timer.
	w.park(p.o.Idle, func() {
		p.mu.Lock()
		for i, x := range p.idle {
			if x == w {
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				break
			}
		}
		p.mu.Unlock()
	})
	p.idle = append(p.idle, w)
	p.mu.Unlock()
}

// start starts a worker process: under the worker's own Seatbelt profile
// on macOS, elsewhere under the session's backend when one is usable.
func (p *Pool) start(ctx context.Context) (*worker, error) {
	path := p.o.Path
	if path == "" {
		var err error
		if path, err = Locate(os.Getenv); err != nil {
			return nil, err
		}
	}
	mem := p.o.Memory
	if mem < 0 {
		mem = 0
	}
	argv := []string{path, "-mem", strconv.FormatInt(mem, 10)}
	var setup func(*exec.Cmd)
	if wrapped, ok := osConfine(argv); ok {
		argv = wrapped
	} else if p.o.Confiner != nil {
		// Read-only everywhere (no writable root, not even /tmp) and no
		// network; cwd "/" as nothing in the worker is relative.
		c, err := p.o.Confiner.Confine(ctx, argv, sandbox.Policy{Mode: sandbox.ReadOnly, NoNetwork: true})
		switch {
		case err == nil:
			argv, setup = c.Argv, c.Setup
		case sandbox.IsUnavailable(err):
			// No backend on this host: the worker's own confinement
			// (Landlock on Linux, the Job Object on Windows) remains.
		default:
			return nil, fmt.Errorf("confine the program worker: %w", err)
		}
	}
	return spawn(argv, setup)
}

// htmlCompute bounds one page's conversion.
const htmlCompute = 10 * time.Second

// Markdown converts a fetched HTML page in a worker (web.Markdown): its
// title and markdown, or an error when the worker could not convert it
// (the page then shows as text).
func (p *Pool) Markdown(ctx context.Context, body []byte, u *url.URL, raw bool) (title, md string, err error) {
	d, err := p.Run(ctx, jsproto.Run{Kind: jsproto.KindHTML, Body: body, URL: u.String(), Raw: raw,
		ComputeMS: htmlCompute.Milliseconds()}, Limits{}, func(batch []Request) {
		for _, r := range batch {
			r.Answer(jsproto.Reply{Err: "a page conversion makes no requests"})
		}
	})
	if err != nil {
		return "", "", err
	}
	if d.Fail != "" {
		return "", "", fmt.Errorf("convert the page: %s", d.Message)
	}
	return d.Title, d.Text, nil
}
