package jsonl_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

func TestMain(m *testing.M) {
	storetest.MaybeHold(openDir)
	os.Exit(m.Run())
}

func openDir(dir string) (session.Store, error) { return jsonl.Open(dir) }

// TestTwoProcesses: a session loaded by another process is refused here,
// naming that process, until the kernel drops a crashed holder's lock.
func TestTwoProcesses(t *testing.T) { storetest.RunProcess(t, openDir) }

// TestDeleteTwoProcesses: a session another process holds is not deleted.
func TestDeleteTwoProcesses(t *testing.T) { storetest.RunDeleteProcess(t, openDir) }

func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) session.Store {
		st, err := jsonl.Open(dir)
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

// BenchmarkPage1000 pages through 1,000 sessions (target: 50 ms a pass).
func BenchmarkPage1000(b *testing.B) {
	storetest.BenchPage(b, func(b *testing.B) session.Store {
		st, err := jsonl.Open(b.TempDir())
		require.NoError(b, err)
		b.Cleanup(func() { _ = st.Close() })
		return st
	})
}
