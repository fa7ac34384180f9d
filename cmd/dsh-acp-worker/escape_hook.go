//go:build workerescape

package main

import (
	"net"
	"os"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
)

// escape simulates a program that escaped the JavaScript engine: built
// with -tags workerescape (tests only), a program whose source is
// "//escape:write PATH" or "//escape:connect HOST:PORT" makes the worker
// itself, in Go, write the file or dial the address, with every privilege
// the worker process has. The Done's text says what happened.
func escape(r jsproto.Run) (jsproto.Done, bool) {
	op, arg, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(r.Source), "//escape:"), " ")
	if !ok || !strings.HasPrefix(strings.TrimSpace(r.Source), "//escape:") {
		return jsproto.Done{}, false
	}
	var err error
	switch op {
	case "write":
		err = os.WriteFile(arg, []byte("escaped"), 0o644)
	case "connect":
		var c net.Conn
		c, err = net.DialTimeout("tcp", arg, 2*time.Second)
		if err == nil {
			_, err = c.Write([]byte("escaped"))
			c.Close()
		}
	default:
		return jsproto.Done{Text: "unknown escape " + op}, true
	}
	if err != nil {
		return jsproto.Done{Text: "escape " + op + " failed: " + err.Error()}, true
	}
	return jsproto.Done{Text: "escape " + op + " succeeded"}, true
}
