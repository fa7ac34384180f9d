// Package undo journals every file change the agent makes and reverts the
// changes of a turn on request (/undo). A revert never overwrites a file
// that changed since the agent wrote it: each journal entry records the
// sha256 of what was replaced and of what was written, and a file whose
// current content has a different hash is reported and left alone.
package undo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/localfs"
	"github.com/dsh-acp/dsh-acp/session"
)

// Event types of the journal.
const (
	// TypeJournal records one file change: {callId, path, before, after}.
	TypeJournal = "fs/journal"
	// TypeUndo records one /undo: {turn, restored, refused}.
	TypeUndo = "fs/undo"
)

// Content is one side of a change: the hash, and for the replaced side the
// bytes needed to restore it (text, or base64 for binary content).
type Content struct {
	SHA256 string  `json:"sha256"`
	Text   *string `json:"text,omitempty"`
	Base64 string  `json:"base64,omitempty"`
}

// Entry is the data of fs/journal. Before is nil when the change created
// the file.
type Entry struct {
	Turn   int      `json:"turn"`
	CallID string   `json:"callId"`
	Path   string   `json:"path"`
	Before *Content `json:"before"`
	After  Content  `json:"after"`
}

// Refusal is a file /undo did not restore, and why.
type Refusal struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Result is the data of fs/undo.
type Result struct {
	Turn     int       `json:"turn"`
	Restored []string  `json:"restored"`
	Refused  []Refusal `json:"refused"`
}

// Hash returns the hex sha256 of b.
func Hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func content(b []byte, keep bool) Content {
	c := Content{SHA256: Hash(b)}
	if !keep {
		return c
	}
	if utf8.Valid(b) {
		t := string(b)
		c.Text = &t
	} else {
		c.Base64 = base64.StdEncoding.EncodeToString(b)
	}
	return c
}

func (c Content) bytes() ([]byte, error) {
	if c.Text != nil {
		return []byte(*c.Text), nil
	}
	return base64.StdEncoding.DecodeString(c.Base64)
}

// Record journals one change in log: before is nil when the file did not
// exist. It is called by the fs tools after a successful write or edit.
func Record(log *session.Log, callID, path string, existed bool, before, after []byte) {
	turn := session.LastTurn(log.Events())
	e := Entry{Turn: turn, CallID: callID, Path: path, After: content(after, false)}
	if existed {
		b := content(before, true)
		e.Before = &b
	}
	log.Append(TypeJournal, e)
}

// lastUndoable returns the latest turn with journal entries not yet undone
// and its entries in log order.
func lastUndoable(events []session.Event) (int, []Entry) {
	undone := map[int]bool{}
	byTurn := map[int][]Entry{}
	for _, ev := range events {
		switch ev.Type {
		case TypeUndo:
			var r Result
			if ev.Decode(&r) == nil {
				undone[r.Turn] = true
			}
		case TypeJournal:
			var e Entry
			if ev.Decode(&e) == nil {
				byTurn[e.Turn] = append(byTurn[e.Turn], e)
			}
		}
	}
	turns := make([]int, 0, len(byTurn))
	for t := range byTurn {
		if !undone[t] {
			turns = append(turns, t)
		}
	}
	if len(turns) == 0 {
		return 0, nil
	}
	sort.Ints(turns)
	t := turns[len(turns)-1]
	return t, byTurn[t]
}

// Revert is RevertFiles through plain local file access (every path the
// process can reach), which is what /undo did before file access had a
// seam. Prefer RevertFiles with the session's own capabilities.Files.
func Revert(ctx context.Context, log *session.Log) (Result, bool) {
	return RevertFiles(ctx, log, localfs.Unconfined())
}

// RevertFiles reverts the changes of the latest turn not yet undone,
// newest first, reading and writing through files (so a confined files
// refuses journal paths that now lead outside its root), and appends the
// fs/undo result to log. A file whose current content is not what the
// agent last wrote is refused, as are its earlier changes in that turn.
func RevertFiles(ctx context.Context, log *session.Log, files capabilities.Files) (Result, bool) {
	turn, entries := lastUndoable(log.Events())
	if entries == nil {
		return Result{}, false
	}
	res := Result{Turn: turn, Restored: []string{}, Refused: []Refusal{}}
	refused := map[string]bool{}
	restored := map[string]bool{}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if refused[e.Path] {
			continue
		}
		if err := revertOne(ctx, files, e); err != nil {
			refused[e.Path] = true
			delete(restored, e.Path)
			res.Refused = append(res.Refused, Refusal{Path: e.Path, Reason: err.Error()})
			continue
		}
		restored[e.Path] = true
	}
	for i := len(entries) - 1; i >= 0; i-- {
		p := entries[i].Path
		if restored[p] {
			res.Restored = append(res.Restored, p)
			delete(restored, p)
		}
	}
	log.Append(TypeUndo, res)
	return res, true
}

// revertOne restores one entry after checking the file still holds what the
// agent wrote. The restored content is written atomically and keeps the
// file's current mode bits.
func revertOne(ctx context.Context, files capabilities.Files, e Entry) error {
	cur, _, err := capabilities.ReadFile(ctx, files, e.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("the file no longer exists")
	case err != nil:
		return fmt.Errorf("cannot read it: %w", cause(err))
	case Hash(cur) != e.After.SHA256:
		return errors.New("it changed since the agent wrote it")
	}
	if e.Before == nil {
		if err := files.Remove(ctx, e.Path); err != nil {
			return fmt.Errorf("cannot remove it: %w", cause(err))
		}
		return nil
	}
	old, err := e.Before.bytes()
	if err != nil || Hash(old) != e.Before.SHA256 {
		return errors.New("the journal's copy of the old content is damaged")
	}
	if err := files.WriteFile(ctx, e.Path, old); err != nil {
		return fmt.Errorf("cannot write it: %w", cause(err))
	}
	return nil
}

// cause drops the path an *fs.PathError repeats (the report names the
// file already).
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Report renders a result for the user, with paths relative to cwd.
func Report(r Result, cwd string) string {
	rel := func(p string) string {
		if r, err := filepath.Rel(cwd, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Undid the file changes of turn %d.", r.Turn)
	if len(r.Restored) > 0 {
		b.WriteString("\nRestored:")
		for _, p := range r.Restored {
			b.WriteString("\n- " + rel(p))
		}
	}
	if len(r.Refused) > 0 {
		b.WriteString("\nNot restored:")
		for _, f := range r.Refused {
			b.WriteString("\n- " + rel(f.Path) + ": " + f.Reason)
		}
	}
	return b.String()
}

// NothingToUndo is the report when no turn has changes left to undo.
const NothingToUndo = "There are no file changes to undo in this session."
