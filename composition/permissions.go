package composition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent"
)

// grantStore remembers the "always allow in this project" answers, per
// project directory, in the user's state directory
// ($XDG_STATE_HOME/dsh-acp/permissions.json). It implements
// acp.ProjectGrants. The file is a trustedFile: a grant that appears in it
// behind this process's back is never honoured.
type grantStore struct {
	file *trustedFile
}

// grantFile is the stored form: project → granted scopes.
type grantFile struct {
	Projects map[string][]string `json:"projects"`
}

// newGrantStore loads the grants file at path (at server start, before
// any command ran).
func newGrantStore(path string, log zerolog.Logger) *grantStore {
	decode := func(data []byte) (pairs, error) {
		var f grantFile
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, err
		}
		return pairs(f.Projects), nil
	}
	encode := func(p pairs) any {
		f := grantFile{Projects: map[string][]string(p)}
		if f.Projects == nil {
			f.Projects = map[string][]string{}
		}
		return f
	}
	return &grantStore{file: newTrustedFile(path, decode, encode, log)}
}

// Granted reports whether scope was always allowed in project.
func (g *grantStore) Granted(project, scope string) bool {
	return g.file.has(project, scope)
}

// Grant remembers scope for project.
func (g *grantStore) Grant(project, scope string) error {
	err := g.file.update(".permissions-*.tmp", func(p pairs) bool {
		if p.has(project, scope) {
			return false
		}
		p[project] = append(p[project], scope)
		return true
	})
	if err != nil {
		return fmt.Errorf("remember permissions: %w", err)
	}
	return nil
}

// Forget drops every grant of project and reports how many there were.
func (g *grantStore) Forget(project string) (int, error) {
	n := 0
	err := g.file.update(".permissions-*.tmp", func(p pairs) bool {
		n = len(p[project])
		delete(p, project)
		return n > 0
	})
	if err != nil {
		return 0, fmt.Errorf("remember permissions: %w", err)
	}
	return n, nil
}

// writeJSONFile replaces path with v as indented JSON, atomically: a temp
// file (named by pattern, 0600) in the same directory, renamed over path;
// the directory is created (0700) when missing. It returns the bytes
// written.
func writeJSONFile(path, pattern string, v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return nil, err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	return data, nil
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
