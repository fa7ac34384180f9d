package acp

import (
	"strconv"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/session"
)

// CompactionUpdate is the compaction_update session update (unstable
// schema): one compaction's state, patched in place by later updates with
// the same id.
type CompactionUpdate struct {
	SessionUpdate UpdateKind    `json:"sessionUpdate"`
	CompactionID  string        `json:"compactionId"`
	Status        string        `json:"status"`
	Summary       []TextContent `json:"summary,omitempty"`
	Error         string        `json:"error,omitempty"`
}

// Compaction statuses.
const (
	compactionInProgress = "in_progress"
	compactionCompleted  = "completed"
	compactionFailed     = "failed"
)

// compactionEvent presents the compaction events for a client that takes
// compaction_update: compact/start opens one (its id is the start event's
// seq), compact/summary fills in the summary, compact/end settles it. The
// agent's progress notices about it are left out, since the update says
// the same. ok is false for every other event.
func (p *presenter) compactionEvent(ev session.Event) (out []any, ok bool) {
	switch ev.Type {
	case agent.TypeCompactStart:
		p.compactID = "compaction-" + strconv.Itoa(ev.Seq)
		return []any{CompactionUpdate{SessionUpdate: UpdateCompaction, CompactionID: p.compactID, Status: compactionInProgress}}, true
	case agent.TypeCompactSummary:
		var s agent.CompactSummary
		if ev.Decode(&s) != nil || p.compactID == "" {
			return nil, true
		}
		return []any{CompactionUpdate{SessionUpdate: UpdateCompaction, CompactionID: p.compactID, Status: compactionInProgress,
			Summary: []TextContent{{"text", s.Summary}}}}, true
	case agent.TypeCompactEnd:
		var e struct {
			Error string `json:"error"`
		}
		id := p.compactID
		p.compactID = ""
		if ev.Decode(&e) != nil || id == "" {
			return nil, true
		}
		u := CompactionUpdate{SessionUpdate: UpdateCompaction, CompactionID: id, Status: compactionCompleted}
		if e.Error != "" {
			u.Status, u.Error = compactionFailed, e.Error
		}
		return []any{u}, true
	case agent.TypeModelNotice:
		if p.compactID != "" {
			return nil, true // the open compaction's own notices
		}
	}
	return nil, false
}
