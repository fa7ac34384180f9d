//go:build unix

package main

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"
)

// privateDir makes the sessions root the user's alone before a store opens
// it: created 0700 when missing; an existing directory open to the group
// or others (a --sessions-root made by hand, or by an older build) loses
// that access, with a warning saying so. The root holds nothing but
// dsh-acp's session logs, every conversation in full, so this is what
// ssh does with ~/.ssh: tightening cannot break another program's use of
// the directory, and a mere warning would leave the session names and any
// file an older build created 0644 readable. A directory the user does not
// own (so cannot chmod) is used as it is, with a warning: the session files
// themselves are still created 0600.
func privateDir(root string, log zerolog.Logger) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("create the sessions root: %w", err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("sessions root: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("sessions root %s is not a directory", root)
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(root, perm&^0o077); err != nil {
		log.Warn().Str("dir", root).Str("mode", perm.String()).Err(err).
			Msg("the sessions root is open to other users and could not be made private; its session files are still 0600")
		return nil
	}
	log.Warn().Str("dir", root).Str("was", perm.String()).Str("now", (perm &^ 0o077).String()).
		Msg("the sessions root was open to other users; it is now private to you")
	return nil
}
