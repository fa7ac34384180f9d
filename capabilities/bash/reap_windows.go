//go:build windows

package bash

import (
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/proctree"
)

// tracker holds the Job Object of every command the tool started, so that
// what a command left running (a `server &`) lives on with the session,
// as it does on Linux, and is ended with it: sweepAll ends and closes every
// job. A job whose processes all ended is dropped at the next add.
type tracker struct {
	mu   sync.Mutex
	jobs []*proctree.Group
}

func (t *tracker) add(p *process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.jobs[:0]
	for _, g := range t.jobs {
		if g.Alive() {
			live = append(live, g)
		} else {
			_ = g.Close()
		}
	}
	t.jobs = append(live, p.sys.group)
}

func (t *tracker) sweepAll() {
	t.mu.Lock()
	jobs := t.jobs
	t.jobs = nil
	t.mu.Unlock()
	for _, g := range jobs {
		_ = g.Kill()
		_ = g.Close()
	}
}

// sweepSession has nothing to do: a confined command does not run on
// Windows (no sandbox backend).
func sweepSession(int) {}

func endNamespaces(int, time.Duration) {}
