package dist

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
)

// unpack extracts archive into dir the way a client does (a tar.gz or a
// zip, entries at the root, modes kept).
func unpack(t *testing.T, archive, dir string) {
	t.Helper()
	data, err := os.ReadFile(archive)
	require.NoError(t, err)
	write := func(name string, mode os.FileMode, r io.Reader) {
		require.False(t, strings.ContainsAny(name, `/\`), "entry %q is not at the root", name)
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		require.NoError(t, err)
		_, err = io.Copy(f, r)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	if strings.HasSuffix(archive, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		for _, f := range zr.File {
			r, err := f.Open()
			require.NoError(t, err)
			write(f.Name, f.Mode().Perm(), r)
		}
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		require.Equal(t, byte(tar.TypeReg), h.Typeflag)
		write(h.Name, os.FileMode(h.Mode).Perm(), tr)
	}
}

// The release as a client installs it: this platform's archive, built by
// Build, unpacked into an empty directory, runs from there with nothing
// else around, says its release version, and answers initialize (every
// frame valid against the ACP schema) with a terminal sign-in to a client
// that enables terminal auth. A second build gives the same bytes.
func TestHostArchiveRunsFromAnEmptyDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary (-short)")
	}
	host, ok := HostTarget()
	if !ok {
		t.Skipf("%s/%s is not a registry target", runtime.GOOS, runtime.GOARCH)
	}
	if host.GOOS == "windows" {
		t.Skip("acpclient spawns agents on Unix only")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmds := []string{"./cmd/dsh-acp"}
	if _, err := os.Stat("../../cmd/dsh-acp-worker"); err == nil {
		cmds = append(cmds, "./cmd/dsh-acp-worker")
	}
	// The release is built by the real command, compiled without the race
	// detector: packing ~35 MB under -race instrumentation takes minutes.
	build := func(out string) Artifact {
		args := append([]string{"run", "./cmd/dist", "-version", "0.3.0", "-base-url", "https://example.invalid/releases/v0.3.0",
			"-out", out, "-targets", host.Name}, cmds...)
		cmd := exec.CommandContext(ctx, goTool, args...)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		name := "dsh-acp-0.3.0-" + host.Name + host.Ext()
		path := filepath.Join(out, name)
		data, err := os.ReadFile(path)
		require.NoError(t, err, "the archive %s is written", name)
		sum := sha256.Sum256(data)
		sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
		require.NoError(t, err)
		assert.Equal(t, hex.EncodeToString(sum[:])+"  "+name+"\n", string(sums), "SHA256SUMS lists the one archive built")
		return Artifact{Name: name, Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	}
	a, second := build(t.TempDir()), build(t.TempDir())
	assert.Equal(t, a.SHA256, second.SHA256, "reproducible: the same tree builds the same archive")
	t.Logf("%s: %.1f MB", a.Name, float64(a.Size)/(1<<20))

	dir := t.TempDir()
	unpack(t, a.Path, dir)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"LICENSE", "README.md"}
	for _, c := range cmds {
		want = append(want, host.Exe(filepath.Base(c)))
	}
	sort.Strings(want)
	assert.Equal(t, want, names)

	exe := "./" + host.Exe("dsh-acp")
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "cfg"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"DSH_ACP_CREDENTIAL_STORE=file", "DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(home, "no-bus")}
	v := exec.CommandContext(ctx, exe, "--version")
	v.Dir, v.Env = dir, env
	out, err := v.Output()
	require.NoError(t, err)
	assert.Equal(t, "dsh-acp 0.3.0\n", string(out))

	schema, err := acpschema.Stable()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, exe)
	cmd.Dir, cmd.Env = dir, env
	p, err := acpclient.Spawn(cmd, acpclient.Options{Schema: schema,
		ClientCapabilities: map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "auth": map[string]any{"terminal": true}}})
	require.NoError(t, err)
	res, err := p.Initialize(ctx)
	require.NoError(t, err, p.Stderr())
	require.NoError(t, p.Close(10*time.Second), p.Stderr())
	p.Report(t)
	var init struct {
		AgentInfo         struct{ Name, Version string } `json:"agentInfo"`
		AgentCapabilities struct {
			Auth struct {
				Logout *struct{} `json:"logout"`
			} `json:"auth"`
		} `json:"agentCapabilities"`
		AuthMethods []struct {
			ID   string   `json:"id"`
			Type string   `json:"type"`
			Args []string `json:"args"`
		} `json:"authMethods"`
	}
	require.NoError(t, json.Unmarshal(res, &init))
	assert.Equal(t, "dsh-acp", init.AgentInfo.Name)
	assert.Equal(t, "0.3.0", init.AgentInfo.Version)
	assert.NotNil(t, init.AgentCapabilities.Auth.Logout)
	require.NotEmpty(t, init.AuthMethods)
	assert.Equal(t, "terminal", init.AuthMethods[0].Type)
	assert.Equal(t, []string{"--login"}, init.AuthMethods[0].Args)
}
