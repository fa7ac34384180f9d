//go:build unix

package acp

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func mkfifo(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o600)) }
