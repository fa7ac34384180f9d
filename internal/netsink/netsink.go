// Package netsink is a loopback TCP listener for tests that prove what a
// confined command could or could not send: it counts the connections it
// accepted and the bytes they delivered.
package netsink

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// Sink listens on 127.0.0.1 until its test ends.
type Sink struct {
	ln net.Listener
	// Conns counts accepted connections; Bytes the bytes read from them.
	Conns, Bytes atomic.Int64
}

// New starts a sink. After a connection's first read it writes reply,
// if any (an HTTP client waits for an answer), then reads on until the
// peer closes or 5 s pass without data.
func New(t testing.TB, reply []byte) *Sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sink{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.Conns.Add(1)
			go s.drain(c, reply)
		}
	}()
	return s
}

// drain reads c to its end, answering its first read with reply.
func (s *Sink) drain(c net.Conn, reply []byte) {
	defer c.Close()
	buf := make([]byte, 4096)
	for first := true; ; first = false {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		s.Bytes.Add(int64(n))
		if first && len(reply) > 0 {
			_, _ = c.Write(reply)
		}
		if err != nil {
			return
		}
	}
}

// Addr is the sink's host:port.
func (s *Sink) Addr() string { return s.ln.Addr().String() }
