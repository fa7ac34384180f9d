package jsrt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/jsrt"
)

// TestStretchEndsAreReported: Await reports the end of the stretch that
// ran before it (no job queued), and of every job it runs, each with what
// that stretch did, before the next one starts.
func TestStretchEndsAreReported(t *testing.T) {
	r := jsrt.New()
	defer r.Close()
	var log, ends []string
	require.NoError(t, r.VM.Set("note", func(s string) { log = append(log, s) }))
	var resolves []func(any) error
	require.NoError(t, r.VM.Set("later", func() goja.Value {
		p, resolve, _ := r.VM.NewPromise()
		resolves = append(resolves, resolve)
		return r.VM.ToValue(p)
	}))
	r.OnStretchEnd = func() {
		ends = append(ends, strings.Join(log, " "))
		log = nil
		// Settle what the stretch asked for, as a host answering it would.
		for _, res := range resolves {
			r.Post(func() error { return res(nil) })
		}
		resolves = nil
	}
	v, err := r.VM.RunString(`(async () => {
		note("a"); note("b");
		await Promise.all([later(), later()]);
		note("c");
		await later();
		note("d");
		return 1;
	})()`)
	require.NoError(t, err)
	s, err := r.Await(context.Background(), v.Export().(*goja.Promise), nil)
	require.NoError(t, err)
	assert.EqualValues(t, 1, s.Value.Export())
	// The first job only settles one of two promises: an empty stretch.
	assert.Equal(t, []string{"a b", "", "c", "d"}, ends)
}
