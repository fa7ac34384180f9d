package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

// testLogLetsChunksGo: a Log over a store that reads back keeps the
// streamed chunks only until they are written; the whole log (All,
// Prefix) is still what the store holds, byte for byte, before and after
// a resume, and read-back changes nothing (an open turn is not repaired).
func testLogLetsChunksGo(t *testing.T, st session.Store) {
	rd, ok := st.(session.Reader)
	if !ok {
		t.Skip("the store does not read back: a log over it keeps every event")
	}
	ctx := context.Background()
	var now int64 = 100
	clock := func() int64 { now++; return now }
	h := session.Header{ID: "chunks-1", CreatedAt: 99, Cwd: "/w"}
	l := session.NewLog(h, clock, st)
	turn := func(n int) {
		l.Append(session.TypeTurnStart, session.TurnStart{Turn: n, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
		l.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock("hi")}, Source: session.UserSource})
		var seqs []int
		for i := range 5 {
			ev := l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: n, Step: 1, Chunk: json.RawMessage(fmt.Sprintf(`{"type":"text-delta","index":0,"text":"w%d "}`, i))})
			seqs = append(seqs, ev.Seq)
		}
		l.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: n, Step: 1, Content: []session.Block{session.TextBlock("w0 w1 w2 w3 w4 ")}}, session.WithSourceSeqs(seqs))
		l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: n, Reason: session.EndReason{Kind: session.EndCompleted}})
	}
	turn(1)
	all, err := l.All(ctx) // nothing written yet: memory has the chunks
	require.NoError(t, err)
	require.Len(t, all, 9)
	require.NoError(t, l.Write(ctx))
	turn(2)
	require.NoError(t, l.Flush(ctx))
	for _, e := range l.Events() {
		require.NotEqual(t, session.TypeAssistantChunk, e.Type, "a written chunk left memory")
	}
	require.Equal(t, 8, l.Len())
	require.Equal(t, 18, l.NextSeq())
	_, stored, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	all, err = l.All(ctx)
	require.NoError(t, err)
	require.Equal(t, Lines(t, stored), Lines(t, all))
	prefix, err := l.Prefix(ctx, 9)
	require.NoError(t, err)
	require.Equal(t, Lines(t, stored[:9]), Lines(t, prefix))
	var kept []session.Event
	for _, e := range stored {
		if e.Type != session.TypeAssistantChunk {
			kept = append(kept, e)
		}
	}
	require.Equal(t, Lines(t, kept), Lines(t, l.Events()), "the kept events encode as stored (sourceEventSeqs included)")
	require.Equal(t, []int{11, 12, 13, 14, 15}, l.Events()[6].Sources())

	// A turn left open (no turn/end yet) reads back as written: no repair.
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 3, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	require.NoError(t, l.Flush(ctx))
	back, err := rd.ReadBack(ctx, h.ID, 19)
	require.NoError(t, err)
	require.Equal(t, session.TypeTurnStart, back[18].Type)
	again, err := rd.ReadBack(ctx, h.ID, 19)
	require.NoError(t, err)
	require.Equal(t, Lines(t, back), Lines(t, again))
	_, err = rd.ReadBack(ctx, h.ID, 20)
	require.Error(t, err, "more events than stored")

	// Resumed, the log shows the loaded events whole without reading
	// back; after its first write it reads back what it let go of.
	require.NoError(t, l.Close(ctx))
	gotH, loaded, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	r := session.ResumeLog(gotH, loaded, clock, st)
	for _, e := range r.Events() {
		require.NotEqual(t, session.TypeAssistantChunk, e.Type)
	}
	all, err = r.All(ctx)
	require.NoError(t, err)
	require.Equal(t, Lines(t, loaded), Lines(t, all))
	r.Append(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: "a", Status: "pending"}}})
	require.NoError(t, r.Flush(ctx))
	_, stored, err = st.Load(ctx, h.ID)
	require.NoError(t, err)
	all, err = r.All(ctx)
	require.NoError(t, err)
	require.Equal(t, Lines(t, stored), Lines(t, all))
	require.Equal(t, len(stored), r.NextSeq())
}

// testLogReleases: events a Log releases leave memory (Events, Len, Last)
// but not the log: All and Prefix read them back byte for byte, whether
// they were written yet or not, and a slice Events returned before does
// not change.
func testLogReleases(t *testing.T, st session.Store) {
	if _, ok := st.(session.Reader); !ok {
		t.Skip("the store does not read back: a log over it keeps every event")
	}
	ctx := context.Background()
	var now int64
	l := session.NewLog(session.Header{ID: "release-1", CreatedAt: 1, Cwd: "/w"}, func() int64 { now++; return now }, st)
	turn := func(n int) {
		l.Append(session.TypeTurnStart, session.TurnStart{Turn: n, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
		l.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock(fmt.Sprint("question ", n))}, Source: session.UserSource})
		l.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: n, Step: 1, Content: []session.Block{session.TextBlock(fmt.Sprint("answer ", n))}})
		l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: n, Reason: session.EndReason{Kind: session.EndCompleted}})
	}
	turn(1)
	turn(2)
	require.NoError(t, l.Write(ctx))
	turn(3) // pending: not handed to the store yet
	whole, err := l.All(ctx)
	require.NoError(t, err)
	before := l.Events()
	answers := func(e session.Event) bool { return e.Type == session.TypeAssistantMessage && e.Seq <= 10 }
	require.Equal(t, 3, l.Release(answers))
	require.Equal(t, 0, l.Release(answers), "a second release finds nothing more")

	require.Len(t, before, 12, "an earlier Events slice does not change")
	require.Equal(t, session.TypeAssistantMessage, before[2].Type)
	require.Equal(t, 9, l.Len())
	for _, e := range l.Events() {
		require.False(t, answers(e), "event #%d was released", e.Seq)
	}
	last, ok := l.Last(session.TypeTurnEnd)
	require.True(t, ok)
	require.Equal(t, 11, last.Seq, "Last still finds what is kept")
	_, ok = l.Last(session.TypeAssistantMessage)
	require.False(t, ok, "Last does not find a released event")

	all, err := l.All(ctx)
	require.NoError(t, err)
	require.Equal(t, Lines(t, whole), Lines(t, all), "All reads the released events back")
	prefix, err := l.Prefix(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, Lines(t, whole[:7]), Lines(t, prefix))
	require.NoError(t, l.Flush(ctx))
	all, err = l.All(ctx)
	require.NoError(t, err)
	require.Equal(t, Lines(t, whole), Lines(t, all), "and so after the rest is written")

	l.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: 3, Step: 2, Content: []session.Block{session.TextBlock("later")}})
	last, ok = l.Last(session.TypeAssistantMessage)
	require.True(t, ok)
	require.Equal(t, 12, last.Seq, "an event appended after a release is found")
}
