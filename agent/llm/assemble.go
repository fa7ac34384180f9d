package llm

import (
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/session"
)

// Assembler folds stream chunks into the content blocks of an
// assistant/message (session-log contract § 4, assembly).
type Assembler struct {
	order  []int
	blocks map[int]*partial
	usage  *Usage
	finish *FinishReason
}

type partial struct {
	typ    string
	text   strings.Builder
	id     string
	name   string
	args   strings.Builder
	closed *session.Block
}

// Add folds one chunk.
func (a *Assembler) Add(c Chunk) {
	if a.blocks == nil {
		a.blocks = map[int]*partial{}
	}
	get := func(typ string) *partial {
		p, ok := a.blocks[c.Index]
		if !ok {
			p = &partial{typ: typ}
			a.blocks[c.Index] = p
			a.order = append(a.order, c.Index)
		}
		if p.typ == "" {
			p.typ = typ
		}
		return p
	}
	switch c.Type {
	case ChunkBlockStart:
		get(c.BlockType)
	case ChunkTextDelta:
		if p := get(session.BlockText); p.closed == nil {
			p.text.WriteString(c.Text)
		}
	case ChunkReasoningDelta:
		if p := get(session.BlockReasoning); p.closed == nil {
			p.text.WriteString(c.Text)
		}
	case ChunkToolCallDelta:
		if p := get(session.BlockToolCall); p.closed == nil {
			p.id = c.ID
			if c.Name != nil && *c.Name != "" {
				p.name = *c.Name
			}
			p.args.WriteString(c.ArgumentsDelta)
		}
	case ChunkBlockEnd:
		if c.Block == nil {
			return
		}
		if p := get(c.Block.Type); p.closed == nil {
			b := *c.Block
			p.closed = &b
		}
	case ChunkUsage:
		a.usage = c.Usage
	case ChunkFinish:
		a.finish = c.Reason
	}
}

// Content returns the assembled blocks in order of first appearance.
func (a *Assembler) Content() []session.Block {
	out := make([]session.Block, 0, len(a.order))
	for _, i := range a.order {
		p := a.blocks[i]
		if p.closed != nil {
			out = append(out, *p.closed)
			continue
		}
		switch p.typ {
		case session.BlockToolCall:
			id := p.id
			if id == "" {
				id = "call-" + strconv.Itoa(i)
			}
			out = append(out, session.Block{Type: session.BlockToolCall, ID: id, Name: p.name, Arguments: p.args.String()})
		case session.BlockText, session.BlockReasoning:
			out = append(out, session.Block{Type: p.typ, Text: p.text.String()})
		}
	}
	return out
}

// ToolArgs reports the tool call being assembled at index: its id as
// Content would name it, and how many bytes of arguments it has so far.
func (a *Assembler) ToolArgs(index int) (id string, n int) {
	id = "call-" + strconv.Itoa(index)
	if p, ok := a.blocks[index]; ok {
		if p.id != "" {
			id = p.id
		}
		n = p.args.Len()
	}
	return id, n
}

// Usage returns the last usage chunk's usage, or nil.
func (a *Assembler) Usage() *Usage { return a.usage }

// Finish returns the last finish reason, defaulting to stop.
func (a *Assembler) Finish() FinishReason {
	if a.finish == nil {
		return FinishReason{Kind: FinishStop}
	}
	return *a.finish
}

// Finished reports whether a finish chunk was seen.
func (a *Assembler) Finished() bool { return a.finish != nil }
