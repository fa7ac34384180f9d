package agent

import (
	"runtime/debug"
	"sync"
	"time"
)

// idleRelease returns the heap a finished turn left behind to the system
// once the process has run no turn for Config.ReleaseIdle: one forced
// collection and scavenge (debug.FreeOSMemory), instead of the runtime's
// gradual scavenging, so an editor's idle agent holds what it uses.
type idleRelease struct {
	after time.Duration
	free  func() // debug.FreeOSMemory; a test counts calls instead

	mu      sync.Mutex
	running int // turns in progress, in every session
	timer   *time.Timer
}

// begin notes a turn starting: a pending release waits.
func (r *idleRelease) begin() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running++
	if r.timer != nil {
		r.timer.Stop()
	}
}

// end notes a turn ending: the release runs after the idle delay unless
// another turn starts first.
func (r *idleRelease) end() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	if r.running > 0 {
		return
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(r.after, r.fire)
		return
	}
	r.timer.Reset(r.after)
}

// stop drops a pending release (the runtime is closing).
func (r *idleRelease) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
}

func (r *idleRelease) fire() {
	r.mu.Lock()
	idle := r.running == 0
	r.mu.Unlock()
	if idle {
		r.free()
	}
}

func newIdleRelease(after time.Duration) *idleRelease {
	if after <= 0 {
		return nil
	}
	return &idleRelease{after: after, free: debug.FreeOSMemory}
}
