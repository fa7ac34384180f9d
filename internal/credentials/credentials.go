// Package credentials keeps the DeepSeek API key a person signed in with
// (dsh-acp --login): in the OS credential store (macOS Keychain, Windows
// Credential Manager, the Secret Service on Linux) through go-keyring, or,
// where none is usable (a headless Linux), in a file of mode 0600 under
// the config directory.
//
// The key in the environment always wins over the stored one; that
// precedence is the caller's (cmd/dsh-acp), this package only stores.
package credentials

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/zalando/go-keyring"
)

// Keyring is an OS credential store, as go-keyring offers one. System is
// the real one; tests pass a fake (or call keyring.MockInit).
type Keyring interface {
	Get(service, user string) (string, error)
	Set(service, user, secret string) error
	Delete(service, user string) error
}

// ErrNotFound is what a Keyring answers for a secret it does not hold.
var ErrNotFound = keyring.ErrNotFound

// System is the OS credential store through go-keyring.
func System() Keyring { return systemKeyring{} }

type systemKeyring struct{}

func (systemKeyring) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (systemKeyring) Set(service, user, secret string) error {
	return keyring.Set(service, user, secret)
}
func (systemKeyring) Delete(service, user string) error { return keyring.Delete(service, user) }

// The key's name in the credential store, and the fallback file's.
const (
	// Service is the keyring service the key is stored under.
	Service = "dsh-acp"
	// Account is the keyring account (user) of the key.
	Account = "deepseek-api-key"
	// FileName is the fallback file under the config directory.
	FileName = "deepseek-api-key"
)

// DefaultTimeout bounds one call to the OS credential store: a locked
// keyring can wait for an unlock dialog nobody answers, and the agent
// must not hang a prompt on it.
const DefaultTimeout = 5 * time.Second

// Store is where the signed-in key lives.
type Store struct {
	// Keyring is the OS credential store; nil stores in the file only
	// (DSH_ACP_CREDENTIAL_STORE=file).
	Keyring Keyring
	// Dir is the config directory holding the fallback file.
	Dir string
	// Timeout bounds each keyring call (DefaultTimeout when zero).
	Timeout time.Duration
	// NoKeyring says why Keyring is nil, when it is for want of one (Save
	// reports it with the file).
	NoKeyring string
}

// Kind says which store holds a key.
type Kind string

// The stores.
const (
	KindKeyring Kind = "keyring"
	KindFile    Kind = "file"
)

// Location is where a key was found or stored.
type Location struct {
	Kind Kind
	// Path is the file (KindFile).
	Path string
	// Fallback says why the file was used instead of the OS credential
	// store ("" when the keyring was not asked).
	Fallback string
}

// String says where, for a person: "the macOS Keychain", or "the file
// /home/u/.config/dsh-acp/deepseek-api-key (mode 0600; no OS credential
// store is usable: …)".
func (l Location) String() string {
	if l.Kind == KindKeyring {
		return KeyringName(runtime.GOOS)
	}
	s := "the file " + l.Path + " (mode 0600"
	if l.Fallback != "" {
		s += "; no OS credential store is usable: " + l.Fallback
	}
	return s + ")"
}

// KeyringName names the OS credential store of goos.
func KeyringName(goos string) string {
	switch goos {
	case "darwin":
		return "the macOS Keychain"
	case "windows":
		return "the Windows Credential Manager"
	}
	return "the Secret Service keyring"
}

// Path is the fallback file.
func (s *Store) Path() string { return filepath.Join(s.Dir, FileName) }

// Load returns the stored key and where it was found; "" and a zero
// Location when none is stored. The OS credential store is asked first,
// then the file. A file that others can read is an error, not a key.
func (s *Store) Load() (string, Location, error) {
	if s.Keyring != nil {
		key, err := s.keyring(func(k Keyring) (string, error) { return k.Get(Service, Account) })
		if err == nil && strings.TrimSpace(key) != "" {
			return strings.TrimSpace(key), Location{Kind: KindKeyring}, nil
		}
	}
	key, err := s.readFile()
	if err != nil || key == "" {
		return "", Location{}, err
	}
	return key, Location{Kind: KindFile, Path: s.Path()}, nil
}

// Save stores key: in the OS credential store when it takes it (and then
// removes an older file copy), else in the file, saying why.
func (s *Store) Save(key string) (Location, error) {
	if err := Check(key); err != nil {
		return Location{}, err
	}
	fallback := s.NoKeyring
	if s.Keyring != nil {
		_, err := s.keyring(func(k Keyring) (string, error) { return "", k.Set(Service, Account, key) })
		if err == nil {
			if err := os.Remove(s.Path()); err != nil && !errors.Is(err, os.ErrNotExist) {
				return Location{}, fmt.Errorf("the key is in %s, but the older copy %s could not be removed: %w", KeyringName(runtime.GOOS), s.Path(), err)
			}
			return Location{Kind: KindKeyring}, nil
		}
		fallback = err.Error()
	}
	if err := writeFile(s.Dir, s.Path(), key); err != nil {
		return Location{}, err
	}
	return Location{Kind: KindFile, Path: s.Path(), Fallback: fallback}, nil
}

// Delete forgets the stored key wherever it is and returns where it was
// (none: nothing was stored).
func (s *Store) Delete() ([]Location, error) {
	var gone []Location
	var errs []error
	if s.Keyring != nil {
		_, err := s.keyring(func(k Keyring) (string, error) { return "", k.Delete(Service, Account) })
		switch {
		case err == nil:
			gone = append(gone, Location{Kind: KindKeyring})
		case errors.Is(err, ErrNotFound):
		default:
			// A keyring that cannot be reached holds nothing of ours (a
			// headless Linux); one that still has the key refused.
			if _, gerr := s.keyring(func(k Keyring) (string, error) { return k.Get(Service, Account) }); gerr == nil {
				errs = append(errs, fmt.Errorf("remove the key from %s: %w", KeyringName(runtime.GOOS), err))
			}
		}
	}
	switch err := os.Remove(s.Path()); {
	case err == nil:
		gone = append(gone, Location{Kind: KindFile, Path: s.Path()})
	case !errors.Is(err, os.ErrNotExist):
		errs = append(errs, err)
	}
	return gone, errors.Join(errs...)
}

// Check rejects what cannot be an API key: empty, too long, or holding
// spaces or control characters (a paste that brought a line break).
func Check(key string) error {
	switch {
	case key == "":
		return errors.New("the key is empty")
	case len(key) > 1024:
		return errors.New("the key is longer than 1024 characters")
	}
	for _, r := range key {
		if r <= ' ' || r == 0x7f || r > '~' {
			return errors.New("the key holds a space, a control character or a non-ASCII character")
		}
	}
	return nil
}

// errTimeout is a keyring that did not answer in time.
var errTimeout = errors.New("the OS credential store did not answer in time")

// keyring runs op against the keyring within the timeout.
func (s *Store) keyring(op func(Keyring) (string, error)) (string, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := op(s.Keyring)
		done <- result{v, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		return "", errTimeout
	}
}
