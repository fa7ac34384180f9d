package jsonl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMaterializeRefusesExisting(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, NoCwdBucket, "s.jsonl")
	require.NoError(t, materialize(root, path, []byte(`{"h":1}`), []byte("{}\n"), true))
	err := materialize(root, path, []byte(`{"h":2}`), []byte("{}\n"), true)
	require.ErrorIs(t, err, fs.ErrExist)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "{\"h\":1}\n{}\n", string(b), "the existing log is untouched")
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temp file is removed after a refused link")
}

// failingFile writes half of each buffer, then fails.
type failingFile struct{ *os.File }

func (f failingFile) Write(b []byte) (int, error) {
	n, _ := f.File.Write(b[:len(b)/2])
	return n, errors.New("disk full")
}

func TestAppendFailureTruncatesBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("line0\n"), 0o600))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer f.Close()
	err = appendTo(failingFile{f}, []byte("line1\nline2\n"), true)
	require.ErrorContains(t, err, "disk full")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "line0\n", string(b))

	require.NoError(t, appendTo(f, []byte("line1\n"), true))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "line0\nline1\n", string(b))
	require.Error(t, appendDurable(filepath.Join(t.TempDir(), "missing", "s.jsonl"), []byte("x\n"), true))
}
