// Package layers checks that the module's packages import one way: each
// package belongs to a layer, and a package imports only its own layer and
// the layers below it, plus a few named rules the layer order alone does
// not express (acp never imports a model provider). Its test runs the
// check on the real import graph (go list), so an upward import fails
// `go test ./...`.
package layers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Package is one package of the module in an import graph.
type Package struct {
	// Path is the import path relative to the module ("acp", "agent/llm").
	Path string
	// Imports are the module's own packages it imports (relative paths);
	// test files are not counted: a test may drive any layer.
	Imports []string
	// TestSupport marks a helper that exists for tests (it imports
	// "testing", or is listed in Rules.TestOnly): it may assemble any
	// layers, and only other test support may import it.
	TestSupport bool
}

// Layer is one rank of the order: the packages its patterns match. A
// pattern is a relative import path, or "p/..." for p and every package
// beneath it.
type Layer struct {
	Name     string
	Patterns []string
}

// Ban forbids imports that the layer order would allow.
type Ban struct {
	// From and To are patterns; Why says which rule it is.
	From, To, Why string
}

// Rules is the layer order, top to bottom, and the bans.
type Rules struct {
	Layers []Layer
	Bans   []Ban
	// TestOnly are patterns of test support that does not import testing
	// itself (embedded fixtures).
	TestOnly []string
}

// Violation is one import the rules refuse.
type Violation struct {
	From, To string
	Why      string
}

// String is the violation as a report line.
func (v Violation) String() string {
	if v.To == "" {
		return fmt.Sprintf("%s: %s", v.From, v.Why)
	}
	return fmt.Sprintf("%s imports %s: %s", v.From, v.To, v.Why)
}

// Module is dsh-acp's layer order: cmd → snapshots → composition → acp →
// agent (the loop, the model layer, the agent test kit) → capabilities
// (the tool families and the pipeline chains they plug into) → session,
// approval, sandbox → internal helpers.
func Module() Rules {
	return Rules{
		Layers: []Layer{
			{"binaries", []string{"cmd/...", "bench/...", "reliability"}},
			{"harness", []string{"snapshots/..."}},
			{"composition", []string{"composition/..."}},
			{"wire", []string{"acp/..."}},
			{"agent", []string{"agent/..."}},
			{"capabilities", []string{"capabilities/..."}},
			{"foundation", []string{"session/...", "approval/...", "sandbox/..."}},
			{"helpers", []string{"internal/...", "fixtures/..."}},
		},
		Bans: []Ban{
			{"acp/...", "agent/llm/deepseek/...", "acp never imports a model provider"},
			{"acp/...", "agent/llm/replay/...", "acp never imports a model provider"},
			{"capabilities/...", "agent/...", "capabilities never import agent"},
		},
		TestOnly: []string{"fixtures/...", "agent/llm/llmtest"},
	}
}

// Match reports whether the relative import path matches pattern.
func Match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// rank is the index of the first layer a pattern of which matches path,
// or -1.
func (r Rules) rank(path string) int {
	for i, l := range r.Layers {
		for _, p := range l.Patterns {
			if Match(p, path) {
				return i
			}
		}
	}
	return -1
}

func (r Rules) testOnly(p Package) bool {
	return p.TestSupport || slices.ContainsFunc(r.TestOnly, func(pat string) bool { return Match(pat, p.Path) })
}

// Check returns every import of graph that the rules refuse, in graph
// order: packages in no layer, imports of a higher layer, banned imports,
// and production code importing test support.
func (r Rules) Check(graph []Package) []Violation {
	byPath := make(map[string]Package, len(graph))
	for _, p := range graph {
		byPath[p.Path] = p
	}
	var out []Violation
	for _, p := range graph {
		from := r.rank(p.Path)
		if from < 0 {
			out = append(out, Violation{From: p.Path, Why: "in no layer (place it in internal/layers.Module)"})
			continue
		}
		if r.testOnly(p) {
			continue // linked into tests only: it may assemble any layers
		}
		for _, imp := range p.Imports {
			if dep, ok := byPath[imp]; ok && r.testOnly(dep) {
				out = append(out, Violation{p.Path, imp, "only tests may import test support"})
				continue
			}
			banned := false
			for _, b := range r.Bans {
				if Match(b.From, p.Path) && Match(b.To, imp) {
					out = append(out, Violation{p.Path, imp, b.Why})
					banned = true
				}
			}
			if banned {
				continue
			}
			if to := r.rank(imp); to >= 0 && to < from {
				out = append(out, Violation{p.Path, imp, fmt.Sprintf("layer %q imports the higher layer %q",
					r.Layers[from].Name, r.Layers[to].Name)})
			}
		}
	}
	return out
}

// listed is the part of `go list -json` Load reads.
type listed struct {
	ImportPath string
	Module     *struct{ Path string }
	Imports    []string
}

// Load lists the packages of the module in dir with `go list -json` and
// returns their graph: relative paths, the module's own imports only.
func Load(ctx context.Context, dir string) ([]Package, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-json=ImportPath,Module,Imports", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	var graph []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if l.Module == nil {
			return nil, fmt.Errorf("go list: %s is in no module", l.ImportPath)
		}
		mod := l.Module.Path
		p := Package{Path: relative(mod, l.ImportPath)}
		for _, imp := range l.Imports {
			switch {
			case imp == "testing":
				p.TestSupport = true
			case imp == mod || strings.HasPrefix(imp, mod+"/"):
				p.Imports = append(p.Imports, relative(mod, imp))
			}
		}
		graph = append(graph, p)
	}
	return graph, nil
}

func relative(mod, path string) string {
	if path == mod {
		return "."
	}
	return strings.TrimPrefix(path, mod+"/")
}
