package acp

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// A live card update racing the call's result: the update is written
// before the result's card or not at all, never after it (a card left
// in_progress in the client). The presenter takes the call's live state
// and then writes the completed card; a live ticker shows output
// concurrently.
func TestLiveUpdateNeverFollowsTheResult(t *testing.T) {
	for i := range 2000 {
		var (
			lc    liveCards
			mu    sync.Mutex
			wire  []string
			start = make(chan struct{})
			wg    sync.WaitGroup
		)
		write := func(what string) {
			mu.Lock()
			wire = append(wire, what)
			mu.Unlock()
		}
		lc.open("call")
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 3 {
				lc.show("call", capabilities.LiveView{Output: "tick"}, false, func(any) { write("live") })
			}
		}()
		close(start)
		if i%2 == 0 {
			lc.show("call", capabilities.LiveView{Output: "first"}, false, func(any) { write("live") })
		}
		_, _ = lc.take("call")
		write("completed")
		wg.Wait()
		mu.Lock()
		require.Equal(t, "completed", wire[len(wire)-1], "run %d: %v", i, wire)
		mu.Unlock()
	}
}
