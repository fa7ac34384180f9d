package acpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// Strays returns the responses that matched no pending request of the
// Conn's own (Start, Call): unknown or repeated ids.
func (c *Conn) Strays() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.strays...)
}

// Transcript returns every line so far, both ways, in order.
func (c *Conn) Transcript() []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Line(nil), c.lines...)
}

// Received returns the lines the agent wrote so far.
func (c *Conn) Received() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]byte, len(c.received))
	for k, i := range c.received {
		out[k] = c.lines[i].Data
	}
	return out
}

// Output returns the agent's output so far, byte for byte.
func (c *Conn) Output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b bytes.Buffer
	for _, i := range c.received {
		b.Write(c.lines[i].Data)
		if !c.lines[i].NoEOL {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Len returns how many lines the agent wrote so far: a mark for
// NextLine and Since.
func (c *Conn) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nreceived
}

// Since returns the lines the agent wrote after the first mark lines.
func (c *Conn) Since(mark int) [][]byte {
	r := c.Received()
	return r[min(mark, len(r)):]
}

// NextLine returns the agent's i-th line (from 0), waiting for it until
// ctx ends; io.EOF means the output ended before it.
func (c *Conn) NextLine(ctx context.Context, i int) ([]byte, error) {
	for {
		c.mu.Lock()
		if c.opts.NoTranscript {
			c.mu.Unlock()
			return nil, errors.New("acpclient: NoTranscript keeps no lines")
		}
		if i < len(c.received) {
			data := c.lines[c.received[i]].Data
			c.mu.Unlock()
			return data, nil
		}
		wake, ended := c.wake(), c.readErr != nil
		c.mu.Unlock()
		if ended {
			return nil, io.EOF
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Updates returns the session/update notifications so far, in wire order.
func (c *Conn) Updates() []Update {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Update(nil), c.updates...)
}

// WaitUpdate waits until one of the updates from index from on (of
// Updates) matches, and returns it with its index; it fails when ctx ends
// or the output ends first. A nil match takes any update.
func (c *Conn) WaitUpdate(ctx context.Context, from int, match func(Update) bool) (Update, int, error) {
	for {
		c.mu.Lock()
		for i := from; i < len(c.updates); i++ {
			if match == nil || match(c.updates[i]) {
				u := c.updates[i]
				c.mu.Unlock()
				return u, i, nil
			}
		}
		from = max(from, len(c.updates))
		wake, ended := c.wake(), c.readErr != nil
		c.mu.Unlock()
		if ended {
			return Update{}, -1, fmt.Errorf("no matching update before the agent's output ended: %w", io.EOF)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return Update{}, -1, fmt.Errorf("no matching update: %w", ctx.Err())
		}
	}
}

// Requests returns the agent→client requests so far, in wire order.
func (c *Conn) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.requests...)
}
