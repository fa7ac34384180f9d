package llmtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// drain collects one call's stream.
func drain(ctx context.Context, m *Model, req *llm.Request) ([]llm.Chunk, error) {
	var out []llm.Chunk
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func TestScriptStreamsEachStepOnceThenFails(t *testing.T) {
	t.Parallel()
	m := Script(Answer("one"), Calls("c", Tool{"read", `{"file_path":"a"}`}, Tool{"grep", `{}`}))
	r1, r2, r3 := &llm.Request{SessionID: "a"}, &llm.Request{SessionID: "b"}, &llm.Request{SessionID: "a"}

	got, err := drain(t.Context(), m, r1)
	require.NoError(t, err)
	assert.Equal(t, append(TextBlock(0, "one"), Finish(llm.FinishStop)), got)

	got, err = drain(t.Context(), m, r2)
	require.NoError(t, err)
	require.Len(t, got, 7)
	assert.Equal(t, "c1", got[4].ID)
	assert.Equal(t, "grep", *got[4].Name)
	assert.Equal(t, llm.FinishToolCalls, got[6].Reason.Kind)

	_, err = drain(t.Context(), m, r3)
	assert.ErrorIs(t, err, ErrExhausted)
	assert.Equal(t, 3, m.Calls())
	assert.Equal(t, []*llm.Request{r1, r2, r3}, m.Requests())
	assert.Equal(t, []*llm.Request{r1, r3}, m.RequestsFor("a"))
}

func TestHoldEndsOnCancel(t *testing.T) {
	t.Parallel()
	for _, abort := range []bool{false, true} {
		m := Script(Step{Chunks: []llm.Chunk{Text(0, "partial")}, Hold: true, AbortAsFinish: abort})
		ctx, cancel := context.WithCancel(t.Context())
		var got []llm.Chunk
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			for c, e := range m.Stream(ctx, &llm.Request{}) {
				if e != nil {
					err = e
					return
				}
				got = append(got, c)
				if len(got) == 1 {
					cancel()
				}
			}
		}()
		<-done
		if abort {
			require.NoError(t, err)
			assert.Equal(t, []llm.Chunk{Text(0, "partial"), Finish(llm.FinishAborted)}, got)
		} else {
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, []llm.Chunk{Text(0, "partial")}, got)
		}
	}
}

func TestConsumerStopEndsTheStream(t *testing.T) {
	t.Parallel()
	produced := 0
	m := New(func(context.Context, Call) Step {
		return Step{Seq: func(yield func(llm.Chunk) bool) {
			for {
				produced++
				if !yield(Text(0, "x")) {
					return
				}
			}
		}}
	})
	n := 0
	for range m.Stream(t.Context(), &llm.Request{}) {
		n++
		if n == 3 {
			break
		}
	}
	assert.Equal(t, 3, produced, "no chunk is produced after the consumer stops")
}

func TestConcurrentCallsAreNumberedOnce(t *testing.T) {
	t.Parallel()
	m := New(func(_ context.Context, c Call) Step {
		if c.N%2 == 0 {
			return Step{Err: errors.New("even")}
		}
		return Answer("odd")
	}).Unrecorded()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs int
	for range 16 {
		wg.Go(func() {
			if _, err := drain(t.Context(), m, &llm.Request{}); err != nil {
				mu.Lock()
				errs++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 16, m.Calls())
	assert.Equal(t, 8, errs)
	assert.Empty(t, m.Requests(), "an unrecorded model keeps no requests")
	assert.True(t, slices.Equal([]string{}, ToolNames(&llm.Request{})))
}
