package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/sqlite"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
		require.NoError(t, err)
		return st
	})
}

func BenchmarkAppendTurn(b *testing.B) {
	storetest.BenchAppendTurn(b, func(b *testing.B) session.Store {
		st, err := sqlite.Open(filepath.Join(b.TempDir(), "sessions.db"))
		require.NoError(b, err)
		return st
	})
}
