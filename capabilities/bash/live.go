package bash

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Live output of a local foreground command (capabilities.Host.Live).
const (
	// liveTailBytes is the most output one live view carries (its tail).
	liveTailBytes = 16 * 1024
	// liveEvery is how often a running command's card is refreshed while
	// it prints.
	liveEvery = 250 * time.Millisecond
)

// liveTail is the end of a running command's output, stdout and stderr
// in arrival order, for its card. It is safe for concurrent use.
type liveTail struct {
	mu    sync.Mutex
	buf   []byte
	total int64 // bytes ever written
}

// write records what one read returned.
func (l *liveTail) write(p []byte) {
	if len(p) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	l.total += int64(len(p))
	if drop := len(l.buf) - liveTailBytes; drop > 0 {
		l.buf = append(l.buf[:0:0], l.buf[drop:]...)
	}
}

// view returns the kept tail cut at whole UTF-8 sequences (a sequence still
// being written is held back unless final), its offset in the whole output
// and the total written so far.
func (l *liveTail) view(final bool) (out string, offset, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	start, end := 0, len(l.buf)
	for start < end && start < utf8.UTFMax && !utf8.RuneStart(l.buf[start]) {
		start++
	}
	if !final {
		i := end - 1
		for i > start && end-i < utf8.UTFMax && !utf8.RuneStart(l.buf[i]) {
			i--
		}
		if i >= start && !utf8.FullRune(l.buf[i:end]) {
			end = i
		}
	}
	return string(l.buf[start:end]), l.total - int64(len(l.buf)-start), l.total
}

// streamLive shows tail in the card of call while the command runs: every
// liveEvery when something new arrived and, if anything was shown, once
// more with the rest when stop is called (which returns after the last
// Show). A command that ends within liveEvery shows nothing live: its
// result is all there is to show.
func streamLive(live capabilities.Live, callID, description string, tail *liveTail) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(liveEvery)
		defer tick.Stop()
		var shown int64
		show := func(final bool) {
			out, offset, _ := tail.view(final)
			if end := offset + int64(len(out)); end != shown {
				shown = end
				live.Show(callID, capabilities.LiveView{Description: description, Output: out, Offset: offset})
			}
		}
		for {
			select {
			case <-tick.C:
				show(false)
			case <-done:
				if shown > 0 {
					show(true)
				}
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-finished
	}
}
