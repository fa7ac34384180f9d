package jsonl_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		st, err := jsonl.Open(t.TempDir())
		require.NoError(t, err)
		return st
	})
}

func BenchmarkAppendTurn(b *testing.B) {
	storetest.BenchAppendTurn(b, func(b *testing.B) session.Store {
		st, err := jsonl.Open(b.TempDir())
		require.NoError(b, err)
		return st
	})
}
