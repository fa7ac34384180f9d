package dist

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var entries = []file{{name: "LICENSE", data: []byte("MIT"), mode: 0o644}, {name: "README.md", data: []byte("hi"), mode: 0o644},
	{name: "dsh-acp", data: bytes.Repeat([]byte("\x7fELF"), 1000), mode: 0o755}}

// The same files and date give the same bytes; the entries are regular
// files at the root, in order, owned by 0:0, dated the given time, with
// their modes.
func TestTarGzIsReproducible(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	var a, b, c bytes.Buffer
	require.NoError(t, writeTarGz(&a, entries, at))
	require.NoError(t, writeTarGz(&b, entries, at))
	require.NoError(t, writeTarGz(&c, entries, at.Add(time.Hour)))
	assert.Equal(t, a.Bytes(), b.Bytes())
	assert.NotEqual(t, a.Bytes(), c.Bytes(), "the date is in the archive")

	zr, err := gzip.NewReader(bytes.NewReader(a.Bytes()))
	require.NoError(t, err)
	assert.Empty(t, zr.Name)
	assert.True(t, zr.ModTime.IsZero() || zr.ModTime.Unix() == 0)
	tr := tar.NewReader(zr)
	for _, want := range entries {
		h, err := tr.Next()
		require.NoError(t, err)
		assert.Equal(t, want.name, h.Name)
		assert.Equal(t, byte(tar.TypeReg), h.Typeflag)
		assert.Equal(t, int64(want.mode), h.Mode)
		assert.Zero(t, h.Uid)
		assert.Zero(t, h.Gid)
		assert.Empty(t, h.Uname)
		assert.True(t, h.ModTime.Equal(at), h.ModTime)
		got, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.Equal(t, want.data, got)
	}
	_, err = tr.Next()
	assert.ErrorIs(t, err, io.EOF)
}

func TestZipIsReproducible(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 2, 0, time.UTC)
	var a, b bytes.Buffer
	require.NoError(t, writeZip(&a, entries, at))
	require.NoError(t, writeZip(&b, entries, at))
	assert.Equal(t, a.Bytes(), b.Bytes())
	zr, err := zip.NewReader(bytes.NewReader(a.Bytes()), int64(a.Len()))
	require.NoError(t, err)
	require.Len(t, zr.File, len(entries))
	for i, f := range zr.File {
		assert.Equal(t, entries[i].name, f.Name)
		assert.Equal(t, entries[i].mode, f.Mode().Perm())
		assert.True(t, f.Modified.Equal(at), f.Modified)
		r, err := f.Open()
		require.NoError(t, err)
		got, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, entries[i].data, got)
	}
}
