//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// fullABI is the first Landlock ABI that handles every file-write right the
// helper asks for (V3 adds truncate; V2 added refer). Older kernels enforce
// only part of the policy.
const fullABI = 3

// RunLandlockHelper is the helper's entry point; args are the arguments
// after [HelperArg]. With `--probe` it restricts itself to the read-only
// policy, checks that a write is really denied, prints `landlock: fully
// enforced` or `landlock: partially enforced (older ABI)` and returns 0.
// Otherwise it applies `--ro P` (read and execute beneath P) and `--rw P`
// (read and write beneath P, or to the file P) with Landlock (which also
// sets no_new_privs), then execs `argv` and does not return. On its own
// failure it prints `landlock-run: <reason>` to stderr and returns 125.
func RunLandlockHelper(args []string) int {
	h, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(err)
	}
	if h.probe {
		return runProbe()
	}
	if _, err := restrict(h.ro, h.rw); err != nil {
		return helperFail(err)
	}
	path, err := exec.LookPath(h.argv[0])
	if err != nil {
		return helperFail(err) // already reads `exec: "name": …`
	}
	err = syscall.Exec(path, h.argv, os.Environ())
	return helperFail(fmt.Errorf("exec %s: %w", h.argv[0], err))
}

// helperFail reports the helper's own failure in its dialect.
func helperFail(err error) int {
	fmt.Fprintf(os.Stderr, "landlock-run: %v\n", err)
	return HelperExitCode
}

// restrict applies the ruleset and returns the enforcement level reached.
func restrict(ro, rw []string) (Enforcement, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return "", fmt.Errorf("landlock is not supported by this kernel: %w", err)
	}
	if abi < 1 {
		return "", fmt.Errorf("landlock is not supported by this kernel (ABI %d)", abi)
	}
	var rules []landlock.Rule
	for _, p := range ro {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("--ro: %w", err)
		}
		if st.IsDir() {
			rules = append(rules, landlock.RODirs(p))
		} else {
			rules = append(rules, landlock.ROFiles(p))
		}
	}
	for _, p := range rw {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("--rw: %w", err)
		}
		switch {
		case !st.IsDir():
			rules = append(rules, landlock.RWFiles(p))
		case abi >= 2:
			// Moves and links inside writable trees need "refer"; asking for
			// it on a V1 kernel would make BestEffort enforce nothing.
			rules = append(rules, landlock.RWDirs(p).WithRefer())
		default:
			rules = append(rules, landlock.RWDirs(p))
		}
	}
	// V3 handles exactly the file rights (read, write, refer, truncate);
	// ioctl on devices and unix-socket connects (V5+, V9+) are not file
	// effects and stay unrestricted, as does the network.
	if err := landlock.V3.BestEffort().RestrictPaths(rules...); err != nil {
		return "", fmt.Errorf("restrict: %w", err)
	}
	if abi >= fullABI {
		return EnforcementFull, nil
	}
	return EnforcementPartial, nil
}

// runProbe restricts the helper to the read-only policy and verifies that
// it holds: reading works, /dev/null is writable, creating a file in the
// temp dir is refused with EACCES.
func runProbe() int {
	enf, err := restrict([]string{"/"}, []string{"/dev/null"})
	if err != nil {
		return helperFail(err)
	}
	if _, err := os.ReadDir("/"); err != nil {
		return helperFail(fmt.Errorf("probe: read / under restriction: %w", err))
	}
	if err := os.WriteFile("/dev/null", []byte("x"), 0); err != nil {
		return helperFail(fmt.Errorf("probe: write /dev/null under restriction: %w", err))
	}
	f := filepath.Join(os.TempDir(), fmt.Sprintf(".landlock-probe-%d", os.Getpid()))
	fh, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_ = fh.Close()
		_ = os.Remove(f)
		return helperFail(errors.New("probe: restriction is not effective (a write outside the policy succeeded)"))
	}
	if !errors.Is(err, syscall.EACCES) {
		return helperFail(fmt.Errorf("probe: cannot verify the restriction: %w", err))
	}
	if enf == EnforcementFull {
		fmt.Println(probeFull)
	} else {
		fmt.Println(probePartial)
	}
	return 0
}
