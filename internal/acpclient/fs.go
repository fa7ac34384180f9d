package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// FS hosts fs/read_text_file and fs/write_text_file over the directories
// of a project, with an overlay of unsaved buffers, the way Zed does:
// a read sees the buffer first, then the disk; a write lands in the
// buffer when one is open for the path, else on the disk (creating the
// file and its directories). A path outside the roots, or a missing file
// with no buffer, is answered "Resource not found" (-32002, data
// {"uri": path}), as Zed answers. Every call is recorded in order.
type FS struct {
	roots []string

	mu      sync.Mutex
	buffers map[string]string
	calls   []FSCall
}

// FSCall is one fs/* request the agent made.
type FSCall struct {
	// Method is fs/read_text_file or fs/write_text_file.
	Method string
	Path   string
	// Line and Limit are a read's (0 when absent).
	Line, Limit int
	// Content is what a write wrote.
	Content string
	// Buffer reports that the call was served from (or written to) an
	// unsaved buffer rather than the disk.
	Buffer bool
	// Err is the error answered, nil on success.
	Err *Error
}

// NewFS serves files beneath the roots (absolute directories).
func NewFS(roots ...string) *FS {
	clean := make([]string, len(roots))
	for i, r := range roots {
		clean[i] = filepath.Clean(r)
	}
	return &FS{roots: clean, buffers: map[string]string{}}
}

// SetBuffer opens an unsaved buffer for path holding text.
func (f *FS) SetBuffer(path, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buffers[filepath.Clean(path)] = text
}

// Buffer returns the text of the unsaved buffer for path.
func (f *FS) Buffer(path string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.buffers[filepath.Clean(path)]
	return t, ok
}

// Calls returns the fs/* requests served so far, in order.
func (f *FS) Calls() []FSCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FSCall(nil), f.calls...)
}

// Writes returns the successful fs/write_text_file calls, in order: what
// the editor's review list shows.
func (f *FS) Writes() []FSCall {
	var out []FSCall
	for _, c := range f.Calls() {
		if c.Method == "fs/write_text_file" && c.Err == nil {
			out = append(out, c)
		}
	}
	return out
}

func (f *FS) handler(method string) Handler {
	if f == nil {
		return nil
	}
	switch method {
	case "fs/read_text_file":
		return f.read
	case "fs/write_text_file":
		return f.write
	}
	return nil
}

func notFound(path string) *Error {
	data, _ := json.Marshal(map[string]string{"uri": path})
	return &Error{Code: CodeResourceNotFound, Message: "Resource not found", Data: data}
}

// inside reports whether the absolute path is beneath one of the roots.
func (f *FS) inside(path string) bool {
	for _, r := range f.roots {
		if rel, err := filepath.Rel(r, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func (f *FS) record(c FSCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *FS) read(_ context.Context, req Request) (any, error) {
	var p struct {
		Path  string `json:"path"`
		Line  *int   `json:"line"`
		Limit *int   `json:"limit"`
	}
	call := FSCall{Method: req.Method}
	if err := json.Unmarshal(req.Params, &p); err != nil || !filepath.IsAbs(p.Path) {
		call.Err = &Error{Code: CodeInvalidParams, Message: "Invalid params: an absolute path is required"}
		f.record(call)
		return nil, call.Err
	}
	call.Path = filepath.Clean(p.Path)
	if p.Line != nil {
		call.Line = *p.Line
	}
	if p.Limit != nil {
		call.Limit = *p.Limit
	}
	text, ok := f.Buffer(call.Path)
	call.Buffer = ok
	if !ok && f.inside(call.Path) {
		b, err := os.ReadFile(call.Path)
		switch {
		case err == nil:
			text, ok = string(b), true
		case !errors.Is(err, fs.ErrNotExist):
			call.Err = &Error{Code: CodeInternalError, Message: err.Error()}
			f.record(call)
			return nil, call.Err
		}
	}
	if !ok || !f.inside(call.Path) {
		call.Err = notFound(call.Path)
		f.record(call)
		return nil, call.Err
	}
	f.record(call)
	return map[string]string{"content": sliceLines(text, p.Line, p.Limit)}, nil
}

func (f *FS) write(_ context.Context, req Request) (any, error) {
	var p struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	call := FSCall{Method: req.Method}
	if err := json.Unmarshal(req.Params, &p); err != nil || !filepath.IsAbs(p.Path) {
		call.Err = &Error{Code: CodeInvalidParams, Message: "Invalid params: an absolute path is required"}
		f.record(call)
		return nil, call.Err
	}
	call.Path, call.Content = filepath.Clean(p.Path), p.Content
	if !f.inside(call.Path) {
		call.Err = notFound(call.Path)
		f.record(call)
		return nil, call.Err
	}
	f.mu.Lock()
	_, open := f.buffers[call.Path]
	if open {
		f.buffers[call.Path] = p.Content
	}
	f.mu.Unlock()
	call.Buffer = open
	if !open {
		err := os.MkdirAll(filepath.Dir(call.Path), 0o755)
		if err == nil {
			err = os.WriteFile(call.Path, []byte(p.Content), 0o644)
		}
		if err != nil {
			call.Err = &Error{Code: CodeInternalError, Message: err.Error()}
			f.record(call)
			return nil, call.Err
		}
	}
	f.record(call)
	return struct{}{}, nil
}

// sliceLines applies fs/read_text_file's 1-based line and its limit.
func sliceLines(s string, line, limit *int) string {
	if line == nil && limit == nil {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	from := 0
	if line != nil && *line > 1 {
		from = min(*line-1, len(lines))
	}
	to := len(lines)
	if limit != nil && from+*limit < to {
		to = from + *limit
	}
	return strings.Join(lines[from:to], "")
}
