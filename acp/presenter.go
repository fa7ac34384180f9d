package acp

import (
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// marshal is the project's JSON encoding (no HTML escaping).
func marshal(v any) ([]byte, error) { return jsonx.Marshal(v) }

// presenter translates one session's log events into session/update
// payloads. The same translator serves live streaming and session/load
// replay (which also shows user messages).
type presenter struct {
	window       int // context window in tokens for usage_update (0: none)
	tools        ToolLookup
	cwd          string
	terminal     bool
	includeUsers bool
	calls        map[string]rememberedCall
	// cardOrphans presents a result whose call has no tool/call as the
	// call's card first (Options.CardUnloggedCalls); announced holds the
	// tool calls of assistant messages for that.
	cardOrphans bool
	// compaction shows compactions as compaction_update (the client
	// advertised session.compaction); compactID is the open one's id.
	compaction bool
	compactID  string
	announced  map[string]session.Block
	// editor renders cards for editors (Options.EditorCards): absolute
	// paths, and the peers' card shapes.
	editor bool
	// live is what the session's running calls showed ephemerally
	// (Options.LiveOutput; nil for a load replay): a result's card
	// follows on from it.
	live *liveCards
}

type rememberedCall struct {
	name string
	args json.RawMessage
	view *capabilities.CallView
}

func newPresenter(tools ToolLookup, cwd string, terminal, includeUsers bool) *presenter {
	return &presenter{tools: tools, cwd: cwd, terminal: terminal, includeUsers: includeUsers, calls: map[string]rememberedCall{}}
}

// present returns the updates one event produces (often none).
func (p *presenter) present(ev session.Event) []any {
	if p.compaction {
		if out, ok := p.compactionEvent(ev); ok {
			return out
		}
	}
	switch ev.Type {
	case session.TypeAssistantChunk:
		if pl, ok := ev.Payload.(session.AssistantChunk); ok && pl.Kind != "" {
			switch llm.ChunkType(pl.Kind) {
			case llm.ChunkTextDelta:
				return []any{ContentChunk{UpdateAgentMessageChunk, TextContent{"text", pl.Text}}}
			case llm.ChunkReasoningDelta:
				return []any{ContentChunk{UpdateAgentThoughtChunk, TextContent{"text", pl.Text}}}
			}
			return nil
		}
		if kind, text, ok := session.ChunkDelta(ev.Data); ok {
			switch llm.ChunkType(kind) {
			case llm.ChunkTextDelta:
				return []any{ContentChunk{UpdateAgentMessageChunk, TextContent{"text", text}}}
			case llm.ChunkReasoningDelta:
				return []any{ContentChunk{UpdateAgentThoughtChunk, TextContent{"text", text}}}
			}
			return nil
		}
		var c struct {
			Chunk struct {
				Type llm.ChunkType `json:"type"`
				Text string        `json:"text"`
			} `json:"chunk"`
		}
		if ev.Decode(&c) != nil {
			return nil
		}
		switch c.Chunk.Type {
		case llm.ChunkTextDelta:
			return []any{ContentChunk{UpdateAgentMessageChunk, TextContent{"text", c.Chunk.Text}}}
		case llm.ChunkReasoningDelta:
			return []any{ContentChunk{UpdateAgentThoughtChunk, TextContent{"text", c.Chunk.Text}}}
		}
	case session.TypeUserMessage:
		if !p.includeUsers {
			return nil
		}
		var m session.Message
		if ev.Decode(&m) != nil {
			return nil
		}
		var out []any
		for _, b := range m.Content {
			if b.Type == session.BlockText {
				out = append(out, ContentChunk{UpdateUserMessageChunk, TextContent{"text", b.Text}})
			}
		}
		return out
	case session.TypeToolCall:
		var c session.ToolCall
		if ev.Decode(&c) != nil {
			return nil
		}
		card, view := p.callCard(c)
		p.calls[c.CallID] = rememberedCall{name: c.Name, args: capabilities.ParseArgs(c.Arguments), view: view}
		if view != nil && view.Kind == capabilities.ViewTerminal {
			p.live.open(c.CallID)
		}
		delete(p.announced, c.CallID)
		if p.editor && view != nil && view.Hidden {
			return nil
		}
		return []any{card}
	case session.TypeToolResult:
		var r session.ToolResult
		if ev.Decode(&r) != nil {
			return nil
		}
		var call *rememberedCall
		if c, ok := p.calls[r.CallID]; ok {
			call = &c
			delete(p.calls, r.CallID)
			if p.editor && c.view != nil && c.view.Hidden {
				return nil
			}
		} else if b, ok := p.announced[r.CallID]; ok && p.cardOrphans {
			// Crash repair closed a call whose tool/call was never logged:
			// it never ran, and the editor never saw its card. Show it.
			card, view := p.callCard(session.ToolCall{Turn: r.Turn, Step: r.Step, CallID: b.ID, Name: b.Name, Arguments: b.Arguments})
			c := rememberedCall{name: b.Name, args: capabilities.ParseArgs(b.Arguments), view: view}
			delete(p.announced, r.CallID)
			return []any{card, p.resultCard(r, &c)}
		}
		return []any{p.resultCard(r, call)}
	case session.TypeAssistantMessage:
		if p.cardOrphans {
			p.announce(ev)
		}
		if p.window <= 0 {
			return nil
		}
		var m struct {
			Usage *struct {
				InputTokens     int `json:"inputTokens"`
				OutputTokens    int `json:"outputTokens"`
				CacheReadTokens int `json:"cacheReadTokens"`
			} `json:"usage"`
		}
		if ev.Decode(&m) != nil || m.Usage == nil {
			return nil
		}
		used := m.Usage.InputTokens + m.Usage.CacheReadTokens + m.Usage.OutputTokens
		return []any{UsageUpdate{SessionUpdate: UpdateUsage, Used: used, Size: p.window}}
	case session.TypeToolProgress:
		var pr session.ToolProgress
		if ev.Decode(&pr) != nil {
			return nil
		}
		return []any{p.progressCard(pr)}
	case agent.TypeModelNotice:
		var n agent.ModelNotice
		if ev.Decode(&n) != nil {
			return nil
		}
		return []any{ContentChunk{UpdateAgentThoughtChunk, TextContent{"text", n.Text + "\n"}}}
	case agent.TypeCommandResult:
		var r agent.CommandResult
		if ev.Decode(&r) != nil {
			return nil
		}
		return []any{ContentChunk{UpdateAgentMessageChunk, TextContent{"text", r.Text}}}
	case session.TypeTodoWrite:
		var t session.TodoWrite
		if ev.Decode(&t) != nil {
			return nil
		}
		entries := make([]PlanEntry, 0, len(t.Todos))
		for _, td := range t.Todos {
			entries = append(entries, PlanEntry{Content: td.Content, Priority: p.priority(td.Status), Status: td.Status})
		}
		return []any{PlanUpdate{UpdatePlan, entries}}
	}
	return nil
}

// priority is a plan entry's priority: upstream's "medium" for all; for
// editors the task in progress is high and finished ones low, so the plan
// reads at a glance.
func (p *presenter) priority(status string) string {
	if !p.editor {
		return "medium"
	}
	switch status {
	case "in_progress":
		return "high"
	case "completed":
		return "low"
	}
	return "medium"
}

// AvailableCommand is one slash command in available_commands_update.
type AvailableCommand struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *CommandInput `json:"input,omitempty"`
}

// CommandInput describes a command's arguments.
type CommandInput struct {
	Hint string `json:"hint"`
}

// AvailableCommandsUpdate advertises the session's slash commands.
type AvailableCommandsUpdate struct {
	SessionUpdate     UpdateKind         `json:"sessionUpdate"`
	AvailableCommands []AvailableCommand `json:"availableCommands"`
}

// UsageUpdate is the context meter: tokens in the context after the last
// model call, and the context window.
type UsageUpdate struct {
	SessionUpdate UpdateKind `json:"sessionUpdate"`
	Used          int        `json:"used"`
	Size          int        `json:"size"`
}

// announce remembers the tool calls an assistant message announces, for
// cardOrphans.
func (p *presenter) announce(ev session.Event) {
	var m session.AssistantMessage
	if ev.Decode(&m) != nil {
		return
	}
	for _, b := range m.Content {
		if b.Type != session.BlockToolCall {
			continue
		}
		if p.announced == nil {
			p.announced = map[string]session.Block{}
		}
		p.announced[b.ID] = b
	}
}

// chunkMerger joins consecutive text chunks of one kind (a message's
// answer, its reasoning) into one update (Options.MergeReplayChunks).
type chunkMerger struct {
	kind UpdateKind
	text []byte
	open bool
}

// add passes u on through send, holding text chunks until a chunk of
// another kind or any other update ends the run.
func (m *chunkMerger) add(u any, send func(any)) {
	c, ok := u.(ContentChunk)
	if ok && c.Content.Type == "text" && (c.SessionUpdate == UpdateAgentMessageChunk || c.SessionUpdate == UpdateAgentThoughtChunk) {
		m.start(c.SessionUpdate, send)
		m.text = append(m.text, c.Content.Text...)
		return
	}
	m.flush(send)
	send(u)
}

// addText adds one text chunk of kind (an agent message or thought
// chunk), as add does with its update.
func (m *chunkMerger) addText(kind UpdateKind, text []byte, send func(any)) {
	m.start(kind, send)
	m.text = append(m.text, text...)
}

// start opens a run of kind, sending a held run of another kind first.
func (m *chunkMerger) start(kind UpdateKind, send func(any)) {
	if m.open && m.kind != kind {
		m.flush(send)
	}
	m.kind, m.open = kind, true
}

// flush sends the held run, if any.
func (m *chunkMerger) flush(send func(any)) {
	if !m.open {
		return
	}
	send(ContentChunk{m.kind, TextContent{"text", string(m.text)}})
	m.text, m.open = m.text[:0], false
}
