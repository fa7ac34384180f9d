package composition_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeCall is a write tool call.
func writeCall(path, content string) toolCall {
	args, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return toolCall{Name: "write", Args: string(args)}
}

// answerWith answers every permission request with option (or cancels
// when option is ""), recording the requests.
func answerWith(option string, asked *[]string) agentAnswer {
	return func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		*asked = append(*asked, string(params))
		if option == "" {
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": option}}
	}
}

// File tools obey the session's sandbox mode over the real wire: a write
// under read-only asks, and the answer decides what reaches the disk; a
// write outside the root asks under workspace-write; every decision is in
// the log, and a loaded session shows the same cards.
func TestFileToolsObeyTheSandboxMode(t *testing.T) {
	cases := []struct {
		name, mode, option string
		outside            bool
		asks, written      bool
		widened            string
	}{
		{name: "read-only allow once", mode: "read-only", option: "allow-once", asks: true, written: true},
		{name: "read-only allow always", mode: "read-only", option: "allow-always", asks: true, written: true, widened: "workspace-write"},
		{name: "read-only reject", mode: "read-only", option: "reject-once", asks: true},
		{name: "read-only cancelled", mode: "read-only", option: "", asks: true},
		{name: "workspace-write inside", mode: "workspace-write", written: true},
		{name: "workspace-write outside allow once", mode: "workspace-write", option: "allow-once", outside: true, asks: true, written: true},
		{name: "workspace-write outside reject", mode: "workspace-write", option: "reject-once", outside: true, asks: true},
		{name: "danger-full-access outside", mode: "danger-full-access", outside: true, written: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, ws, away := t.TempDir(), t.TempDir(), t.TempDir()
			target := filepath.Join(ws, "note.txt")
			if tc.outside {
				target = filepath.Join(away, "note.txt")
			}
			p := newProvider()
			p.script("write it", writeCall(target, "hello\n"))
			var asked []string
			srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answerWith(tc.option, &asked))
			sid := srv.newSession(t, ws).SessionID
			if tc.mode != "workspace-write" {
				srv.setConfig(t, sid, "sandbox-mode", tc.mode)
			}
			stop, live := srv.prompt(t, sid, "write it")
			require.Equal(t, "end_turn", stop)

			if tc.asks {
				require.Len(t, asked, 1)
				assert.Contains(t, asked[0], `"toolCallId"`)
			} else {
				assert.Empty(t, asked)
			}
			data, err := os.ReadFile(target)
			if tc.written {
				require.NoError(t, err)
				assert.Equal(t, "hello\n", string(data))
			} else {
				assert.True(t, os.IsNotExist(err), "nothing reached the disk")
			}
			evs := readLog(t, root, sid)
			if tc.asks {
				require.Len(t, ofType(evs, "approval/asked"), 1)
				assert.Contains(t, ofType(evs, "approval/asked")[0], `"toolName":"write"`)
				require.Len(t, ofType(evs, "approval/decided"), 1)
			} else {
				assert.Empty(t, ofType(evs, "approval/asked"))
			}
			res := lastResult(t, root, sid)
			assert.Equal(t, !tc.written, strings.HasPrefix(res.text(), "Error: "), res.text())
			if tc.widened != "" {
				assert.Equal(t, []string{`{"mode":"` + tc.widened + `"}`}, ofType(evs, "bash/sandbox-mode")[1:])
			}

			// A loaded session renders the same cards.
			srv.stop()
			srv2 := serve(t, "default", openStore(t, root), ws, newProvider(), map[string]any{}, nil)
			mark := srv2.c.mark()
			srv2.loadSession(t, sid, ws)
			// (Less the live status change back to in_progress after an
			// approval: a load shows where each call ended.)
			assert.Equal(t, withoutStatusOnly(toolUpdates(updates(live, sid))), toolUpdates(updates(srv2.c.since(mark), sid)))
		})
	}
}

// withoutStatusOnly drops the updates that only change a card's status.
func withoutStatusOnly(us []string) []string {
	var out []string
	for _, u := range us {
		var v map[string]json.RawMessage
		if json.Unmarshal([]byte(u), &v) == nil && len(v) == 3 && v["status"] != nil && v["toolCallId"] != nil {
			continue
		}
		out = append(out, u)
	}
	return out
}

// toolUpdates keeps the tool card updates.
func toolUpdates(us []string) []string {
	var out []string
	for _, u := range us {
		if strings.Contains(u, `"sessionUpdate":"tool_call`) {
			out = append(out, u)
		}
	}
	return out
}
