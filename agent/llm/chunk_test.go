package llm

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

func TestChunkEncodingKeepsKeyOrder(t *testing.T) {
	name := "bash"
	one := 1
	blk := session.Block{Type: session.BlockText, Text: "hi"}
	cases := map[string]Chunk{
		`{"type":"block-start","index":0,"blockType":"reasoning"}`:                        {Type: ChunkBlockStart, BlockType: "reasoning"},
		`{"type":"text-delta","index":1,"text":"<a href=\"x\">&\n</a>` + "\u2028" + `"}`:  {Type: ChunkTextDelta, Index: 1, Text: "<a href=\"x\">&\n</a>\u2028"},
		`{"type":"reasoning-delta","index":0,"text":""}`:                                  {Type: ChunkReasoningDelta},
		`{"type":"tool-call-delta","index":2,"id":"c","name":"bash","argumentsDelta":""}`: {Type: ChunkToolCallDelta, Index: 2, ID: "c", Name: &name},
		`{"type":"block-end","index":1,"block":{"type":"text","text":"hi"}}`:              {Type: ChunkBlockEnd, Index: 1, Block: &blk},
		`{"type":"usage","usage":{"inputTokens":3,"outputTokens":4,"cacheReadTokens":1}}`: {Type: ChunkUsage, Usage: &Usage{InputTokens: 3, OutputTokens: 4, CacheReadTokens: &one}},
		`{"type":"finish","reason":{"kind":"error","message":"m","code":"C"}}`:            {Type: ChunkFinish, Reason: &FinishReason{Kind: FinishError, Message: "m", Code: "C"}},
	}
	for want, c := range cases {
		got, err := c.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, want, string(got))
		var back Chunk
		require.NoError(t, json.Unmarshal(got, &back))
		again, _ := back.MarshalJSON()
		require.Equal(t, want, string(again), "a decoded chunk re-encodes to its bytes")
	}
}

func TestAssemblerTakesClosedBlocksVerbatim(t *testing.T) {
	var a Assembler
	blk := session.Block{Type: session.BlockText, Text: "final"}
	for _, c := range []Chunk{
		{Type: ChunkBlockStart, Index: 0, BlockType: "text"},
		{Type: ChunkTextDelta, Index: 0, Text: "draft"},
		{Type: ChunkBlockEnd, Index: 0, Block: &blk},
		{Type: ChunkTextDelta, Index: 0, Text: " ignored"},
		{Type: ChunkToolCallDelta, Index: 1, ID: "", ArgumentsDelta: `{"a":`},
		{Type: ChunkToolCallDelta, Index: 1, ID: "", ArgumentsDelta: `1}`},
	} {
		a.Add(c)
	}
	require.Equal(t, []session.Block{blk, {Type: session.BlockToolCall, ID: "call-1", Arguments: `{"a":1}`}}, a.Content())
	require.Equal(t, FinishReason{Kind: FinishStop}, a.Finish())
	require.False(t, a.Finished())
}
