//go:build !linux

package sandbox

import (
	"fmt"
	"os"
)

// RunLandlockHelper is the helper's entry point; Landlock exists only on
// Linux, so elsewhere it prints `landlock-run: <reason>` and returns 125.
func RunLandlockHelper(args []string) int {
	fmt.Fprintln(os.Stderr, "landlock-run: landlock is only available on Linux")
	return HelperExitCode
}
