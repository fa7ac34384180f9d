// Package llm is the model layer: the stream-chunk vocabulary every provider
// speaks, the request the agent derives from the log, the provider
// interface, and the assembler that turns chunks into content blocks.
package llm

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// ChunkType says what a stream chunk carries (session-log contract § 4).
type ChunkType string

// The chunk types.
const (
	ChunkBlockStart     ChunkType = "block-start"
	ChunkTextDelta      ChunkType = "text-delta"
	ChunkReasoningDelta ChunkType = "reasoning-delta"
	ChunkToolCallDelta  ChunkType = "tool-call-delta"
	ChunkBlockEnd       ChunkType = "block-end"
	ChunkUsage          ChunkType = "usage"
	ChunkFinish         ChunkType = "finish"
)

// FinishKind says why a model call ended.
type FinishKind string

// The finish kinds.
const (
	FinishStop      FinishKind = "stop"
	FinishToolCalls FinishKind = "tool-calls"
	FinishMaxTokens FinishKind = "max-tokens"
	FinishAborted   FinishKind = "aborted"
	FinishError     FinishKind = "error"
)

// Usage is token accounting for one model call.
type Usage struct {
	InputTokens      int  `json:"inputTokens"`
	OutputTokens     int  `json:"outputTokens"`
	CacheReadTokens  *int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens *int `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  *int `json:"reasoningTokens,omitempty"`
}

// FinishReason says how a model call ended; Message and Code only for error.
type FinishReason struct {
	Kind    FinishKind `json:"kind"`
	Message string     `json:"message,omitempty"`
	Code    string     `json:"code,omitempty"`
}

// Chunk is one StreamChunk. Which fields matter depends on Type. A chunk
// decoded from a recorded log keeps its bytes in Raw and re-encodes to them
// exactly.
type Chunk struct {
	Type           ChunkType
	Index          int
	BlockType      string         // block-start
	Text           string         // text-delta, reasoning-delta
	ID             string         // tool-call-delta
	Name           *string        // tool-call-delta
	ArgumentsDelta string         // tool-call-delta
	Block          *session.Block // block-end
	Usage          *Usage         // usage
	Reason         *FinishReason  // finish
	Raw            json.RawMessage
}

// MarshalJSON emits the chunk in contract key order (or Raw verbatim).
func (c Chunk) MarshalJSON() ([]byte, error) {
	if c.Raw != nil {
		return c.Raw, nil
	}
	switch c.Type {
	case ChunkBlockStart:
		return jsonx.Marshal(struct {
			Type      ChunkType `json:"type"`
			Index     int       `json:"index"`
			BlockType string    `json:"blockType"`
		}{c.Type, c.Index, c.BlockType})
	case ChunkTextDelta, ChunkReasoningDelta:
		// The streaming hot path: encoded by hand.
		b := make([]byte, 0, 48+len(c.Text))
		b = append(b, `{"type":`...)
		b = jsonx.AppendString(b, string(c.Type))
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(c.Index), 10)
		b = append(b, `,"text":`...)
		b = jsonx.AppendString(b, c.Text)
		return append(b, '}'), nil
	case ChunkToolCallDelta:
		return jsonx.Marshal(struct {
			Type           ChunkType `json:"type"`
			Index          int       `json:"index"`
			ID             string    `json:"id"`
			Name           *string   `json:"name,omitempty"`
			ArgumentsDelta string    `json:"argumentsDelta"`
		}{c.Type, c.Index, c.ID, c.Name, c.ArgumentsDelta})
	case ChunkBlockEnd:
		return jsonx.Marshal(struct {
			Type  ChunkType      `json:"type"`
			Index int            `json:"index"`
			Block *session.Block `json:"block"`
		}{c.Type, c.Index, c.Block})
	case ChunkUsage:
		return jsonx.Marshal(struct {
			Type  ChunkType `json:"type"`
			Usage *Usage    `json:"usage"`
		}{c.Type, c.Usage})
	case ChunkFinish:
		return jsonx.Marshal(struct {
			Type   ChunkType     `json:"type"`
			Reason *FinishReason `json:"reason"`
		}{c.Type, c.Reason})
	}
	return nil, fmt.Errorf("llm: unknown chunk type %q", c.Type)
}

// UnmarshalJSON decodes a chunk and keeps its bytes for exact re-encoding.
func (c *Chunk) UnmarshalJSON(b []byte) error {
	var j struct {
		Type           ChunkType      `json:"type"`
		Index          int            `json:"index"`
		BlockType      string         `json:"blockType"`
		Text           string         `json:"text"`
		ID             string         `json:"id"`
		Name           *string        `json:"name"`
		ArgumentsDelta string         `json:"argumentsDelta"`
		Block          *session.Block `json:"block"`
		Usage          *Usage         `json:"usage"`
		Reason         *FinishReason  `json:"reason"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	raw, err := jsonx.Compact(b)
	if err != nil {
		return err
	}
	*c = Chunk{Type: j.Type, Index: j.Index, BlockType: j.BlockType, Text: j.Text, ID: j.ID, Name: j.Name,
		ArgumentsDelta: j.ArgumentsDelta, Block: j.Block, Usage: j.Usage, Reason: j.Reason, Raw: raw}
	return nil
}
