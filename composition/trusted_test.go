package composition_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/composition"
)

// The grants file changed behind a running agent's back (as a confined
// command can, when a workspace root holds the state directory) does not
// let a full-access command run unasked: the forged file is byte for byte
// what a real "always allow in this project" writes (captured from another
// server), yet the agent asks, and refused, the command never runs —
// judged by the file it would have created outside. A grant the agent
// itself wrote is honoured, and one taken away behind its back is gone.
func TestForgedGrantsFileIsNotHonoured(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "PWNED")
	args, _ := json.Marshal(map[string]any{"command": "touch " + target, "description": "touch outside",
		"sandbox_permissions": "danger-full-access", "justification": "needed"})
	type server struct {
		home   string
		mu     sync.Mutex
		asked  int
		choice string
	}
	start := func(s *server) func(string) {
		p := newProvider()
		p.script("touch", toolCall{Name: "bash", Args: string(args)})
		answer := func(method string, _ json.RawMessage) any {
			if method != "session/request_permission" {
				return nil
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.asked++
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": s.choice}}
		}
		srv := serveWith(t, "default", openStore(t, t.TempDir()), ws, p, map[string]any{}, answer, func(so *composition.ServerOptions) {
			so.Getenv = func(k string) string {
				switch k {
				case "HOME":
					return s.home
				case "XDG_STATE_HOME":
					return filepath.Join(s.home, "state")
				}
				return ""
			}
		})
		sid := srv.newSession(t, ws).SessionID
		return func(text string) {
			stop, _ := srv.prompt(t, sid, text)
			require.Equal(t, "end_turn", stop)
		}
	}
	asked := func(s *server) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.asked
	}

	// A real grant, made in another server with its own state directory.
	real := &server{home: t.TempDir(), choice: "allow-project"}
	prompt := start(real)
	prompt("touch")
	require.Equal(t, 1, asked(real))
	require.FileExists(t, target)
	require.NoError(t, os.Remove(target))
	genuine, err := os.ReadFile(filepath.Join(real.home, "state", "dsh-acp", "permissions.json"))
	require.NoError(t, err)

	// The attacked server is running; its grants file is written behind
	// its back with those very bytes.
	victim := &server{home: t.TempDir(), choice: "reject-once"}
	prompt = start(victim)
	grants := filepath.Join(victim.home, "state", "dsh-acp", "permissions.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(grants), 0o700))
	require.NoError(t, os.WriteFile(grants, genuine, 0o600))
	prompt("touch")
	require.Equal(t, 1, asked(victim), "the forged grant was not honoured: the user was asked")
	require.NoFileExists(t, target, "refused, the command did not run")

	// Its own "always allow" is honoured...
	victim.mu.Lock()
	victim.choice = "allow-project"
	victim.mu.Unlock()
	prompt("touch")
	require.Equal(t, 2, asked(victim))
	require.FileExists(t, target)
	require.NoError(t, os.Remove(target))
	prompt("touch")
	require.Equal(t, 2, asked(victim), "a grant the agent wrote holds")
	require.FileExists(t, target)
	require.NoError(t, os.Remove(target))
	// ...and a grant removed behind its back is gone (narrowing is safe).
	require.NoError(t, os.WriteFile(grants, []byte(`{"projects":{}}`), 0o600))
	victim.mu.Lock()
	victim.choice = "reject-once"
	victim.mu.Unlock()
	prompt("touch")
	require.Equal(t, 3, asked(victim))
	require.NoFileExists(t, target)
}
