package agent

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// slowWarmer is a provider whose warm-up lasts until it is stopped (a
// dead network); it is never asked for a model call.
type slowWarmer struct {
	llm.Provider
	started, stopped chan struct{}
}

func (w slowWarmer) Warm(ctx context.Context) {
	close(w.started)
	<-ctx.Done()
	close(w.stopped)
}

// TestRuntimeCloseStopsItsGoroutines: the goroutines Warm starts (the
// provider's warm-up, the prewarm) end by Close, even a warm-up that
// would otherwise never return; none is left behind.
func TestRuntimeCloseStopsItsGoroutines(t *testing.T) {
	w := slowWarmer{started: make(chan struct{}), stopped: make(chan struct{})}
	rt := NewRuntime(Config{Model: "m", Provider: w, Clock: func() int64 { return 0 }, NewID: func() string { return "s" },
		Log: zerolog.Nop(), ReleaseIdle: time.Hour})
	rt.Warm()
	<-w.started
	// A goroutine running on another thread shows no stack: wait for it
	// to block in the warm-up.
	require.Eventually(t, func() bool { return len(runtimeGoroutines()) > 0 }, 10*time.Second, time.Millisecond,
		"the warm-up runs on a goroutine of the runtime")
	closed := make(chan struct{})
	go func() {
		rt.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: the warm-up was not stopped")
	}
	select {
	case <-w.stopped:
	default:
		t.Fatal("Close returned before the warm-up was stopped")
	}
	// A goroutine that has run its deferred Done may still be on its way
	// out: give it a moment, then none may remain.
	require.Eventually(t, func() bool { return len(runtimeGoroutines()) == 0 }, 10*time.Second, 5*time.Millisecond,
		"goroutines of Warm left after Close: %v", runtimeGoroutines())
	rt.Close() // a second Close does nothing
}

// TestWarmStartsTheBackgroundWorkOnce: NewRuntime starts nothing (the
// warm-up waits for the initialize answer, or the first session); Warm
// starts it once however often it is called, a first session warms a
// runtime nobody warmed, and Warm after Close starts nothing.
func TestWarmStartsTheBackgroundWorkOnce(t *testing.T) {
	var calls atomic.Int32
	w := countingWarmer{calls: &calls}
	rt := NewRuntime(Config{Model: "m", Provider: w, Clock: func() int64 { return 0 }, NewID: func() string { return "s" }, Log: zerolog.Nop()})
	time.Sleep(50 * time.Millisecond)
	require.Zero(t, calls.Load(), "NewRuntime started the warm-up")
	require.Empty(t, runtimeGoroutines(), "NewRuntime started background work")
	rt.Warm()
	rt.Warm()
	_, err := rt.NewSession(context.Background(), SessionOptions{Cwd: t.TempDir()})
	require.NoError(t, err)
	rt.Close()
	require.Equal(t, int32(1), calls.Load(), "the provider was warmed once")

	closed := NewRuntime(Config{Model: "m", Provider: w, Clock: func() int64 { return 0 }, NewID: func() string { return "s" }, Log: zerolog.Nop()})
	closed.Close()
	closed.Warm()
	require.Equal(t, int32(1), calls.Load(), "Warm after Close warmed the provider")

	lazy := NewRuntime(Config{Model: "m", Provider: w, Clock: func() int64 { return 0 }, NewID: func() string { return "s" }, Log: zerolog.Nop()})
	_, err = lazy.NewSession(context.Background(), SessionOptions{Cwd: t.TempDir()})
	require.NoError(t, err)
	lazy.Close()
	require.Equal(t, int32(2), calls.Load(), "the first session warms a runtime nobody warmed")
}

// countingWarmer is a provider that counts its warm-ups.
type countingWarmer struct {
	llm.Provider
	calls *atomic.Int32
}

func (w countingWarmer) Warm(context.Context) { w.calls.Add(1) }

// runtimeGoroutines returns the stacks of live goroutines Warm started
// (where Warm is inlined, its closures are named after the caller too).
func runtimeGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "(*Runtime).Warm.") || strings.Contains(g, "agent.(*Runtime).prewarm") {
			out = append(out, g)
		}
	}
	return out
}

// TestOnCloseRunsOnceAfterTheBackgroundWork: what the runtime's builder
// hands it to release (Config.OnClose) runs once, after the warm-up it
// could still be serving has stopped, however often Close is called.
func TestOnCloseRunsOnceAfterTheBackgroundWork(t *testing.T) {
	w := slowWarmer{started: make(chan struct{}), stopped: make(chan struct{})}
	var calls int
	warmStopped := false
	rt := NewRuntime(Config{Model: "m", Provider: w, Clock: func() int64 { return 0 }, NewID: func() string { return "s" },
		Log: zerolog.Nop(), OnClose: func() {
			calls++
			select {
			case <-w.stopped:
				warmStopped = true
			default:
			}
		}})
	rt.Warm()
	<-w.started
	require.Zero(t, calls, "nothing is released while the runtime runs")
	rt.Close()
	rt.Close()
	require.Equal(t, 1, calls)
	require.True(t, warmStopped, "OnClose ran after the background work had stopped")
}
