package jsonl_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

// FuzzLoad loads an arbitrary log body under a valid header, with crash
// repair: no panic; a refused log (corrupt committed region) is left
// byte-identical; a loaded one is seq-contiguous from 0, has no open turn
// (repair closed it), is exactly what the file now holds, and loads the
// same again in a fresh store (repair is persisted and idempotent).
func FuzzLoad(f *testing.F) {
	const header = `{"type":"session","version":0,"id":"f","createdAt":1}` + "\n"
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		root := t.TempDir()
		dir := filepath.Join(root, jsonl.NoCwdBucket)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		path := filepath.Join(dir, "f.jsonl")
		content := append([]byte(header), body...)
		require.NoError(t, os.WriteFile(path, content, 0o600))

		st, err := jsonl.Open(root)
		require.NoError(t, err)
		_, evs, err := st.Load(ctx, "f")
		if err != nil {
			var ce *session.CorruptError
			require.True(t, errors.As(err, &ce), "only a corrupt committed region is refused: %v", err)
			after, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, string(content), string(after), "a refused log is not modified")
			require.NoError(t, st.Close())
			return
		}
		for i, e := range evs {
			require.Equal(t, i, e.Seq)
		}
		require.Nil(t, session.RepairClosers(evs), "no turn is left open")
		on, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(on, []byte(header)) && bytes.HasSuffix(on, []byte("\n")))
		require.Equal(t, 1+len(evs), bytes.Count(on, []byte("\n")), "the file holds the header and the loaded events, nothing torn")
		require.NoError(t, st.Close())

		st2, err := jsonl.Open(root)
		require.NoError(t, err)
		defer st2.Close()
		_, again, err := st2.Load(ctx, "f")
		require.NoError(t, err)
		require.Equal(t, storetest.Lines(t, evs), storetest.Lines(t, again))
	})
}
