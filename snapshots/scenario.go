// Package snapshots is the replay/record harness: it runs scripted ACP
// clients against the agent with a recorded model, normalizes what the
// agent wrote (stdout and session logs) and compares it byte for byte with
// the scenario's goldens (replay contract).
package snapshots

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Step is one scripted client op.
type Step struct {
	Op                    string          `json:"op"`
	Text                  string          `json:"text,omitempty"`
	TerminalOutput        bool            `json:"terminalOutput,omitempty"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitempty"`
	ConfigID              string          `json:"configId,omitempty"`
	Value                 json.RawMessage `json:"value,omitempty"`
	ModeID                string          `json:"modeId,omitempty"`
	// Prompt, when set, is the prompt's content blocks as sent (resource
	// links, embedded resources, images); Text is then ignored.
	Prompt json.RawMessage `json:"prompt,omitempty"`
	// SessionID targets a stored session (loadSession op, our extension).
	SessionID string `json:"sessionId,omitempty"`
	// Server names a declared MCP server (crashMcpServer op).
	Server string `json:"server,omitempty"`
}

// PermissionAnswer scripts the answer to one session/request_permission.
type PermissionAnswer struct {
	Kind string `json:"kind"`
}

// ElicitationAnswer scripts the answer to one elicitation/create.
type ElicitationAnswer struct {
	Action string          `json:"action"`
	Choice json.RawMessage `json:"choice,omitempty"`
	Custom json.RawMessage `json:"custom,omitempty"`
}

// Input is a scenario's input.json.
type Input struct {
	Steps              []Step              `json:"steps"`
	PermissionAnswers  []PermissionAnswer  `json:"permissionAnswers,omitempty"`
	ElicitationAnswers []ElicitationAnswer `json:"elicitationAnswers,omitempty"`
	// Client, when set, makes the scripted client an editor that hosts
	// files and terminals (our corpus; upstream's client advertises
	// neither).
	Client *Client `json:"client,omitempty"`
}

// Client declares what the scripted client hosts, the way Zed does, and
// advertises in initialize.
type Client struct {
	// FS serves fs/read_text_file and fs/write_text_file over the run's
	// working directory (fs.readTextFile, fs.writeTextFile).
	FS bool `json:"fs,omitempty"`
	// Buffers are unsaved editor buffers by path (relative to the
	// working directory, or absolute): a read sees the buffer instead of
	// the disk, a write to it stays in the buffer. They imply FS.
	Buffers map[string]string `json:"buffers,omitempty"`
	// Terminal serves terminal/* by really running the commands (the
	// terminal capability).
	Terminal bool `json:"terminal,omitempty"`
}

// Meta is what the harness must know about a scenario beyond its files.
type Meta struct {
	Suite         string `json:"suite,omitempty"`
	Name          string `json:"name,omitempty"`
	Composition   string `json:"composition"`
	HasModelTurn  bool   `json:"hasModelTurn"`
	ComparesLog   *bool  `json:"comparesLog,omitempty"`
	ChildSessions int    `json:"childSessions,omitempty"`
	PinsHeader    bool   `json:"pinsHeader,omitempty"`
	// MCPServers are client MCP servers the runner serves and lists in
	// session/new and session/load (our corpus; upstream's sends none).
	MCPServers []MCPServer `json:"mcpServers,omitempty"`
}

// Scenario is one loaded scenario folder.
type Scenario struct {
	Dir   string
	Input Input
	Meta  Meta
	// Own is true for our own scenarios (per-folder scenario.json), which
	// --update may rewrite; the upstream corpus is read-only.
	Own bool
}

// Name is suite/name for reports.
func (s *Scenario) Name() string {
	if s.Meta.Suite != "" {
		return s.Meta.Suite + "/" + s.Meta.Name
	}
	return filepath.Base(s.Dir)
}

// ComparesLog reports whether session logs are compared (default: when the
// scenario has a model turn).
func (s *Scenario) ComparesLog() bool {
	if s.Meta.ComparesLog != nil {
		return *s.Meta.ComparesLog
	}
	return s.Meta.HasModelTurn
}

// File returns the path of a file in the scenario folder.
func (s *Scenario) File(name string) string { return filepath.Join(s.Dir, name) }

// ChildFiles returns the subagent child logs in order.
func (s *Scenario) ChildFiles() []string {
	var out []string
	for i := 1; ; i++ {
		p := s.File(fmt.Sprintf("session.%d.jsonl", i))
		if _, err := os.Stat(p); err != nil {
			return out
		}
		out = append(out, p)
	}
}

// Discover resolves PATH (a scenario folder, its input.json, or a folder of
// scenario folders, searched recursively) into scenarios, sorted by folder.
func Discover(path string) ([]*Scenario, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if !st.IsDir() {
		abs = filepath.Dir(abs)
	}
	var dirs []string
	err = filepath.WalkDir(abs, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "input.json" {
			dirs = append(dirs, filepath.Dir(p))
		}
		if d.IsDir() && d.Name() == "workspace" {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("replay: no scenario (input.json) under %s", path)
	}
	sort.Strings(dirs)
	out := make([]*Scenario, 0, len(dirs))
	for _, d := range dirs {
		sc, err := Load(d)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// Load reads one scenario folder: input.json plus its meta, from a
// per-folder scenario.json (our corpora) or the corpus's scenarios.json two
// levels up (upstream's layout: <root>/<suite>/<name>).
func Load(dir string) (*Scenario, error) {
	sc := &Scenario{Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if err := json.Unmarshal(data, &sc.Input); err != nil {
		return nil, fmt.Errorf("replay: %s/input.json: %w", dir, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "scenario.json")); err == nil {
		if err := json.Unmarshal(data, &sc.Meta); err != nil {
			return nil, fmt.Errorf("replay: %s/scenario.json: %w", dir, err)
		}
		sc.Own = true
		if sc.Meta.Name == "" {
			sc.Meta.Name = filepath.Base(dir)
		}
		if sc.Meta.Suite == "" {
			sc.Meta.Suite = filepath.Base(filepath.Dir(dir))
		}
		return sc, nil
	}
	suite, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
	index := filepath.Join(filepath.Dir(filepath.Dir(dir)), "scenarios.json")
	data, err = os.ReadFile(index)
	if err != nil {
		return nil, fmt.Errorf("replay: %s has neither scenario.json nor an index at %s", dir, index)
	}
	var idx struct {
		Scenarios []Meta `json:"scenarios"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("replay: %s: %w", index, err)
	}
	for _, m := range idx.Scenarios {
		if m.Suite == suite && m.Name == name {
			sc.Meta = m
			return sc, nil
		}
	}
	return nil, errors.New("replay: " + suite + "/" + name + " is not listed in " + index)
}
