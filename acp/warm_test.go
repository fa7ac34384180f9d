package acp_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// answerWatch is the server's stdout: it notes when the first answer
// line has been written.
type answerWatch struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	answered bool
}

func (w *answerWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.Contains(w.buf.Bytes(), []byte("\n")) {
		w.answered = true
	}
	return len(p), nil
}

func (w *answerWatch) done() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answered
}

// orderWarmer is a provider whose warm-up records whether the client had
// its initialize answer when the warm-up began.
type orderWarmer struct {
	llm.Provider
	out   *answerWatch
	began chan bool // whether the answer was out, once per warm-up
}

func (w orderWarmer) Warm(context.Context) { w.began <- w.out.done() }

// TestStartUpWorkFollowsTheInitializeAnswer: the runtime's warm-up and
// the process's AfterInitialize work start only once the initialize
// answer is written, so that they do not compete with it, and only once
// however many times the client initializes.
func TestStartUpWorkFollowsTheInitializeAnswer(t *testing.T) {
	out := &answerWatch{}
	w := orderWarmer{out: out, began: make(chan bool, 4)}
	rt := agent.NewRuntime(agent.Config{Model: "m", Provider: w, Clock: acp.FakeClock(), NewID: func() string { return "s" }, Log: zerolog.Nop()})
	after := make(chan bool, 4)
	srv := acp.NewServer(acp.FromRuntime(rt), acp.Options{AfterInitialize: func() { after <- out.done() }}, zerolog.Nop())
	in, feed := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), in, out) }()

	select {
	case <-w.began:
		t.Fatal("the warm-up began before initialize")
	case <-after:
		t.Fatal("AfterInitialize ran before initialize")
	case <-time.After(50 * time.Millisecond):
	}
	line := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"
	_, err := io.WriteString(feed, strings.Repeat(line, 2))
	require.NoError(t, err)
	for name, ch := range map[string]chan bool{"the warm-up": w.began, "AfterInitialize": after} {
		select {
		case answered := <-ch:
			require.True(t, answered, "%s began before the initialize answer was written", name)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never began", name)
		}
	}
	require.NoError(t, feed.Close())
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its input ended")
	}
	require.Empty(t, w.began, "the warm-up began twice")
	require.Empty(t, after, "AfterInitialize ran twice")
	require.Equal(t, 2, strings.Count(out.buf.String(), "\n"), "both initializes are answered")
}
