package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/dsh-acp/dsh-acp/agent/llm/deepseek"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/credentials"
)

// loginArgs are the arguments of the terminal sign-in, as advertised.
var loginArgs = []string{"--login"}

// credentialStoreEnv chooses the store: "auto" (the default: the OS
// credential store, else the file) or "file".
const credentialStoreEnv = "DSH_ACP_CREDENTIAL_STORE"

// credentialStore is where a signed-in key lives for this environment.
func credentialStore(getenv func(string) string) (*credentials.Store, error) {
	s := &credentials.Store{Dir: configDir(getenv)}
	switch v := getenv(credentialStoreEnv); v {
	case "", "auto":
		if why := noSessionBus(runtime.GOOS, getenv); why != "" {
			s.NoKeyring = why
			break
		}
		s.Keyring = credentials.System()
	case "file":
	default:
		return nil, fmt.Errorf("%s=%q: use \"auto\" (the OS credential store, else a file) or \"file\"", credentialStoreEnv, v)
	}
	return s, nil
}

// noSessionBus says why the Secret Service cannot be reached on a Linux
// without a D-Bus session bus ("" when there may be one), looking where
// go-keyring's D-Bus library looks (the variable, the runtime directory's
// bus socket or session file): past those it would try to start a bus
// (dbus-launch) at every lookup.
func noSessionBus(goos string, getenv func(string) string) string {
	if goos != "linux" {
		return ""
	}
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return ""
	}
	dirs := []string{fmt.Sprintf("/run/user/%d", os.Getuid())}
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" {
		dirs = append(dirs, rt)
	}
	for _, d := range dirs {
		for _, f := range []string{"bus", "dbus-session"} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				return ""
			}
		}
	}
	return "no D-Bus session bus for the Secret Service (DBUS_SESSION_BUS_ADDRESS is unset)"
}

// configDir is the directory of the default config file (DSH_ACP_CONFIG
// names a file, perhaps shared; the key stays in the user's own dir).
func configDir(getenv func(string) string) string {
	return filepath.Dir(composition.ConfigPath(func(k string) string {
		if k == "DSH_ACP_CONFIG" {
			return ""
		}
		return getenv(k)
	}))
}

// keys finds the API key: the environment's variable (the config's
// apiKeyEnv, else DEEPSEEK_API_KEY) first, then the signed-in one.
type keys struct {
	env    string
	getenv func(string) string
	store  *credentials.Store // nil: the environment only
}

// fromEnv is the environment's key.
func (k keys) fromEnv() string { return strings.TrimSpace(k.getenv(k.env)) }

// key returns the key in effect ("" when there is none) and whether it
// came from the credential store. A store that fails is no key, logged
// by the caller through err.
func (k keys) key() (key string, stored bool, err error) {
	if v := k.fromEnv(); v != "" {
		return v, false, nil
	}
	if k.store == nil {
		return "", false, nil
	}
	v, _, err := k.store.Load()
	return v, v != "", err
}

func newKeys(user composition.UserConfig, store *credentials.Store, getenv func(string) string) keys {
	env := user.APIKeyEnv
	if env == "" {
		env = composition.DefaultAPIKeyEnv
	}
	return keys{env: env, getenv: getenv, store: store}
}

// baseURL is the API root: the config's, else DEEPSEEK_BASE_URL, else
// DeepSeek's.
func baseURL(user composition.UserConfig, getenv func(string) string) string {
	if user.BaseURL != "" {
		return user.BaseURL
	}
	if b := getenv("DEEPSEEK_BASE_URL"); b != "" {
		return b
	}
	return deepseek.DefaultBaseURL
}

// errCancelled is a sign-in the person broke off.
var errCancelled = errors.New("sign-in cancelled; nothing was stored")

// login is --login: ask for the key without echoing it, check it with
// one authenticated request against the configured endpoint, store it.
func login(ctx context.Context, user composition.UserConfig, store *credentials.Store, stdin io.Reader, stderr io.Writer, getenv func(string) string) error {
	base := baseURL(user, getenv)
	fmt.Fprintf(stderr, "Sign in to DeepSeek for dsh-acp. Create an API key at https://platform.deepseek.com/api_keys and paste it here.\n")
	key, err := readSecret(ctx, stdin, stderr, "DeepSeek API key (input hidden): ")
	if err != nil {
		return err
	}
	if key == "" {
		return errCancelled
	}
	if err := credentials.Check(key); err != nil {
		return fmt.Errorf("%w; nothing was stored", err)
	}
	fmt.Fprintf(stderr, "Checking the key with %s ...\n", base)
	if err := checkKey(ctx, base, key); err != nil {
		return fmt.Errorf("%w; nothing was stored", err)
	}
	where, err := store.Save(key)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Signed in: the key works and is stored in %s.\n", where)
	if k := newKeys(user, store, getenv); k.fromEnv() != "" {
		fmt.Fprintf(stderr, "Note: %s is set in this environment and is used instead of the stored key while it is.\n", k.env)
	}
	return nil
}

// logout is --logout: forget the stored key.
func logout(user composition.UserConfig, store *credentials.Store, stderr io.Writer, getenv func(string) string) error {
	gone, err := store.Delete()
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		fmt.Fprintln(stderr, "Signed out: no key was stored.")
	} else {
		names := make([]string, len(gone))
		for i, l := range gone {
			names[i] = l.String()
		}
		fmt.Fprintf(stderr, "Signed out: the key was removed from %s.\n", strings.Join(names, " and "))
	}
	if k := newKeys(user, store, getenv); k.fromEnv() != "" {
		fmt.Fprintf(stderr, "Note: %s is still set in this environment, and dsh-acp uses it.\n", k.env)
	}
	return nil
}

// readSecret reads one line: without echo from a terminal (Ctrl-C or
// Ctrl-D cancel, the terminal is left as it was), else from whatever
// stdin is (a pipe: `dsh-acp --login < keyfile`).
func readSecret(ctx context.Context, stdin io.Reader, stderr io.Writer, prompt string) (string, error) {
	fmt.Fprint(stderr, prompt)
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		fmt.Fprintln(stderr)
		if err != nil && (!errors.Is(err, io.EOF) || line == "") {
			return "", errCancelled
		}
		return strings.TrimSpace(line), nil
	}
	fd := int(f.Fd())
	state, err := term.GetState(fd)
	if err != nil {
		return "", err
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := term.ReadPassword(fd)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		fmt.Fprintln(stderr) // the Enter was not echoed either
		if r.err != nil {
			return "", errCancelled
		}
		return strings.TrimSpace(string(r.b)), nil
	case <-ctx.Done():
		// Ctrl-C: ReadPassword is still reading; give the terminal its
		// echo back before leaving.
		_ = term.Restore(fd, state)
		fmt.Fprintln(stderr)
		return "", errCancelled
	}
}

// checkTimeout bounds the key check.
const checkTimeout = 20 * time.Second

// checkKey sends one cheap authenticated request (the model list) to the
// API at base.
func checkKey(ctx context.Context, base, key string) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return fmt.Errorf("the API address %q is not usable: %w", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("User-Agent", "dsh-acp/"+version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return errCancelled
		}
		return fmt.Errorf("could not reach %s to check the key: %w", base, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s refused the key (HTTP %d): check that it is copied whole and still active", base, resp.StatusCode)
	}
	return fmt.Errorf("could not check the key: %s answered HTTP %d", base, resp.StatusCode)
}
