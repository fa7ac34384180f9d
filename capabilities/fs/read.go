package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	iofs "io/fs"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// readChunk is the size of one read from the file.
const readChunk = 64 * 1024

// readTool is `read` (tools contract § 4).
type readTool struct{ *files }

// readArgs are read's arguments; the numbers stay raw so that any JSON
// number (fractional, huge) is judged like JS would.
type readArgs struct {
	FilePath string      `json:"file_path"`
	Offset   json.Number `json:"offset"`
	Limit    json.Number `json:"limit"`
}

// Name implements capabilities.Tool.
func (*readTool) Name() string { return "read" }

// Traits implements capabilities.Tool: read only reads (a path outside the roots asks first, which is an approval, not a question).
func (*readTool) Traits() capabilities.Traits { return capabilities.Traits{ReadOnly: true} }

// Description implements capabilities.Tool.
func (*readTool) Description() string {
	return "Read a UTF-8 text file and return its lines, each prefixed with its 1-based line number. " +
		"Without offset and limit you get the first 2000 lines; a footer tells you when more remain and which offset continues. " +
		"Lines over 2000 characters are cut and one result holds at most about 50 KB of text. " +
		"Binary files and directories are refused. Reading a file is required before you can edit it or overwrite it."
}

// Schema implements capabilities.Tool.
func (*readTool) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("file_path", capabilities.String("Path of the file, absolute or relative to the working directory.")),
		capabilities.Opt("offset", capabilities.Number("First line to return, counting from 1. Defaults to 1.")),
		capabilities.Opt("limit", capabilities.Number("How many lines to return, at most 2000 (the default).")),
	)
}

// PromptSection implements capabilities.Sectioner.
func (*readTool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tool:read", Order: 100, Text: "# Reading files\n" +
		"Use `read` rather than shell commands such as cat, head or tail to look at a file. " +
		"Read a generous window at once instead of many small slices, and follow the footer's offset to page through long files. " +
		"The `N: ` prefix on each line is not part of the file."}
}

// Run implements capabilities.Tool.
func (t *readTool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a readArgs
	if err := decodeArgs(call.Args, &a); err != nil {
		return capabilities.Result{}, err
	}
	if err := checkFilePath(a.FilePath); err != nil {
		return capabilities.Result{}, err
	}
	offset, offsetText := int64(1), "1"
	if a.Offset != "" {
		o, ok := positiveInt(a.Offset)
		if !ok {
			return capabilities.Result{}, errors.New(msgOffset)
		}
		offset, offsetText = o, jsNumber(a.Offset)
	}
	limit := int64(DefaultLimit)
	if a.Limit != "" {
		l, ok := positiveInt(a.Limit)
		if !ok {
			return capabilities.Result{}, errors.New(msgLimit)
		}
		if l > DefaultLimit {
			return capabilities.Result{}, errors.New(msgLimitTooLarge)
		}
		limit = l
	}
	tg, err := targetOf(call, a.FilePath)
	if err != nil {
		return capabilities.Result{}, err
	}
	w, info, err := t.readWindow(ctx, call, tg, offset, limit)
	if err != nil {
		return capabilities.Result{}, err
	}
	if w.outOfRange() {
		return capabilities.Result{}, fsError(CodeNotFound, "offset "+offsetText+" is out of range for "+quote(tg.display)+" ("+strconv.FormatInt(w.total, 10)+" lines)")
	}
	t.policy.observe(info.ID, info.Version)
	return capabilities.TextResult(w.render(tg.display)), nil
}

// positiveInt parses a JSON number that must be a positive integer
// (Number.isInteger(n) && n > 0). Integers beyond int64 saturate: they are
// past any file's end anyway.
func positiveInt(n json.Number) (int64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) || f <= 0 {
		return 0, false
	}
	if f >= math.MaxInt64/2 {
		return math.MaxInt64 / 2, true
	}
	return int64(f), true
}

// jsNumber renders a JSON number the way JS String(n) does for the values
// that reach messages and titles.
func jsNumber(n json.Number) string {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return string(n)
	}
	return jsFloat(f)
}

// jsFloat renders f like JS String(f): shortest round-trip digits, in
// exponent form from 1e21 on and below 1e-6.
func jsFloat(f float64) string {
	if a := math.Abs(f); a >= 1e21 || (a != 0 && a < 1e-6) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign, digits := exp[:1], strings.TrimLeft(exp[1:], "0")
		return mant + "e" + sign + digits
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// readWindow opens the file, checks that it is a regular text file, and
// scans all of it, keeping only the requested window. It returns the file
// as opened.
func (f *files) readWindow(ctx context.Context, call *capabilities.Call, tg target, offset, limit int64) (*window, capabilities.FileInfo, error) {
	if err := aborted(ctx, "read"); err != nil {
		return nil, capabilities.FileInfo{}, err
	}
	var r io.ReadCloser
	var info capabilities.FileInfo
	_, err := f.probe(ctx, call, OpRead, tg, func(files capabilities.Files) (err error) {
		r, info, err = files.Open(ctx, tg.display)
		return err
	})
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return nil, capabilities.FileInfo{}, fsError(CodeNotFound, "cannot read "+quote(tg.display)+": not found")
	case errors.Is(err, capabilities.ErrNotRegular):
		return nil, capabilities.FileInfo{}, fsError(CodeNotRegular, "cannot read "+quote(tg.display)+": not a regular file")
	case err != nil:
		return nil, capabilities.FileInfo{}, fail(ctx, "read", tg, err)
	}
	defer r.Close()
	w := &window{offset: offset, limit: limit}
	if err := w.scan(ctx, r, tg.display, info.Size); err != nil {
		return nil, capabilities.FileInfo{}, err
	}
	return w, info, nil
}

// window accumulates the lines of one read (tools contract § 4,
// Windowing) while counting all of the file's lines.
type window struct {
	offset, limit int64

	total    int64  // lines completed so far
	partial  bool   // the current line has content
	shown    int64  // lines kept
	last     int64  // number of the last kept line
	capped   bool   // the byte cap stopped the window
	outBytes int    // UTF-8 size of the kept lines plus separators
	body     []byte // "N: line" entries joined by "\n"

	line      []byte // the current line while it is being kept
	lineUnits int    // its UTF-16 units (at most MaxLineChars+1 are kept)
}

// scan reads r to the end: rejecting binary and invalid UTF-8 content,
// counting lines and keeping the window. size is the file's length when
// it was opened: a small file gets a buffer its size (at least the binary
// sample, so that check sees the same bytes), not a whole chunk.
func (w *window) scan(ctx context.Context, r io.Reader, display string, size int64) error {
	buf := make([]byte, min(max(size+1, binarySample), readChunk))
	var carry []byte
	first := true
	for {
		if err := aborted(ctx, "read"); err != nil {
			return err
		}
		n, err := io.ReadFull(r, buf[len(carry):])
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return ioError("read", display, err)
		}
		data := buf[:len(carry)+n]
		if first {
			first = false
			if bytes.IndexByte(data[:min(len(data), binarySample)], 0) >= 0 {
				return fsError(CodeNotText, "cannot read "+quote(display)+": binary file")
			}
			if hasBOM(data) {
				data = data[len(bom):]
			}
		}
		complete, tail := data, []byte(nil)
		if !eof {
			complete, tail = incompleteTail(data)
		}
		if !utf8.Valid(complete) {
			return fsError(CodeNotText, "cannot read "+quote(display)+": invalid UTF-8 text")
		}
		w.feed(complete)
		if eof {
			w.finish()
			return nil
		}
		// Move the incomplete sequence to the front for the next chunk.
		carry = buf[:copy(buf, tail)]
	}
}

// collecting reports whether the current line belongs to the window.
func (w *window) collecting() bool {
	return !w.capped && w.total+1 >= w.offset && w.shown < w.limit
}

// done reports whether no later line can join the window.
func (w *window) done() bool { return w.capped || w.shown >= w.limit }

// feed consumes valid UTF-8 text.
func (w *window) feed(b []byte) {
	for len(b) > 0 {
		if w.done() {
			w.total += int64(bytes.Count(b, []byte{'\n'}))
			w.partial = b[len(b)-1] != '\n'
			return
		}
		i := bytes.IndexByte(b, '\n')
		if !w.collecting() {
			if i < 0 {
				w.partial = true
				return
			}
			w.total++
			w.partial = false
			b = b[i+1:]
			continue
		}
		if i < 0 {
			w.keep(b)
			w.partial = true
			return
		}
		w.keep(b[:i])
		w.endLine()
		b = b[i+1:]
	}
}

// keep appends part of the current line, keeping at most MaxLineChars+1
// UTF-16 units (enough to tell that it is too long).
func (w *window) keep(b []byte) {
	if w.lineUnits > MaxLineChars {
		return
	}
	u := unitsOf(b)
	if w.lineUnits+u <= MaxLineChars+1 {
		w.line = append(w.line, b...)
		w.lineUnits += u
		return
	}
	// Keep whole characters up to the cap, one more if it straddles it.
	prefix, pu, _ := cutUnits(b, MaxLineChars+1-w.lineUnits)
	w.line = append(w.line, prefix...)
	w.lineUnits += pu
	if rest := b[len(prefix):]; len(rest) > 0 && w.lineUnits <= MaxLineChars {
		r, size := utf8.DecodeRune(rest)
		w.line = append(w.line, rest[:size]...)
		w.lineUnits += utf16Len(r)
	}
}

// endLine completes the current (collected) line.
func (w *window) endLine() {
	w.total++
	w.partial = false
	line, units := w.line, w.lineUnits
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line, units = line[:n-1], units-1
	}
	size := len(line)
	if units > MaxLineChars {
		prefix, _, split := cutUnits(line, MaxLineChars)
		size = len(prefix) + len(truncationSuffix)
		if split {
			size += utf8.RuneLen(utf8.RuneError)
		}
	}
	if w.shown > 0 {
		size++
	}
	if w.outBytes+size > MaxOutputBytes {
		w.capped = true
	} else {
		w.outBytes += size
		if w.shown > 0 {
			w.body = append(w.body, '\n')
		}
		w.body = strconv.AppendInt(w.body, w.total, 10)
		w.body = append(w.body, ':', ' ')
		w.body = appendTruncated(w.body, line, units)
		w.shown++
		w.last = w.total
	}
	w.line, w.lineUnits = w.line[:0], 0
}

// finish accounts for a last line without a line break.
func (w *window) finish() {
	if !w.partial {
		return
	}
	if w.collecting() {
		w.endLine()
		return
	}
	w.total++
	w.partial = false
}

// outOfRange reports an offset past the end (offset 1 on an empty file is
// fine).
func (w *window) outOfRange() bool {
	return !w.capped && w.offset > w.total && !(w.total == 0 && w.offset == 1)
}

// render formats the read result text.
func (w *window) render(display string) string {
	end := w.offset - 1
	if w.shown > 0 {
		end = w.last
	}
	end = max(end, 0)
	var footer string
	switch {
	case w.capped:
		footer = "(Output capped. Showing lines " + itoa(w.offset) + "-" + itoa(end) + ". Use offset=" + itoa(end+1) + " to continue.)"
	case end < w.total:
		footer = "(Showing lines " + itoa(w.offset) + "-" + itoa(end) + " of " + itoa(w.total) + ". Use offset=" + itoa(end+1) + " to continue.)"
	default:
		footer = "(End of file - total " + itoa(w.total) + " lines)"
	}
	var b bytes.Buffer
	b.Grow(len(display) + len(w.body) + len(footer) + 64)
	b.WriteString("<path>")
	b.WriteString(display)
	b.WriteString("</path>\n<type>file</type>\n<content>\n")
	if w.shown > 0 {
		b.Write(w.body)
		b.WriteString("\n\n")
	}
	b.WriteString(footer)
	b.WriteString("\n</content>")
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
