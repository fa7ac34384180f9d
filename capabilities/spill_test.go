package capabilities_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// big returns a result of n numbered lines.
type big struct{ lines int }

func (big) Name() string                 { return "big" }
func (big) Description() string          { return "big" }
func (big) Schema() *capabilities.Schema { return capabilities.Object() }
func (big) Traits() capabilities.Traits  { return capabilities.Traits{} }
func (b big) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	var s strings.Builder
	for i := 1; i <= b.lines; i++ {
		s.WriteString("line ")
		s.WriteString(strings.Repeat("é", i%7))
		s.WriteString(" ")
		s.WriteString(strings.Repeat("x", 40))
		s.WriteString("\n")
	}
	return capabilities.TextResult(s.String()), nil
}

type spillEnv struct{ cwd string }

func (e spillEnv) Cwd() string       { return e.cwd }
func (e spillEnv) Log() *session.Log { return nil }

func (e spillEnv) Host() *capabilities.Host { return nil }

func TestSpillSavesTheWholeResultAndGivesABoundedView(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill", "s1")
	r := capabilities.NewRegistry(big{lines: 5000}).WithSpill(capabilities.Spill{Cap: 4096, Dir: func(capabilities.Env) string { return dir }})
	whole, _ := big{lines: 5000}.Run(context.Background(), nil)

	out := r.Execute(context.Background(), spillEnv{t.TempDir()}, "call/1", "big", "{}")
	require.False(t, out.IsError)
	require.Len(t, out.Content, 1)
	view := out.Content[0].Text
	require.Less(t, len(view), 4096+600, "the view is bounded")
	path := filepath.Join(dir, "call_1.txt")
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, whole.Content[0].Text, string(saved), "saved whole")
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	require.True(t, strings.HasPrefix(view, "line é "), view[:20])
	require.Contains(t, view, "[result cut: "+strconv.Itoa(len(saved))+" bytes, 5001 lines in all; only the start and the end are shown. "+
		"The whole result is saved at "+path+" — read it with read (offset, limit) or search it with grep]")
	require.True(t, strings.HasSuffix(view, strings.Repeat("x", 40)+"\n"), "the tail ends where the result ends")
	require.True(t, isUTF8(view))

	small := capabilities.NewRegistry(big{lines: 10}).WithSpill(capabilities.Spill{Cap: 4096, Dir: func(capabilities.Env) string { return dir }})
	out = small.Execute(context.Background(), spillEnv{}, "c2", "big", "{}")
	require.NotContains(t, out.Content[0].Text, "result cut")
	require.NoFileExists(t, filepath.Join(dir, "c2.txt"))
}

func TestSpillThatCannotSaveStillBounds(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	r := capabilities.NewRegistry(big{lines: 5000}).WithSpill(capabilities.Spill{Cap: 2048, Dir: func(capabilities.Env) string { return filepath.Join(blocker, "sub") }})
	out := r.Execute(context.Background(), spillEnv{}, "c", "big", "{}")
	require.Less(t, len(out.Content[0].Text), 2048+600)
	require.Contains(t, out.Content[0].Text, "The whole result could not be saved: create spill directory:")
}

func isUTF8(s string) bool { return strings.ToValidUTF8(s, "?") == s }

// sleeper waits for its context, or for ever when stubborn.
type sleeper struct {
	stubborn bool
	own      bool
	traits   capabilities.Traits
}

func (sleeper) Name() string        { return "sleep" }
func (sleeper) Description() string { return "sleep" }
func (s sleeper) Schema() *capabilities.Schema {
	if s.own {
		return capabilities.Object(capabilities.Opt("timeoutMs", capabilities.Number("")))
	}
	return capabilities.Object()
}
func (s sleeper) Traits() capabilities.Traits { return s.traits }
func (s sleeper) Run(ctx context.Context, _ *capabilities.Call) (capabilities.Result, error) {
	if s.stubborn {
		time.Sleep(time.Hour)
	}
	select {
	case <-ctx.Done():
		return capabilities.Result{}, ctx.Err()
	case <-time.After(time.Minute):
		return capabilities.TextResult("woke"), nil
	}
}

func TestTimeoutsStopACallAtItsBudget(t *testing.T) {
	r := capabilities.NewRegistry(sleeper{}).WithTimeouts(capabilities.Timeouts{Default: 100 * time.Millisecond})
	start := time.Now()
	out := r.Execute(context.Background(), spillEnv{}, "c", "sleep", "{}")
	require.Less(t, time.Since(start), 3*time.Second)
	require.True(t, out.IsError)
	require.Equal(t, "Error: sleep timed out after 100ms (its time budget) and was stopped", out.Content[0].Text)
	require.Equal(t, &session.ErrorInfo{Name: "ToolTimeoutError", Code: "TOOL_TIMEOUT"}, out.Error)

	// A per-call timeoutMs where the schema declares one, capped by Max.
	r = capabilities.NewRegistry(sleeper{own: true}).WithTimeouts(capabilities.Timeouts{Default: time.Hour, Max: 300 * time.Millisecond, Grace: time.Millisecond})
	out = r.Execute(context.Background(), spillEnv{}, "c", "sleep", `{"timeoutMs":150}`)
	require.Equal(t, "Error: sleep timed out after 150ms (its time budget) and was stopped", out.Content[0].Text)
	out = r.Execute(context.Background(), spillEnv{}, "c", "sleep", `{"timeoutMs":99999999}`)
	require.Equal(t, "Error: sleep timed out after 300ms (its time budget) and was stopped", out.Content[0].Text)

	// No budget for a tool that waits for the user.
	r = capabilities.NewRegistry(sleeper{}).WithTimeouts(capabilities.Timeouts{Default: 50 * time.Millisecond, PerTool: map[string]time.Duration{"sleep": -1}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out = r.Execute(ctx, spillEnv{}, "c", "sleep", "{}")
	require.Equal(t, "Error: context deadline exceeded", out.Content[0].Text, "only the caller's context ended it")

	// Unnamed, a tool gets its budget by its traits: none when it waits
	// for the user, the cap when it hands work to child agents.
	p := capabilities.Timeouts{Default: 50 * time.Millisecond, Max: 150 * time.Millisecond}
	r = capabilities.NewRegistry(sleeper{traits: capabilities.Traits{Asks: true}}).WithTimeouts(p)
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out = r.Execute(ctx, spillEnv{}, "c", "sleep", "{}")
	require.Equal(t, "Error: context deadline exceeded", out.Content[0].Text, "a question has no budget")
	r = capabilities.NewRegistry(sleeper{traits: capabilities.Traits{Delegates: true}}).WithTimeouts(p)
	out = r.Execute(context.Background(), spillEnv{}, "c", "sleep", "{}")
	require.Equal(t, "Error: sleep timed out after 150ms (its time budget) and was stopped", out.Content[0].Text)
	r = capabilities.NewRegistry(sleeper{}).WithTimeouts(p)
	out = r.Execute(context.Background(), spillEnv{}, "c", "sleep", "{}")
	require.Equal(t, "Error: sleep timed out after 50ms (its time budget) and was stopped", out.Content[0].Text)
}

func TestTimeoutsGiveUpOnAToolThatIgnoresItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the abandon grace")
	}
	r := capabilities.NewRegistry(sleeper{stubborn: true}).WithTimeouts(capabilities.Timeouts{Default: 10 * time.Millisecond})
	start := time.Now()
	out := r.Execute(context.Background(), spillEnv{}, "c", "sleep", "{}")
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, "Error: sleep timed out after 10ms (its time budget) and was stopped", out.Content[0].Text)
}
