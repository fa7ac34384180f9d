package composition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent"
)

// grantStore remembers the "always allow in this project" answers, per
// project directory, in the user's state directory
// ($XDG_STATE_HOME/dsh-acp/permissions.json). It implements
// acp.ProjectGrants.
type grantStore struct {
	path string
	mu   sync.Mutex
}

// grantFile is the stored form: project → granted scopes.
type grantFile struct {
	Projects map[string][]string `json:"projects"`
}

func (g *grantStore) read() grantFile {
	var f grantFile
	if data, err := os.ReadFile(g.path); err == nil {
		_ = json.Unmarshal(data, &f)
	}
	if f.Projects == nil {
		f.Projects = map[string][]string{}
	}
	return f
}

// Granted reports whether scope was always allowed in project.
func (g *grantStore) Granted(project, scope string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Contains(g.read().Projects[project], scope)
}

// Grant remembers scope for project.
func (g *grantStore) Grant(project, scope string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.read()
	if !slices.Contains(f.Projects[project], scope) {
		f.Projects[project] = append(f.Projects[project], scope)
	}
	return g.write(f)
}

// Forget drops every grant of project and reports how many there were.
func (g *grantStore) Forget(project string) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.read()
	n := len(f.Projects[project])
	if n == 0 {
		return 0, nil
	}
	delete(f.Projects, project)
	return n, g.write(f)
}

// write replaces the file atomically (temp file, rename).
func (g *grantStore) write(f grantFile) error {
	if err := writeJSONFile(g.path, ".permissions-*.tmp", f); err != nil {
		return fmt.Errorf("remember permissions: %w", err)
	}
	return nil
}

// writeJSONFile replaces path with v as indented JSON, atomically: a temp
// file (named by pattern) in the same directory, renamed over path; the
// directory is created (0700) when missing.
func writeJSONFile(path, pattern string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// stateDir is the user's dsh-acp state directory.
func stateDir(getenv func(string) string) string {
	return filepath.Dir(DefaultSessionsRoot(getenv))
}

// clearPermissionsCommand is /clear-permissions: forgets what was always
// allowed for the session's project (its grants and its hooks consent).
func clearPermissionsCommand(grants *grantStore, consent *consentStore) agent.Command {
	return agent.Command{Name: "clear-permissions", Description: "Forget what you always allowed in this project (commands, writes, its hooks)",
		Run: func(_ context.Context, s *agent.Session, _ string) string {
			n, err := grants.Forget(s.Cwd())
			if err != nil {
				return "Cannot clear the permissions: " + err.Error()
			}
			hooks, err := consent.forget(s.Cwd())
			if err != nil {
				return "Cannot clear the hooks consent: " + err.Error()
			}
			if n == 0 && !hooks {
				return "Nothing was always allowed in this project."
			}
			msg := fmt.Sprintf("Cleared %d permission(s) always allowed in this project", n)
			if hooks {
				msg += " and the consent to its hooks"
			}
			return msg + "; you will be asked again."
		}}
}
