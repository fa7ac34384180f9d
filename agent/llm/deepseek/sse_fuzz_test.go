package deepseek

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/fixtures"
	"github.com/dsh-acp/dsh-acp/session"
)

// referenceSSE is the SSE framing of replay contract § 8 written the
// obvious way, over the whole input at once: the oracle the streaming
// reader is fuzzed against.
func referenceSSE(in []byte) []string {
	var events []string
	var data []string
	for {
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			return events // a final line without an ending and an unfinished event are dropped
		}
		line := string(bytes.TrimSuffix(in[:i], []byte("\r")))
		in = in[i+1:]
		switch name, value, _ := strings.Cut(line, ":"); {
		case line == "":
			if joined := strings.Join(data, "\n"); joined != "" {
				events = append(events, joined)
			}
			data = nil
		case line[0] == ':':
		case name == "data":
			data = append(data, strings.TrimPrefix(value, " "))
		}
	}
}

// readAllSSE drains r's events.
func readAllSSE(t *testing.T, r *sseReader) []string {
	var got []string
	for {
		d, err := r.next()
		if errors.Is(err, io.EOF) {
			return got
		}
		require.NoError(t, err)
		got = append(got, string(d))
	}
}

// translateAll runs translate over r and returns the chunks and error.
func translateAll(r io.Reader) ([]llm.Chunk, error) {
	var chunks []llm.Chunk
	err := translate(context.Background(), r, func(c llm.Chunk) bool {
		chunks = append(chunks, c)
		return true
	})
	return chunks, err
}

// checkChunks asserts the stream invariants the agent relies on: blocks
// are opened in index order before their deltas, deltas match their
// block's type, the block-ends (one per block, in order, after every
// delta) carry the concatenated deltas, and a finish ends exactly the
// streams that end without error.
func checkChunks(t *testing.T, chunks []llm.Chunk, err error) {
	if err != nil {
		code := llm.ErrorCode(err)
		require.True(t, code == CodeStreamClosed || code == CodeMalformedResponse, "error %v", err)
	}
	types := map[int]string{}
	text := map[int]*strings.Builder{}
	ended := 0
	finished := false
	deltaType := map[llm.ChunkType]string{llm.ChunkTextDelta: session.BlockText,
		llm.ChunkReasoningDelta: session.BlockReasoning, llm.ChunkToolCallDelta: session.BlockToolCall}
	for _, c := range chunks {
		require.False(t, finished, "chunk after finish")
		switch c.Type {
		case llm.ChunkBlockStart:
			require.Zero(t, ended, "block-start after a block-end")
			require.Equal(t, len(types), c.Index, "blocks open in index order")
			types[c.Index] = c.BlockType
			text[c.Index] = &strings.Builder{}
		case llm.ChunkTextDelta, llm.ChunkReasoningDelta, llm.ChunkToolCallDelta:
			require.Zero(t, ended, "delta after a block-end")
			require.Equal(t, deltaType[c.Type], types[c.Index], "delta of index %d", c.Index)
			text[c.Index].WriteString(c.Text + c.ArgumentsDelta)
		case llm.ChunkBlockEnd:
			require.Equal(t, ended, c.Index, "block-ends in index order")
			require.Equal(t, types[c.Index], c.Block.Type)
			require.Equal(t, text[c.Index].String(), c.Block.Text+c.Block.Arguments)
			ended++
		case llm.ChunkUsage:
			require.NotNil(t, c.Usage)
		case llm.ChunkFinish:
			require.Equal(t, len(types), ended, "every block ended before the finish")
			finished = true
		default:
			t.Fatalf("unknown chunk %q", c.Type)
		}
	}
	require.Equal(t, err == nil, finished, "a finish exactly when the stream ends cleanly")
}

func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		sseOK,
		"data: a\r\n\r\ndata: b\n\n",
		"data: a\ndata:b\n\n: c\nevent: x\n\ndata\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: {\"choi",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"x\"}}]}}]}\n\ndata: [DONE]\n\n",
		"data: not json\n\n",
	} {
		f.Add([]byte(s))
	}
	files, err := fs.Glob(fixtures.DeepSeek(), "*.sse")
	require.NoError(f, err)
	for _, name := range files {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want := referenceSSE(in)
		require.Equal(t, want, readAllSSE(t, newSSEReaderSize(bytes.NewReader(in), 16)), "16-byte buffer")
		require.Equal(t, want, readAllSSE(t, newSSEReader(iotest.OneByteReader(bytes.NewReader(in)))), "one byte at a time")

		whole, err := translateAll(bytes.NewReader(in))
		checkChunks(t, whole, err)
		pieces, err2 := translateAll(iotest.HalfReader(bytes.NewReader(in)))
		require.Equal(t, whole, pieces, "chunks do not depend on how reads split the stream")
		require.Equal(t, err, err2)
	})
}
