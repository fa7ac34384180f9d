package dist

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The registry entry's fixed fields.
const (
	// AgentID is the registry id.
	AgentID = "dsh-acp"
	// AgentName is the display name.
	AgentName = "dsh-acp"
	// AgentDescription is the one-line description.
	AgentDescription = "DeepSeek coding agent: sandboxed commands, edits through the editor's review, durable sessions"
	// Repository is the source repository.
	Repository = "https://github.com/dsh-acp/dsh-acp"
	// License is the SPDX identifier of LICENSE.
	License = "MIT"
)

// Authors are the entry's authors.
var Authors = []string{"The dsh-acp authors"}

// entry is agent.json, its fields in the registry's order (FORMAT.md).
type entry struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository"`
	Authors      []string     `json:"authors"`
	License      string       `json:"license"`
	Distribution distribution `json:"distribution"`
}

type distribution struct {
	Binary map[string]binaryTarget `json:"binary"`
}

type binaryTarget struct {
	Archive string `json:"archive"`
	Cmd     string `json:"cmd"`
}

// Manifest is agent.json for the archives built: each target's archive
// URL under cfg.BaseURL, and the agent's executable as its command.
func Manifest(cfg Config, archives []Artifact) ([]byte, error) {
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return nil, err
	}
	if len(archives) == 0 {
		return nil, errors.New("dist: no archive to list")
	}
	e := entry{ID: AgentID, Name: AgentName, Version: cfg.Version, Description: AgentDescription,
		Repository: Repository, Authors: Authors, License: License,
		Distribution: distribution{Binary: map[string]binaryTarget{}}}
	base := strings.TrimRight(cfg.BaseURL, "/")
	for _, a := range archives {
		e.Distribution.Binary[a.Target.Name] = binaryTarget{
			Archive: base + "/" + url.PathEscape(a.Name),
			Cmd:     "./" + a.Target.Exe(commandName(cfg.Commands[0])),
		}
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// checkBaseURL accepts an absolute http(s) URL without query or fragment.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("release base URL %q is not an absolute http(s) URL without query (like https://github.com/dsh-acp/dsh-acp/releases/download/v0.3.0)", s)
	}
	return nil
}
