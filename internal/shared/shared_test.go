package shared

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree makes <tmp>/repo (a module, with a package directory) and, when
// withShared, <tmp>/shared/upstream; it returns the package directory.
func tree(t *testing.T, withShared bool) (pkg, sharedDir string) {
	t.Helper()
	tmp := t.TempDir()
	pkg = filepath.Join(tmp, "repo", "a", "b")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "repo", "go.mod"), []byte("module x\n"), 0o644))
	sharedDir = filepath.Join(tmp, "shared")
	if withShared {
		require.NoError(t, os.MkdirAll(filepath.Join(sharedDir, Upstream), 0o755))
	}
	return pkg, sharedDir
}

func TestDirFindsSharedBesideTheModule(t *testing.T) {
	pkg, sharedDir := tree(t, true)
	t.Chdir(pkg)
	assert.Equal(t, filepath.Join(sharedDir, Upstream), Dir(t, Upstream))
	_, err := Lookup(Contracts)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestDirSkipsWithOneMessage(t *testing.T) {
	pkg, sharedDir := tree(t, false)
	t.Chdir(pkg)
	t.Setenv(RequireEnv, "")
	var skipped bool
	var msg string
	t.Run("absent", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Dir(t, Upstream)
		t.Error("Dir returned without skipping")
	})
	require.True(t, skipped)

	rec := &recordingTB{TB: t}
	Dir(rec, ACP)
	msg = rec.skip
	assert.Equal(t, fmt.Sprintf(`shared material not found (stat %s: no such file or directory): the conformance corpus, contracts and ACP schema live in ../shared beside the repository (README, "Tests")`,
		filepath.Join(sharedDir, ACP)), msg)
	assert.Empty(t, rec.fatal)
}

func TestDirFailsWhenRequired(t *testing.T) {
	pkg, _ := tree(t, false)
	t.Chdir(pkg)
	t.Setenv(RequireEnv, "1")
	rec := &recordingTB{TB: t}
	Dir(rec, Upstream)
	assert.Empty(t, rec.skip)
	assert.Contains(t, rec.fatal, "DSH_SHARED_REQUIRE is set: shared material not found")
}

// recordingTB records a skip or a fatal instead of ending the test, to
// check which one Dir chose and what it said.
type recordingTB struct {
	testing.TB
	skip, fatal string
}

func (r *recordingTB) Helper()                        {}
func (r *recordingTB) Skip(args ...any)               { r.skip = fmt.Sprint(args...) }
func (r *recordingTB) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }
