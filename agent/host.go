package agent

import (
	"path/filepath"
	"slices"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// SessionOptions is what a new or reopened session is given.
type SessionOptions struct {
	// Cwd is a new session's working directory (absolute). ResumeSession
	// ignores it: a stored session keeps its own.
	Cwd string
	// Roots are workspace roots beyond Cwd (absolute directories: the
	// editor's additionalDirectories). A new session records them in a
	// workspace/roots event; a reopened one keeps its recorded roots and
	// records the union when Roots adds any.
	Roots []string
	// Host returns what the editor hosts for the session with the given id
	// (files, terminals, the asker); nil, or a nil result, means
	// everything local. The session adds its roots and its own services
	// (knobs, modes, spawn, dispatch, inject) to it.
	Host func(id string) *capabilities.Host
	// OnSpawn, when set, is told of every child agent of the session (and
	// of its children) right after it is created and before it runs (an
	// editor that shows child sessions announces it and follows its log);
	// title is ChildOptions.Title.
	OnSpawn func(parent, child *Session, title string)
}

// TypeWorkspaceRoots records a session's workspace roots beyond its cwd;
// the last one is in force. It is logged only when there are such roots, so
// sessions without them log exactly what upstream logs.
const TypeWorkspaceRoots = "workspace/roots"

// WorkspaceRoots is the payload of workspace/roots.
type WorkspaceRoots struct {
	Roots []string `json:"roots"`
}

// loggedRoots folds the workspace roots from events.
func loggedRoots(events []session.Event) []string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeWorkspaceRoots {
			continue
		}
		var r WorkspaceRoots
		if events[i].Decode(&r) == nil {
			return r.Roots
		}
	}
	return nil
}

// mergeRoots returns have followed by the clean roots of add it lacks.
func mergeRoots(have, add []string) []string {
	out := slices.Clone(have)
	for _, r := range add {
		if r = filepath.Clean(r); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// recordRoots logs the session's roots when o adds any to the logged ones,
// and returns them.
func recordRoots(log *session.Log, o SessionOptions) []string {
	have := loggedRoots(log.Events())
	roots := mergeRoots(have, o.Roots)
	if len(roots) > len(have) {
		log.Append(TypeWorkspaceRoots, WorkspaceRoots{Roots: roots})
	}
	return roots
}

// hostFor builds the session's host: what the editor hosts (client, may be
// nil), the session's roots, and the session's own services.
func (s *Session) hostFor(client *capabilities.Host, roots []string) *capabilities.Host {
	var h capabilities.Host
	if client != nil {
		h = *client
	}
	h.Roots = roots
	h.Knobs, h.Modes, h.Spawner, h.Dispatcher, h.Injector = s, s, s, s, s
	return &h
}

// clientHost asks o for what the editor hosts for session id.
func (o SessionOptions) clientHost(id string) *capabilities.Host {
	if o.Host == nil {
		return nil
	}
	return o.Host(id)
}

// childHost is what a child of s is hosted with: the parent's editor parts
// (its files and terminals, addressed as the parent's session; its asker;
// its roots) and the child's own services.
func (s *Session) childHost() *capabilities.Host {
	client := capabilities.HostOf(s)
	client.Knobs, client.Modes, client.Spawner, client.Dispatcher, client.Injector, client.Tools = nil, nil, nil, nil, nil, nil
	return &client
}
