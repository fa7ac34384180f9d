package acp_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// hangingWarmer is a provider whose connection warm-up never ends on its
// own (an unreachable API); it is never asked for a model call.
type hangingWarmer struct {
	llm.Provider
	stopped chan struct{}
}

func (w hangingWarmer) Warm(ctx context.Context) {
	<-ctx.Done()
	close(w.stopped)
}

// TestServeEndStopsTheRuntime: the runtime a server was given lives as
// long as the connection: when the client's input ends, Serve stops the
// runtime's background work before it returns.
func TestServeEndStopsTheRuntime(t *testing.T) {
	w := hangingWarmer{stopped: make(chan struct{})}
	rt := agent.NewRuntime(agent.Config{Model: "m", Provider: w, Clock: acp.FakeClock(), NewID: func() string { return "s" }, Log: zerolog.Nop()})
	srv := acp.NewServer(acp.FromRuntime(rt), acp.Options{}, zerolog.Nop())
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(context.Background(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"), io.Discard)
	}()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its input ended")
	}
	select {
	case <-w.stopped:
	default:
		t.Fatal("Serve returned with the runtime's warm-up still running")
	}
}
