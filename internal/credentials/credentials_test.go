package credentials

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zalando/go-keyring"
)

// fakeKeyring is an in-memory OS credential store; err, when set, is what
// every call answers (no store reachable); block makes every call hang.
type fakeKeyring struct {
	mu      sync.Mutex
	secrets map[string]string
	err     error
	block   chan struct{}
}

func (f *fakeKeyring) wait() error {
	if f.block != nil {
		<-f.block
	}
	return f.err
}

func (f *fakeKeyring) Get(service, user string) (string, error) {
	if err := f.wait(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.secrets[service+"/"+user]
	if !ok {
		return "", ErrNotFound
	}
	return v, nil
}

func (f *fakeKeyring) Set(service, user, secret string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.secrets == nil {
		f.secrets = map[string]string{}
	}
	f.secrets[service+"/"+user] = secret
	return nil
}

func (f *fakeKeyring) Delete(service, user string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.secrets[service+"/"+user]; !ok {
		return ErrNotFound
	}
	delete(f.secrets, service+"/"+user)
	return nil
}

func TestKeyringRoundTripLeavesNoFile(t *testing.T) {
	kr := &fakeKeyring{}
	s := &Store{Keyring: kr, Dir: filepath.Join(t.TempDir(), "dsh-acp")}
	loc, err := s.Save("sk-abc")
	require.NoError(t, err)
	require.Equal(t, KindKeyring, loc.Kind)
	require.Equal(t, "sk-abc", kr.secrets[Service+"/"+Account])
	require.NoFileExists(t, s.Path())

	key, where, err := s.Load()
	require.NoError(t, err)
	require.Equal(t, "sk-abc", key)
	require.Equal(t, KindKeyring, where.Kind)

	gone, err := s.Delete()
	require.NoError(t, err)
	require.Equal(t, []Location{{Kind: KindKeyring}}, gone)
	require.Empty(t, kr.secrets)
	key, _, err = s.Load()
	require.NoError(t, err)
	require.Empty(t, key)
}

// With no OS credential store (a headless Linux: no D-Bus session), the
// key goes to a 0600 file in a 0700 directory, and Save says why.
func TestFallbackFileWhenNoKeyring(t *testing.T) {
	kr := &fakeKeyring{err: errors.New("dbus: no session bus")}
	dir := filepath.Join(t.TempDir(), "cfg", "dsh-acp")
	s := &Store{Keyring: kr, Dir: dir}
	loc, err := s.Save("sk-file")
	require.NoError(t, err)
	require.Equal(t, KindFile, loc.Kind)
	require.Equal(t, filepath.Join(dir, FileName), loc.Path)
	require.Contains(t, loc.String(), "no OS credential store is usable: dbus: no session bus")
	b, err := os.ReadFile(s.Path())
	require.NoError(t, err)
	require.Equal(t, "sk-file\n", string(b))
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(s.Path())
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		di, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")

	key, where, err := s.Load()
	require.NoError(t, err)
	require.Equal(t, "sk-file", key)
	require.Equal(t, KindFile, where.Kind)

	gone, err := s.Delete()
	require.NoError(t, err, "an unreachable keyring does not fail a logout")
	require.Equal(t, []Location{{Kind: KindFile, Path: s.Path()}}, gone)
	require.NoFileExists(t, s.Path())
}

// A keyring that became usable takes the key and the older file copy goes.
func TestKeyringSaveRemovesOlderFile(t *testing.T) {
	dir := t.TempDir()
	_, err := (&Store{Dir: dir}).Save("sk-old")
	require.NoError(t, err)
	kr := &fakeKeyring{}
	s := &Store{Keyring: kr, Dir: dir}
	_, err = s.Save("sk-new")
	require.NoError(t, err)
	require.NoFileExists(t, s.Path())
	key, _, err := s.Load()
	require.NoError(t, err)
	require.Equal(t, "sk-new", key)
}

// A keyring that hangs (a locked collection waiting for a dialog) costs
// one timeout, then the file is used.
func TestHangingKeyringTimesOut(t *testing.T) {
	kr := &fakeKeyring{block: make(chan struct{})}
	defer close(kr.block)
	s := &Store{Keyring: kr, Dir: t.TempDir(), Timeout: 50 * time.Millisecond}
	loc, err := s.Save("sk-slow")
	require.NoError(t, err)
	require.Equal(t, KindFile, loc.Kind)
	require.Contains(t, loc.Fallback, "did not answer in time")
	key, _, err := s.Load()
	require.NoError(t, err)
	require.Equal(t, "sk-slow", key)
}

func TestFileReadableByOthersIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows files carry ACLs, not mode bits")
	}
	s := &Store{Dir: t.TempDir()}
	require.NoError(t, os.WriteFile(s.Path(), []byte("sk-leaky\n"), 0o644))
	require.NoError(t, os.Chmod(s.Path(), 0o644))
	key, _, err := s.Load()
	require.Error(t, err)
	require.Empty(t, key)
	require.Contains(t, err.Error(), "readable by others (mode 0644)")
}

func TestCheckRejectsWhatCannotBeAKey(t *testing.T) {
	for _, bad := range []string{"", "sk-a b", "sk-a\nb", "sk-\x00", "sk-é", string(make([]byte, 2000))} {
		require.Error(t, Check(bad), "%q", bad)
		_, err := (&Store{Dir: t.TempDir()}).Save(bad)
		require.Error(t, err, "%q", bad)
	}
	require.NoError(t, Check("sk-0123456789abcdef"))
}

func TestPrivateMode(t *testing.T) {
	require.NoError(t, privateMode("linux", 0o600))
	require.NoError(t, privateMode("darwin", 0o400))
	require.Error(t, privateMode("linux", 0o640))
	require.NoError(t, privateMode("windows", 0o666))
}

func TestLocationNames(t *testing.T) {
	require.Equal(t, "the macOS Keychain", KeyringName("darwin"))
	require.Equal(t, "the Windows Credential Manager", KeyringName("windows"))
	require.Equal(t, "the Secret Service keyring", KeyringName("linux"))
}

// System goes through go-keyring; its mock provider stands in for the OS
// store here, so the real user's keyring is never touched.
func TestSystemThroughGoKeyringMock(t *testing.T) {
	keyring.MockInit()
	s := &Store{Keyring: System(), Dir: t.TempDir()}
	loc, err := s.Save("sk-mock")
	require.NoError(t, err)
	require.Equal(t, KindKeyring, loc.Kind)
	got, err := keyring.Get(Service, Account)
	require.NoError(t, err)
	require.Equal(t, "sk-mock", got)
	_, err = s.Delete()
	require.NoError(t, err)
	_, err = keyring.Get(Service, Account)
	require.ErrorIs(t, err, keyring.ErrNotFound)
}
