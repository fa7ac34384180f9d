package snapshots

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/shared"
)

// seedFiles adds every file named name under the scenario corpora (ours,
// and upstream's when it is beside the repository) as a fuzz seed.
func seedFiles(f *testing.F, name string) {
	upstream, _ := shared.Lookup(shared.Upstream) // "" without it: ours only
	for _, root := range []string{"testdata", upstream} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == name {
				if data, err := os.ReadFile(p); err == nil && len(data) < 1<<16 {
					f.Add(data)
				}
			}
			return nil
		})
	}
}

// FuzzScenarioLoad feeds arbitrary input.json texts to the scenario loader:
// it never panics, and a scenario it accepts keeps its steps when its input
// is encoded and loaded again.
func FuzzScenarioLoad(f *testing.F) {
	seedFiles(f, "input.json")
	f.Add([]byte(`{"steps":[{"op":"initialize"},{"op":"prompt","text":"hi"}]}`))
	f.Add([]byte(`{"steps":null,"permissionAnswers":[{}]}`))
	f.Add([]byte(`[]`))
	meta := []byte(`{"composition":"default","hasModelTurn":false}`)
	f.Fuzz(func(t *testing.T, input []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "input.json"), input, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "scenario.json"), meta, 0o600); err != nil {
			t.Fatal(err)
		}
		sc, err := Load(dir)
		if err != nil {
			return
		}
		again, err := json.Marshal(sc.Input)
		if err != nil {
			t.Fatalf("an accepted input does not encode: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "input.json"), again, 0o600); err != nil {
			t.Fatal(err)
		}
		sc2, err := Load(dir)
		if err != nil {
			t.Fatalf("re-encoded input refused: %v\n%s", err, again)
		}
		if len(sc2.Input.Steps) != len(sc.Input.Steps) {
			t.Fatalf("steps changed: %d → %d", len(sc.Input.Steps), len(sc2.Input.Steps))
		}
	})
}

// FuzzNormalize feeds arbitrary recorded output to the JS JSON parser and
// the stdout/log normalizers: no panic, and JSON.stringify of a parsed text
// is a fixed point (stringify(parse(stringify(x))) == stringify(x)).
func FuzzNormalize(f *testing.F) {
	seedFiles(f, "stdout.golden.jsonl")
	f.Add([]byte(`{"b":1,"1":2,"s":"\ud800","n":1e21}` + "\n" + `{"jsonrpc":"2.0","id":0,"result":{}}`))
	f.Add([]byte("\xff\xfe{\"a\":[1,2,{\"b\":null}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, line := range bytes.Split(data, []byte("\n")) {
			out, err := StringifyJS(line)
			if err != nil {
				continue
			}
			again, err := StringifyJS(out)
			if err != nil {
				t.Fatalf("stringify output does not parse: %v\n%q", err, out)
			}
			if !bytes.Equal(out, again) {
				t.Fatalf("stringify is not a fixed point:\n%q\n%q", out, again)
			}
		}
		_, _ = NormalizeStdout(data, "/tmp/ws", []string{"s-1"})
		_, _ = NormalizeLog(data, "/tmp/ws", []string{"s-1"}, true)
	})
}
