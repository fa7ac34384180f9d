//go:build !workerescape

package main

import "github.com/dsh-acp/dsh-acp/capabilities/jsproto"

// escape is the test-only escape hook; a release build has none.
func escape(jsproto.Run) (jsproto.Done, bool) { return jsproto.Done{}, false }
