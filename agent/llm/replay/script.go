package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// Entry kinds of a script (replay contract § 6).
const (
	// KindChunks yields the entry's chunks; the last one is normally a
	// finish chunk.
	KindChunks = "chunks"
	// KindThrow yields the entry's chunks, then fails the stream with an
	// *llm.Error carrying Message, Code and Status.
	KindThrow = "throw"
	// KindHang yields a text block-start and a "partial" text-delta, then
	// blocks until the request is aborted and fails with the abort.
	KindHang = "hang"
)

// Entry is the scripted answer to one model call.
type Entry struct {
	// Kind is KindChunks, KindThrow or KindHang.
	Kind string
	// Chunks are yielded unchanged, in order (KindChunks, KindThrow). A
	// chunk decoded from a fixture keeps its bytes in Raw.
	Chunks []llm.Chunk
	// Message is the error message of a KindThrow entry.
	Message string
	// Code is the error code of a KindThrow entry.
	Code string
	// Status is the optional HTTP status of a KindThrow entry (0: none).
	Status int
}

// Script is the ordered list of entries one session's model calls are
// served from, positionally.
type Script []Entry

// hangChunks returns the two chunks a KindHang entry yields before
// blocking, decoded on first use (not at every process's start).
var hangChunks = sync.OnceValue(func() []llm.Chunk {
	return mustChunks(
		`{"type":"block-start","index":0,"blockType":"text"}`,
		`{"type":"text-delta","index":0,"text":"partial"}`,
	)
})

func mustChunks(raws ...string) []llm.Chunk {
	out := make([]llm.Chunk, len(raws))
	for i, r := range raws {
		if err := out[i].UnmarshalJSON([]byte(r)); err != nil {
			panic(err)
		}
	}
	return out
}

// fixtureNotFoundError reports a missing fixture file; it unwraps to the
// underlying *fs.PathError (so errors.Is(err, fs.ErrNotExist) holds).
type fixtureNotFoundError struct {
	path string
	err  error
}

func (e *fixtureNotFoundError) Error() string {
	return "llm-replay: fixture not found: " + e.path + " — run the scenario in record mode to create it"
}

func (e *fixtureNotFoundError) Unwrap() error { return e.err }

// readFixture reads path, turning a missing file into the contract's
// "fixture not found" error.
func readFixture(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &fixtureNotFoundError{path: path, err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("llm-replay: read fixture: %w", err)
	}
	return b, nil
}

// ParseLog parses a JSONL session log: the header line, then one event per
// line. Empty lines are ignored.
func ParseLog(data []byte) (session.Header, []session.Event, error) {
	var h session.Header
	var events []session.Event
	lines := bytes.Split(data, []byte("\n"))
	headerSeen := false
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !headerSeen {
			if err := json.Unmarshal(line, &h); err != nil {
				return session.Header{}, nil, fmt.Errorf("line %d: session header: %w", i+1, err)
			}
			headerSeen = true
			continue
		}
		var ev session.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return session.Header{}, nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		events = append(events, ev)
	}
	if !headerSeen {
		return session.Header{}, nil, errors.New("empty session log (no header line)")
	}
	return h, events, nil
}

// Derive builds the script of a parsed log (replay contract § 6): the
// assistant/chunk events in log order, the first h.SeedLength events (a fork
// child's inherited prefix) excluded, grouped by consecutive (turn, step)
// into one KindChunks entry each. A group whose last chunk is not a finish
// chunk (a thrown stream) is an error.
func Derive(h session.Header, events []session.Event) (Script, error) {
	var script Script
	var curTurn, curStep int
	for i, ev := range events {
		if i < h.SeedLength || ev.Type != session.TypeAssistantChunk {
			continue
		}
		var ac session.AssistantChunk
		if err := ev.Decode(&ac); err != nil {
			return nil, fmt.Errorf("llm-replay: %w", err)
		}
		var c llm.Chunk
		if err := c.UnmarshalJSON(ac.Chunk); err != nil {
			return nil, fmt.Errorf("llm-replay: chunk of event %d: %w", ev.Seq, err)
		}
		if len(script) == 0 || ac.Turn != curTurn || ac.Step != curStep {
			if err := checkFinished(script, curTurn, curStep); err != nil {
				return nil, err
			}
			script = append(script, Entry{Kind: KindChunks})
			curTurn, curStep = ac.Turn, ac.Step
		}
		last := &script[len(script)-1]
		last.Chunks = append(last.Chunks, c)
	}
	if err := checkFinished(script, curTurn, curStep); err != nil {
		return nil, err
	}
	return script, nil
}

// checkFinished fails when the script's last entry does not end with a
// finish chunk.
func checkFinished(script Script, turn, step int) error {
	if len(script) == 0 {
		return nil
	}
	chunks := script[len(script)-1].Chunks
	if chunks[len(chunks)-1].Type == llm.ChunkFinish {
		return nil
	}
	return fmt.Errorf("llm-replay: model call %d/%d ended without a finish chunk (a thrown stream); "+
		"this scenario needs a replay.override.json sidecar", turn, step)
}

// DeriveLog parses a JSONL session log and derives its script.
func DeriveLog(data []byte) (Script, error) {
	h, events, err := ParseLog(data)
	if err != nil {
		return nil, fmt.Errorf("llm-replay: %w", err)
	}
	return Derive(h, events)
}

// DeriveFile reads the session log at path and derives its script. A missing
// file is the contract's "fixture not found" error.
func DeriveFile(path string) (Script, error) {
	data, err := readFixture(path)
	if err != nil {
		return nil, err
	}
	h, events, err := ParseLog(data)
	if err != nil {
		return nil, fmt.Errorf("llm-replay: %s: %w", path, err)
	}
	return Derive(h, events)
}

// overrideEntry is one element of replay.override.json.
type overrideEntry struct {
	Kind    string      `json:"kind"`
	Chunks  []llm.Chunk `json:"chunks"`
	Message string      `json:"message"`
	Code    string      `json:"code"`
	Status  int         `json:"status"`
}

// ParseOverride parses a replay.override.json document: a JSON array of
// entries {"kind":"chunks","chunks":[…]},
// {"kind":"throw","chunks":[…],"message":m,"code":c,"status"?:n} and
// {"kind":"hang"}. Anything but an array, or an unknown kind, is an error.
func ParseOverride(data []byte) (Script, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, errors.New("llm-replay: replay override must be a JSON array of entries")
	}
	var raw []overrideEntry
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("llm-replay: replay override: %w", err)
	}
	script := make(Script, 0, len(raw))
	for i, e := range raw {
		switch e.Kind {
		case KindChunks, KindThrow:
		case KindHang:
			e.Chunks = nil
		default:
			return nil, fmt.Errorf("llm-replay: replay override entry %d: unknown kind %q (want chunks, throw or hang)", i, e.Kind)
		}
		script = append(script, Entry(e))
	}
	return script, nil
}

// LoadOverride reads and parses the replay.override.json at path. A missing
// file is the contract's "fixture not found" error.
func LoadOverride(path string) (Script, error) {
	data, err := readFixture(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseOverride(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return s, nil
}
