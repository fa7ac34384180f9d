//go:build workerescape

package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
)

// escape simulates a program that escaped the JavaScript engine: built
// with -tags workerescape (tests only), a program whose source is
// "//escape:write PATH", "//escape:read PATH", "//escape:connect
// HOST:PORT" or "//escape:env NAME" makes the worker itself, in Go, write
// or read the file, dial the address or read the variable, with every
// privilege the worker process has. The Done's text says what happened.
func escape(r jsproto.Run) (jsproto.Done, bool) {
	op, arg, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(r.Source), "//escape:"), " ")
	if !ok || !strings.HasPrefix(strings.TrimSpace(r.Source), "//escape:") {
		return jsproto.Done{}, false
	}
	var err error
	switch op {
	case "write":
		err = os.WriteFile(arg, []byte("escaped"), 0o644)
	case "read":
		_, err = os.ReadFile(arg)
	case "connect":
		var c net.Conn
		c, err = net.DialTimeout("tcp", arg, 2*time.Second)
		if err == nil {
			_, err = c.Write([]byte("escaped"))
			c.Close()
		}
	case "env":
		var names []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			names = append(names, k)
		}
		return jsproto.Done{Text: fmt.Sprintf("escape env %s=%s (variables: %s)", arg, os.Getenv(arg), strings.Join(names, " "))}, true
	default:
		return jsproto.Done{Text: "unknown escape " + op}, true
	}
	if err != nil {
		return jsproto.Done{Text: "escape " + op + " failed: " + err.Error()}, true
	}
	return jsproto.Done{Text: "escape " + op + " succeeded"}, true
}
