package jsworker_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
)

// fakePrefix, as the start of the name the test binary is started by,
// makes it a misbehaving worker (the worker's environment is empty, so
// the mode rides its name): "silent" reads its
// run and answers only a cancel, "deaf" ignores cancels too, "overflow"
// dies the way a stack overflow does, "echo" answers every run at once,
// "asks" makes one call (a lone one, not in a batch) and ends with its
// answer, "badbatch" sends a batch holding a call without its payload.
const fakePrefix = "fake-worker-"

func TestMain(m *testing.M) {
	if mode, ok := strings.CutPrefix(filepath.Base(os.Args[0]), fakePrefix); ok {
		os.Exit(fake(mode))
	}
	os.Exit(workertest.Main(m))
}

func fake(mode string) int {
	conn := jsproto.NewConn(os.Stdin, os.Stdout)
	_ = conn.Send(jsproto.Message{Type: jsproto.TypeReady})
	for {
		m, err := conn.Receive()
		if err != nil {
			return 0
		}
		switch {
		case mode == "overflow" && m.Type == jsproto.TypeRun:
			fmt.Fprintln(os.Stderr, "runtime: goroutine stack exceeds 67108864-byte limit\nfatal error: stack overflow")
			return 2
		case mode == "echo" && m.Type == jsproto.TypeRun:
			_ = conn.Send(jsproto.Message{Type: jsproto.TypeDone, Done: &jsproto.Done{Text: fmt.Sprint(os.Getpid())}})
		case mode == "asks" && m.Type == jsproto.TypeRun:
			_ = conn.Send(jsproto.Message{Type: jsproto.TypeCall, Call: &jsproto.Call{ID: 1, Name: "slow"}})
		case mode == "badbatch" && m.Type == jsproto.TypeRun:
			_ = conn.Send(jsproto.Message{Type: jsproto.TypeBatch, Batch: []jsproto.Message{{Type: jsproto.TypeCall}}})
		case mode == "asks" && m.Type == jsproto.TypeReply:
			_ = conn.Send(jsproto.Message{Type: jsproto.TypeDone, Done: &jsproto.Done{Text: m.Reply.Text}})
		case mode == "silent" && m.Type == jsproto.TypeCancel:
			_ = conn.Send(jsproto.Message{Type: jsproto.TypeDone, Done: &jsproto.Done{Fail: jsproto.FailCancelled, Message: m.Cancel.Reason}})
		}
	}
}

// fakePool is a pool whose workers are the test binary in mode.
func fakePool(t *testing.T, mode string, grace time.Duration) *jsworker.Pool {
	exe, err := os.Executable()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), fakePrefix+mode)
	require.NoError(t, os.Symlink(exe, link))
	p := jsworker.NewPool(jsworker.Options{Path: link, Grace: grace})
	t.Cleanup(p.Close)
	return p
}

func none([]jsworker.Request) {}

func TestASilentWorkerIsKilledPastItsComputeLimit(t *testing.T) {
	p := fakePool(t, "silent", 100*time.Millisecond)
	start := time.Now()
	d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 200}, jsworker.Limits{}, none)
	require.NoError(t, err)
	assert.Equal(t, jsproto.FailTimeout, d.Fail)
	assert.Contains(t, d.Message, "computed for more than 200ms without yielding and did not stop")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestACancelledRunEndsWithTheCause(t *testing.T) {
	p := fakePool(t, "silent", 50*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	d, err := p.Run(ctx, jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 10000}, jsworker.Limits{}, none)
	require.NoError(t, err)
	assert.Equal(t, jsproto.Done{Fail: jsproto.FailCancelled, Message: context.DeadlineExceeded.Error()}, d)
}

func TestAWorkerWaitingOnTheAgentIsNotKilled(t *testing.T) {
	// The worker is silent while the agent works on its request, far past
	// its compute limit: that is waiting, not spinning.
	p := fakePool(t, "asks", 400*time.Millisecond)
	answer := func(delay time.Duration) jsworker.Handler {
		return func(batch []jsworker.Request) {
			go func() {
				time.Sleep(delay)
				batch[0].Answer(jsproto.Reply{Text: "late"})
			}()
		}
	}
	// A first run starts the worker (its start-up is not under test).
	d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 30000}, jsworker.Limits{}, answer(0))
	require.NoError(t, err)
	require.Equal(t, jsproto.Done{Text: "late"}, d)
	d, err = p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 100}, jsworker.Limits{}, answer(1500*time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, jsproto.Done{Text: "late"}, d)
}

func TestAMalformedBatchKillsTheWorker(t *testing.T) {
	p := fakePool(t, "badbatch", 0)
	d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 1000}, jsworker.Limits{},
		func([]jsworker.Request) { t.Error("a malformed batch reached the handler") })
	require.NoError(t, err)
	assert.Equal(t, jsproto.Done{Fail: jsworker.FailCrash, Message: `the program worker broke the protocol: the worker sent a malformed request ("call")`}, d)
}

func TestAWorkerDeafToCancelIsKilledAfterTheGrace(t *testing.T) {
	p := fakePool(t, "deaf", 100*time.Millisecond)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel(errors.New("the user pressed stop"))
	}()
	d, err := p.Run(ctx, jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 60000}, jsworker.Limits{}, none)
	require.NoError(t, err)
	assert.Equal(t, jsproto.Done{Fail: jsproto.FailCancelled, Message: "the user pressed stop"}, d)
}

func TestTheWallLimitStopsTheRun(t *testing.T) {
	p := fakePool(t, "deaf", 100*time.Millisecond)
	d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 60000}, jsworker.Limits{Wall: 200 * time.Millisecond}, none)
	require.NoError(t, err)
	assert.Equal(t, jsproto.FailWall, d.Fail)
}

func TestACrashedWorkerIsReportedAndReplaced(t *testing.T) {
	p := fakePool(t, "overflow", 0)
	for range 2 {
		d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 1000}, jsworker.Limits{}, none)
		require.NoError(t, err)
		assert.Equal(t, jsproto.Done{Fail: jsworker.FailCrash, Message: "the program's worker crashed: stack overflow (the program nests or recurses too deeply)"}, d)
	}
}

func TestAHealthyWorkerStaysWarm(t *testing.T) {
	p := fakePool(t, "echo", 0)
	var pids []string
	for range 3 {
		d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 1000}, jsworker.Limits{}, none)
		require.NoError(t, err)
		pids = append(pids, d.Text)
	}
	assert.Equal(t, pids[0], pids[1])
	assert.Equal(t, pids[0], pids[2], "one warm worker serves run after run")
}

func TestClassify(t *testing.T) {
	assert.Equal(t, jsworker.FailMemory, jsworker.Classify("runtime: out of memory: cannot allocate 1073741824-byte block\nfatal error: out of memory", nil, 256<<20).Fail)
	d := jsworker.Classify("panic: boom\n\ngoroutine 1", stringer("exit status 2"), 0)
	assert.Equal(t, jsproto.Done{Fail: jsworker.FailCrash, Message: "the program's worker crashed (exit status 2): panic: boom"}, d)
}

type stringer string

func (s stringer) String() string { return string(s) }

// TestRealWorkerAnswersACallAndRuns is the real worker end to end: a
// program's call reaches the handler and its answer the program.
func TestRealWorkerAnswersACallAndRuns(t *testing.T) {
	p := workertest.Pool(t, jsworker.Options{})
	var calls atomic.Int32
	d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, Tools: []string{"echo"}, ComputeMS: 1000, MaxDepth: 1000,
		Source: `const a = await tools.echo({text: "x"}); return a + "!"`}, jsworker.Limits{},
		func(batch []jsworker.Request) {
			for _, r := range batch {
				calls.Add(1)
				go r.Answer(jsproto.Reply{Text: strings.ToUpper(r.Call.Args)})
			}
		})
	require.NoError(t, err)
	assert.Equal(t, jsproto.Done{Text: `{"TEXT":"X"}!`, Calls: 1}, d)
	assert.EqualValues(t, 1, calls.Load())
}

// TestRealWorkerConvertsHTML is web_fetch's conversion in the worker: an
// article becomes markdown with its title; bytes that are not UTF-8
// arrive as they were sent.
func TestRealWorkerConvertsHTML(t *testing.T) {
	p := workertest.Pool(t, jsworker.Options{})
	u, _ := url.Parse("http://127.0.0.1/page")
	page := "<html><head><title>Gophers</title></head><body><nav><a href=\"/about\">About</a></nav><article><h1>Gophers</h1>" +
		strings.Repeat("<p>The gopher is a small burrowing rodent that lives in tunnels it digs itself, and eats roots.</p>", 5) +
		"<p>See <a href=\"/docs\">the docs</a> and <strong>many</strong> stickers.</p></article></body></html>"
	title, md, err := p.Markdown(context.Background(), []byte(page), u, false)
	require.NoError(t, err)
	assert.Equal(t, "Gophers", title)
	assert.Contains(t, md, "[the docs](http://127.0.0.1/docs)")
	assert.Contains(t, md, "**many**")
	assert.NotContains(t, md, "About", "the article only")
	_, raw, err := p.Markdown(context.Background(), []byte("<p>caf\xe9</p>"), u, true)
	require.NoError(t, err)
	assert.Equal(t, "caf\uFFFD", raw)
}

// TestAStretchsCallsArriveAsOneBatch is the real worker: the calls one
// synchronous stretch makes reach the handler together, in call order,
// even when the first is answered at once and the program computes for a
// while before its next call; the stretch after an await is a batch of
// its own.
func TestAStretchsCallsArriveAsOneBatch(t *testing.T) {
	p := workertest.Pool(t, jsworker.Options{})
	var batches [][]string
	d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, Tools: []string{"echo"}, ComputeMS: 10000, MaxDepth: 1000,
		Source: `const spin = (ms: number) => { const end = Date.now() + ms; while (Date.now() < end) {} };
const [a, b] = await Promise.all([tools.echo({i: 1}), (spin(300), tools.echo({i: 2}))]);
const c = await tools.echo({i: 3});
return a + b + c`}, jsworker.Limits{},
		func(batch []jsworker.Request) {
			var args []string
			for _, r := range batch {
				args = append(args, r.Call.Args)
				r.Answer(jsproto.Reply{Text: r.Call.Args}) // at once
			}
			batches = append(batches, args)
		})
	require.NoError(t, err)
	assert.Equal(t, jsproto.Done{Text: `{"i":1}{"i":2}{"i":3}`, Calls: 3}, d)
	assert.Equal(t, [][]string{{`{"i":1}`, `{"i":2}`}, {`{"i":3}`}}, batches)
}
