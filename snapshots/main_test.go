package snapshots

import (
	"os"
	"testing"

	"github.com/dsh-acp/dsh-acp/sandbox"
)

// TestMain lets the test binary serve as the Landlock launcher, as the real
// binary does.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	os.Exit(m.Run())
}
