package acp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// DefaultMaxLineBytes bounds one inbound JSON-RPC message (one line) when
// Options.MaxLineBytes is zero.
const DefaultMaxLineBytes = 16 << 20

// headBytes is how much of an oversized line is kept to find its id.
const headBytes = 4 << 10

// inLine is one inbound line as readLine read it.
type inLine struct {
	data []byte // the line without its newline (nil when over)
	over bool   // longer than the limit: discarded, only head kept
	head []byte // the first headBytes of an oversized line
	size int    // the line's length without the newline
}

// SetMaxLine bounds inbound lines to n bytes (n <= 0: DefaultMaxLineBytes).
// A longer line is discarded while it is read, so memory stays bounded by
// the limit, and answered with -32600. Call it before reading starts.
func (s *LineStream) SetMaxLine(n int) {
	if n <= 0 {
		n = DefaultMaxLineBytes
	}
	s.maxLine = n
}

// readLine reads the next line. A line of up to maxLine bytes is returned
// in one exactly sized allocation; a longer one is read to its end and
// dropped, except for its head. err is the read error (io.EOF at the end);
// a last line without newline comes with it.
func (s *LineStream) readLine() (inLine, error) {
	var (
		ln     inLine
		chunks [][]byte
	)
	for {
		frag, err := s.r.ReadSlice('\n')
		n := len(frag)
		if n > 0 && frag[n-1] == '\n' {
			n--
		}
		ln.size += n
		switch {
		case ln.over:
			if len(ln.head) < headBytes {
				ln.head = append(ln.head, frag[:min(n, headBytes-len(ln.head))]...)
			}
		case ln.size > s.maxLine:
			ln.over = true
			for _, c := range chunks {
				ln.head = append(ln.head, c[:min(len(c), headBytes-len(ln.head))]...)
			}
			ln.head = append(ln.head, frag[:min(n, headBytes-len(ln.head))]...)
			chunks = nil
		case err == nil && chunks == nil:
			ln.data = append([]byte(nil), frag[:n]...) // the common case: one fill
		default:
			chunks = append(chunks, append([]byte(nil), frag[:n]...))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if chunks != nil {
			ln.data = make([]byte, 0, ln.size)
			for _, c := range chunks {
				ln.data = append(ln.data, c...)
			}
		}
		return ln, err
	}
}

// oversized handles a discarded line. A request whose id appears in the
// line's head is answered with -32600 naming the limit (id null when the
// head does not tell); a response to one of our calls is turned into an
// error response for that call, returned as the message to hand on.
func (s *LineStream) oversized(ln inLine) []byte {
	head := trimLine(ln.head)
	env, _, _ := scanEnvelope(head)
	// The head of a discarded line need not be JSON at all, so the id it
	// seems to carry is checked before it is echoed.
	idOK := env.id != nil && json.Valid(env.id) && validID(env.id)
	id := json.RawMessage("null")
	if idOK {
		id = env.id
	}
	why := fmt.Sprintf("message too large: a line of %d bytes exceeds the %s limit (%d bytes); it was discarded", ln.size, formatSize(s.maxLine), s.maxLine)
	s.log.Warn().Int("bytes", ln.size).Int("limit", s.maxLine).Str("head", clip(head)).Msg("discarded oversized inbound line")
	response := env.result != nil || env.error != nil || env.cut == "result" || env.cut == "error"
	if env.method == nil && env.cut != "method" && response && idOK {
		// Fail the pending call the response was for.
		e := jsonx.MustMarshal(Error{Code: CodeInvalidRequest, Message: "Invalid Request: response " + why})
		return []byte(`{"jsonrpc":"2.0","id":` + string(env.id) + `,"error":` + string(e) + `}`)
	}
	if werr := s.WriteFrame(errorFrame(id, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + why})); werr != nil {
		s.log.Debug().Err(werr).Msg("write oversized-line error")
	}
	return nil
}

// formatSize renders a byte count for messages: "16 MiB", "512 KiB",
// "1.5 MiB", "100 bytes".
func formatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
