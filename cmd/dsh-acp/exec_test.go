package main

import (
	"os"
	"testing"

	"github.com/zalando/go-keyring"
)

// execAgentEnv makes the test binary act as dsh-acp itself (main), so
// tests can run the real program as a subprocess: on a pseudo-terminal,
// over stdio.
const execAgentEnv = "DSH_ACP_TEST_EXEC_AGENT"

// TestMain runs main for a subprocess test; otherwise it puts go-keyring's
// in-memory mock in place of the OS credential store, so no in-process
// test can reach the real user's keyring.
func TestMain(m *testing.M) {
	if os.Getenv(execAgentEnv) == "1" {
		main()
		return
	}
	keyring.MockInit()
	os.Exit(m.Run())
}
