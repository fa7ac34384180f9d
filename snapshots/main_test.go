package snapshots

import (
	"os"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/workertest"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// TestMain lets the test binary serve as the Landlock launcher, as the real
// binary does, and builds the program worker the scenarios run programs in.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	os.Exit(workertest.Main(m))
}
