// Package shared finds the project's shared material for tests: the
// directory shared/ beside the module (../shared from the repository
// root), with the upstream conformance corpus (upstream/), the contracts
// (contracts/) and the ACP wire schema (acp/). A newcomer's clone may not
// have it: every test that needs it calls Dir, which skips with one message
// when it is absent, unless DSH_SHARED_REQUIRE is set (CI sets it, so there
// a missing corpus fails instead of passing silently).
package shared

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv names the environment variable that turns a missing shared/
// into a test failure.
const RequireEnv = "DSH_SHARED_REQUIRE"

// Upstream, Contracts and ACP are the parts of shared/ tests read.
const (
	Upstream  = "upstream"  // the upstream harness's recorded scenarios
	Contracts = "contracts" // the behaviour contracts
	ACP       = "acp"       // the ACP wire schema (schema.json, schema.unstable.json)
)

// Lookup returns the absolute path of shared/<elem...>, found beside the
// module that contains the working directory, or an error saying where it
// looked. It never skips: fuzz seeds and benchmarks that only add to what
// they have use it directly.
func Lookup(elem ...string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "", err
	}
	path := filepath.Join(append([]string{filepath.Dir(root), "shared"}, elem...)...)
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return path, nil
}

// Dir returns the absolute path of shared/<elem...>. When it is absent the
// test is skipped with the one message every such test gives (or fails, if
// DSH_SHARED_REQUIRE is set).
func Dir(tb testing.TB, elem ...string) string {
	tb.Helper()
	path, err := Lookup(elem...)
	if err != nil {
		msg := fmt.Sprintf("shared material not found (%v): the conformance corpus, contracts and ACP schema live in ../shared beside the repository (README, \"Tests\")", err)
		if os.Getenv(RequireEnv) != "" {
			tb.Fatalf("%s is set: %s", RequireEnv, msg)
		} else {
			tb.Skip(msg)
		}
		return ""
	}
	return path
}

// moduleRoot is the nearest directory at or above dir holding a go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		d = parent
	}
}
