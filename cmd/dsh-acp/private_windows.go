//go:build windows

package main

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"
)

// privateDir creates the sessions root. Windows has no mode bits: a
// directory under the user's profile inherits its owner-only ACL.
func privateDir(root string, _ zerolog.Logger) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("create the sessions root: %w", err)
	}
	return nil
}
