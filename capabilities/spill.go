package capabilities

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/session"
)

// DefaultSpillCap is the result size, in bytes of text, above which a
// result is spilled (Spill.Cap zero).
const DefaultSpillCap = 32 << 10

// Spill bounds what the model and the editor get of a large tool result:
// a result whose text is over Cap bytes is saved whole to a file, and the
// result becomes a bounded view (its head and its tail) plus the file's
// path, which the model can read with read or grep.
type Spill struct {
	// Cap is the largest result text kept as it is (zero:
	// DefaultSpillCap).
	Cap int
	// Dir returns the directory the session's spill files go to; it is
	// created (0700) on first use.
	Dir func(env Env) string
	// Skip names tools whose results are never spilled (read: it is
	// windowed already, and it is how spill files are read back).
	Skip []string
}

// spillName is the file a call's result is saved to: its call id, with
// anything but [A-Za-z0-9_-] replaced.
func spillName(callID string) string {
	var b strings.Builder
	for _, r := range callID {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteString("result")
	}
	return b.String() + ".txt"
}

// apply spills out when its text is over the cap; other outcomes are
// returned as they are.
func (s *Spill) apply(env Env, callID, name string, out Outcome) Outcome {
	for _, n := range s.Skip {
		if n == name {
			return out
		}
	}
	limit := s.Cap
	if limit <= 0 {
		limit = DefaultSpillCap
	}
	size := 0
	for _, b := range out.Content {
		if b.Type == session.BlockText {
			size += len(b.Text)
		}
	}
	if size <= limit {
		return out
	}
	var whole strings.Builder
	whole.Grow(size)
	for _, b := range out.Content {
		if b.Type == session.BlockText {
			whole.WriteString(b.Text)
		}
	}
	text := whole.String()
	where, err := s.save(env, callID, text)
	head, tail := cut(text, limit*3/4, limit/4)
	lines := strings.Count(text, "\n") + 1
	var note string
	if err != nil {
		note = fmt.Sprintf("[result cut: %d bytes, %d lines in all; only the start and the end are shown. "+
			"The whole result could not be saved: %v]", size, lines, err)
	} else {
		note = fmt.Sprintf("[result cut: %d bytes, %d lines in all; only the start and the end are shown. "+
			"The whole result is saved at %s — read it with read (offset, limit) or search it with grep]", size, lines, where)
	}
	view := head + "\n\n… " + note + " …\n\n" + tail
	content := []session.Block{session.TextBlock(view)}
	for _, b := range out.Content {
		if b.Type != session.BlockText {
			content = append(content, b)
		}
	}
	out.Content = content
	return out
}

// save writes text to the session's spill directory.
func (s *Spill) save(env Env, callID, text string) (string, error) {
	if s.Dir == nil {
		return "", fmt.Errorf("no spill directory configured")
	}
	dir := s.Dir(env)
	if dir == "" {
		return "", fmt.Errorf("no spill directory for this session")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create spill directory: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("spill directory %s is not a directory (a symbolic link?)", dir)
	}
	// A fresh file renamed into place: a symbolic link planted under the
	// file's name is replaced, never written through.
	path := filepath.Join(dir, spillName(callID))
	tmp, err := os.CreateTemp(dir, ".spill-*")
	if err != nil {
		return "", fmt.Errorf("write spill file: %w", err)
	}
	_, werr := tmp.WriteString(text)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write spill file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write spill file: %w", err)
	}
	return path, nil
}

// cut returns about the first headBytes and the last tailBytes of s, each
// cut at a line boundary when one is near and never inside a UTF-8
// sequence.
func cut(s string, headBytes, tailBytes int) (string, string) {
	h := s[:headBytes]
	for len(h) > 0 && !utf8.RuneStart(s[len(h)]) {
		h = h[:len(h)-1]
	}
	if i := strings.LastIndexByte(h, '\n'); i > len(h)/2 {
		h = h[:i]
	}
	start := len(s) - tailBytes
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	t := s[start:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)/2 {
		t = t[i+1:]
	}
	return h, t
}
