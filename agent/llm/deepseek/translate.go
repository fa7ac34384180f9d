package deepseek

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// Error codes of stream failures (replay contract § 8).
const (
	CodeStreamClosed      = "STREAM_CLOSED"
	CodeMalformedResponse = "MALFORMED_RESPONSE"
)

// malformedPrefixUnits is how many UTF-16 code units of an unparseable
// payload the error message quotes.
const malformedPrefixUnits = 120

// payload is one chat.completion.chunk, decoded only as far as the
// translation needs.
type payload struct {
	Choices []choice   `json:"choices"`
	Usage   *wireUsage `json:"usage"`
}

// choice is one element of a payload's choices.
type choice struct {
	Delta struct {
		ReasoningContent string          `json:"reasoning_content"`
		Content          string          `json:"content"`
		ToolCalls        []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireUsage is DeepSeek's usage object; pointers tell absent from zero.
type wireUsage struct {
	PromptTokens         int  `json:"prompt_tokens"`
	CompletionTokens     int  `json:"completion_tokens"`
	PromptCacheHitTokens *int `json:"prompt_cache_hit_tokens"`
	PromptTokensDetails  *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// block is one content block being streamed.
type block struct {
	index int
	typ   string
	text  strings.Builder // text, reasoning
	wire  int             // tool-call: the wire index of tool_calls[]
	id    string          // tool-call: id so far
	name  *string         // tool-call: name so far, shared by the chunks that carry it
	args  strings.Builder // tool-call
}

// translator turns decoded payloads into StreamChunks (replay contract
// § 8). It is single-use.
type translator struct {
	blocks    []*block // allocation order; the chunk index is the position
	reasoning *block
	text      *block
	tools     []*block
	finish    string
	usage     *wireUsage
}

// eventNoter is a stream reader told of each data event translate handled
// (the watched body, whose data-idle timeout it resets).
type eventNoter interface{ event() }

// translate reads the SSE stream r and emits its chunks until [DONE],
// emit returning false (nil error), or a failure: STREAM_CLOSED when the
// stream ends without [DONE], MALFORMED_RESPONSE for an unparseable
// payload, an error wrapping ctx.Err() once ctx is done, or the wrapped
// read error.
func translate(ctx context.Context, r io.Reader, emit func(llm.Chunk) bool) error {
	sse := newSSEReader(r)
	var t translator
	noter, _ := r.(eventNoter)
	for {
		data, err := sse.next()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("deepseek: stream aborted: %w", ctxErr)
		}
		switch {
		case errors.Is(err, io.EOF):
			return &llm.Error{Message: "SSE stream ended without [DONE]", Code: CodeStreamClosed}
		case err != nil:
			return fmt.Errorf("deepseek: reading SSE stream: %w", err)
		}
		if string(data) == "[DONE]" {
			t.done(emit)
			return nil
		}
		ok, err := t.payload(data, emit)
		if err != nil {
			return err
		}
		if noter != nil {
			noter.event()
		}
		if !ok {
			return nil
		}
	}
}

// payload decodes and translates one event's data. It reports false when
// emit asked to stop. A JSON syntax error is MALFORMED_RESPONSE; a value
// of an unexpected type is skipped (the reference checks types and
// ignores what does not fit), the rest of the payload still counts.
func (t *translator) payload(data []byte, emit func(llm.Chunk) bool) (bool, error) {
	var p payload
	if fastPayload(data, &p) {
		// decoded by the fast path
	} else if err := json.Unmarshal(data, &p); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok {
			return false, &llm.Error{Message: "malformed SSE payload: " + prefixUTF16(string(data), malformedPrefixUnits),
				Code: CodeMalformedResponse}
		}
	}
	for i := range p.Choices {
		c := &p.Choices[i]
		if s := c.Delta.ReasoningContent; s != "" {
			if !t.textDelta(&t.reasoning, session.BlockReasoning, llm.ChunkReasoningDelta, s, emit) {
				return false, nil
			}
		}
		if s := c.Delta.Content; s != "" {
			if !t.textDelta(&t.text, session.BlockText, llm.ChunkTextDelta, s, emit) {
				return false, nil
			}
		}
		for j := range c.Delta.ToolCalls {
			if !t.toolDelta(&c.Delta.ToolCalls[j], j, emit) {
				return false, nil
			}
		}
		if c.FinishReason != "" {
			t.finish = c.FinishReason
		}
	}
	if p.Usage != nil {
		t.usage = p.Usage
	}
	return true, nil
}

// open allocates the next block index and emits its block-start.
func (t *translator) open(typ string, emit func(llm.Chunk) bool) (*block, bool) {
	b := &block{index: len(t.blocks), typ: typ}
	t.blocks = append(t.blocks, b)
	return b, emit(llm.Chunk{Type: llm.ChunkBlockStart, Index: b.index, BlockType: typ})
}

// textDelta emits a reasoning or text delta, opening the block on first
// sight.
func (t *translator) textDelta(slot **block, typ string, chunkType llm.ChunkType, s string, emit func(llm.Chunk) bool) bool {
	if *slot == nil {
		b, ok := t.open(typ, emit)
		*slot = b
		if !ok {
			return false
		}
	}
	b := *slot
	b.text.WriteString(s)
	return emit(llm.Chunk{Type: chunkType, Index: b.index, Text: s})
}

// toolDelta emits a tool-call-delta for tool_calls[pos], opening the block
// on first sight of its wire index (the position when index is absent).
func (t *translator) toolDelta(d *toolCallDelta, pos int, emit func(llm.Chunk) bool) bool {
	wire := pos
	if d.Index != nil {
		wire = *d.Index
	}
	var b *block
	for _, tb := range t.tools {
		if tb.wire == wire {
			b = tb
			break
		}
	}
	if b == nil {
		var ok bool
		b, ok = t.open(session.BlockToolCall, emit)
		b.wire = wire
		t.tools = append(t.tools, b)
		if !ok {
			return false
		}
	}
	if d.ID != "" {
		b.id = d.ID
	}
	if n := d.Function.Name; n != "" && (b.name == nil || *b.name != n) {
		b.name = &n
	}
	b.args.WriteString(d.Function.Arguments)
	return emit(llm.Chunk{Type: llm.ChunkToolCallDelta, Index: b.index, ID: b.id, Name: b.name,
		ArgumentsDelta: d.Function.Arguments})
}

// done emits, at [DONE], a block-end per block in allocation order, the
// usage if any, and the finish.
func (t *translator) done(emit func(llm.Chunk) bool) {
	for _, b := range t.blocks {
		sb := &session.Block{Type: b.typ}
		if b.typ == session.BlockToolCall {
			sb.ID, sb.Arguments = b.id, b.args.String()
			if b.name != nil {
				sb.Name = *b.name
			}
		} else {
			sb.Text = b.text.String()
		}
		if !emit(llm.Chunk{Type: llm.ChunkBlockEnd, Index: b.index, Block: sb}) {
			return
		}
	}
	if t.usage != nil {
		if !emit(llm.Chunk{Type: llm.ChunkUsage, Usage: mapUsage(t.usage)}) {
			return
		}
	}
	emit(llm.Chunk{Type: llm.ChunkFinish, Reason: mapFinish(t.finish)})
}

// mapUsage converts DeepSeek usage: cached tokens come from
// prompt_tokens_details.cached_tokens, else prompt_cache_hit_tokens, and
// are subtracted from the input tokens.
func mapUsage(u *wireUsage) *llm.Usage {
	var cached *int
	switch {
	case u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens != nil:
		cached = u.PromptTokensDetails.CachedTokens
	case u.PromptCacheHitTokens != nil:
		cached = u.PromptCacheHitTokens
	}
	out := &llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if cached != nil {
		n := *cached
		out.InputTokens -= n
		out.CacheReadTokens = &n
	}
	if d := u.CompletionTokensDetails; d != nil && d.ReasoningTokens != nil {
		n := *d.ReasoningTokens
		out.ReasoningTokens = &n
	}
	return out
}

// mapFinish converts a DeepSeek finish_reason ("" when none was sent).
func mapFinish(r string) *llm.FinishReason {
	switch r {
	case "", "stop":
		return &llm.FinishReason{Kind: llm.FinishStop}
	case "tool_calls":
		return &llm.FinishReason{Kind: llm.FinishToolCalls}
	case "length":
		return &llm.FinishReason{Kind: llm.FinishMaxTokens}
	}
	return &llm.FinishReason{Kind: llm.FinishError, Message: "model stopped: " + r, Code: strings.ToUpper(r)}
}

// prefixUTF16 returns the longest prefix of s spanning at most n UTF-16
// code units (JavaScript's s.slice(0, n), minus a split surrogate pair).
func prefixUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}
