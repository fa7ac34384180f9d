package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// memStore is a Store and Reader kept in memory; fail makes the next
// Append fail.
type memStore struct {
	mu     sync.Mutex
	events []Event
	fail   bool
}

func (m *memStore) Append(_ context.Context, _ Header, events []Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		m.fail = false
		return errors.New("disk full")
	}
	for _, e := range events {
		if e.Seq != len(m.events) {
			return fmt.Errorf("seq %d after %d", e.Seq, len(m.events))
		}
		m.events = append(m.events, e)
	}
	return nil
}

func (m *memStore) ReadBack(_ context.Context, _ string, n int) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n > len(m.events) {
		return nil, errors.New("short")
	}
	return slices.Clone(m.events[:n]), nil
}

func (m *memStore) Load(context.Context, string) (Header, []Event, error) { return Header{}, nil, nil }
func (m *memStore) List(context.Context) ([]Header, error)                { return nil, nil }
func (m *memStore) Close() error                                          { return nil }

func chunk(l *Log) Event {
	return l.Append(TypeAssistantChunk, AssistantChunk{Turn: 1, Step: 1, Chunk: []byte(`{"type":"text-delta","index":0,"text":"x"}`)})
}

// A write that fails keeps the chunks it was to write: they reach the
// store with the next write and are read back in order.
func TestLogKeepsChunksAFailedWriteHeld(t *testing.T) {
	ctx := context.Background()
	st := &memStore{}
	l := NewLog(Header{ID: "s"}, func() int64 { return 1 }, st)
	l.Append(TypeTurnStart, TurnStart{Turn: 1})
	chunk(l)
	st.fail = true
	require.Error(t, l.Flush(ctx))
	chunk(l)
	all, err := l.All(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.NoError(t, l.Flush(ctx))
	require.Len(t, st.events, 3)
	require.Equal(t, 1, l.Len())
	all, err = l.All(ctx)
	require.NoError(t, err)
	for i, e := range all {
		require.Equal(t, i, e.Seq)
	}
}

// Appends, writes and whole-log reads from several goroutines: every read
// is a seq-contiguous prefix, and the store gets every event once.
func TestLogConcurrentReadBack(t *testing.T) {
	ctx := context.Background()
	st := &memStore{}
	l := NewLog(Header{ID: "s"}, func() int64 { return 1 }, st)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 300 {
			chunk(l)
			if i%10 == 0 {
				l.Append(TypeStepEnd, StepRef{Turn: 1, Step: i})
			}
		}
	})
	wg.Go(func() {
		for range 100 {
			_ = l.Write(ctx)
		}
	})
	for range 50 {
		all, err := l.All(ctx)
		require.NoError(t, err)
		for i, e := range all {
			require.Equal(t, i, e.Seq)
		}
	}
	wg.Wait()
	require.NoError(t, l.Flush(ctx))
	require.Len(t, st.events, 330)
	require.Equal(t, 30, l.Len())
}

// TestReleaseWithoutReaderKeepsAll: a log with nothing to read back from
// lets go of nothing.
func TestReleaseWithoutReaderKeepsAll(t *testing.T) {
	l := NewLog(Header{ID: "mem"}, func() int64 { return 0 }, nil)
	l.Append(TypeAssistantMessage, AssistantMessage{Turn: 1, Step: 1, Content: []Block{TextBlock("a")}})
	require.Equal(t, 0, l.Release(func(Event) bool { return true }))
	require.Equal(t, 1, l.Len())
}
