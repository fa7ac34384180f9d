package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

// TestIdleReleaseAfterLastTurn: the release runs once the last turn has
// ended and the delay passed, and never while a turn runs.
func TestIdleReleaseAfterLastTurn(t *testing.T) {
	freed := make(chan struct{}, 4)
	r := &idleRelease{after: time.Millisecond, free: func() { freed <- struct{}{} }}
	r.begin()
	r.begin()
	r.end()
	r.fire() // one turn still runs
	require.Empty(t, freed)
	r.end()
	select {
	case <-freed:
	case <-time.After(time.Minute):
		t.Fatal("no release after the last turn")
	}
	r.begin()
	r.fire()
	require.Empty(t, freed, "a turn started: no release")
	r.end()
	<-freed
}

// BenchmarkIdleRelease runs 300 turns of 300-chunk answers, then reports
// the process's resident memory after 2 s idle with the runtime's own
// scavenging, and after the idle release (debug.FreeOSMemory).
func BenchmarkIdleRelease(b *testing.B) {
	for b.Loop() {
		m := newTurnModel(300).unrecorded()
		s := depthSession(b, m)
		for range 300 {
			if r := s.Prompt(context.Background(), "read a.txt"); r.Kind != session.EndCompleted {
				b.Fatalf("turn ended %+v", r)
			}
		}
		time.Sleep(2 * time.Second)
		idle := processRSS()
		newIdleRelease(time.Nanosecond).free()
		released := processRSS()
		b.ReportMetric(float64(idle)/(1<<20), "MB-RSS-idle")
		b.ReportMetric(float64(released)/(1<<20), "MB-RSS-released")
	}
}
