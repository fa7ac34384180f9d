//go:build !linux

package sandbox

import (
	"context"
	"os/exec"
)

// nsSpawn has no meaning outside Linux.
type nsSpawn struct{}

// cachedRuleset has no meaning outside Linux.
type cachedRuleset struct{}

func detectNamespaces(context.Context, []string) *nsSpawn { return nil }

// Prepare implements [Preparer]; outside Linux there is nothing to
// prepare.
func (l *Landlock) Prepare(Policy) func(cmd *exec.Cmd) { return nil }
