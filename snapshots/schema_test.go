package snapshots

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpschema"
)

var (
	schemaOnce sync.Once
	schema     *acpschema.Validator
	schemaErr  error
)

// validateTimeline checks every frame the agent wrote in a run against the
// ACP v1 schema; responses are matched to the method of their request.
func validateTimeline(t *testing.T, timeline []Message) {
	t.Helper()
	schemaOnce.Do(func() { schema, schemaErr = acpschema.Stable() })
	require.NoError(t, schemaErr)
	sent := map[string]string{}
	for _, m := range timeline {
		var f struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(m.Line, &f) != nil {
			continue
		}
		if m.Sent {
			if f.Method != "" && f.ID != nil {
				sent[string(f.ID)] = f.Method
			}
			continue
		}
		method := f.Method
		if method == "" {
			method = sent[string(f.ID)]
		}
		if err := schema.CheckFrame(m.Line, method); err != nil {
			t.Errorf("agent frame fails the ACP schema: %v\nframe: %s", err, acpschema.ClipLine(m.Line))
		}
	}
}
