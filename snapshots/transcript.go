package snapshots

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one line of a run's timeline: sent by the scripted client or
// received from the agent.
type Message struct {
	Sent bool
	Line []byte
}

// Transcript renders a replayed conversation for people: the prompts the
// scripted client sent and what the agent streamed back (thoughts, answer,
// tool cards with their results, plans), instead of raw JSON-RPC.
func Transcript(timeline []Message) string {
	var b strings.Builder
	var stream string // the kind of chunk run currently open
	flush := func() {
		if stream != "" {
			b.WriteString("\n")
			stream = ""
		}
	}
	prompts := map[string]bool{}
	for _, m := range timeline {
		var f struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(m.Line, &f) != nil {
			continue
		}
		if m.Sent {
			if f.Method == "session/prompt" {
				var p struct {
					Prompt []struct {
						Text string `json:"text"`
					} `json:"prompt"`
				}
				_ = json.Unmarshal(f.Params, &p)
				var parts []string
				for _, c := range p.Prompt {
					parts = append(parts, c.Text)
				}
				flush()
				prompts[string(f.ID)] = true
				fmt.Fprintf(&b, "\nyou › %s\n", strings.Join(parts, ""))
			}
			if f.Method == "session/cancel" {
				flush()
				b.WriteString("  (you cancelled)\n")
			}
			continue
		}
		switch {
		case f.Method == "session/update":
			var p struct {
				Update map[string]json.RawMessage `json:"update"`
			}
			_ = json.Unmarshal(f.Params, &p)
			var kind string
			_ = json.Unmarshal(p.Update["sessionUpdate"], &kind)
			renderUpdate(&b, kind, p.Update, &stream, flush)
		case f.Method != "":
			flush()
			fmt.Fprintf(&b, "  ⇄ the agent asks you: %s\n", f.Method)
		case prompts[string(f.ID)]:
			flush()
			if f.Error != nil {
				fmt.Fprintf(&b, "■ turn failed: %s\n", f.Error.Message)
				continue
			}
			var r struct {
				StopReason string `json:"stopReason"`
			}
			_ = json.Unmarshal(f.Result, &r)
			fmt.Fprintf(&b, "■ %s\n", r.StopReason)
		}
	}
	flush()
	return b.String()
}

func renderUpdate(b *strings.Builder, kind string, u map[string]json.RawMessage, stream *string, flush func()) {
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(u[k], &s)
		return s
	}
	switch kind {
	case "agent_thought_chunk", "agent_message_chunk", "user_message_chunk":
		var c struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(u["content"], &c)
		want := map[string]string{"agent_thought_chunk": "thought", "agent_message_chunk": "message", "user_message_chunk": "user"}[kind]
		if *stream != want {
			flush()
			*stream = want
			switch want {
			case "thought":
				b.WriteString("  (thinking) ")
			case "message":
				b.WriteString("agent › ")
			case "user":
				b.WriteString("you › ")
			}
		}
		b.WriteString(strings.ReplaceAll(c.Text, "\n", "\n  "))
	case "tool_call":
		flush()
		fmt.Fprintf(b, "  ▸ [%s] %s\n", str("kind"), str("title"))
		renderContent(b, u["content"])
	case "tool_call_update":
		flush()
		status := str("status")
		mark := "✓"
		if status == "failed" {
			mark = "✗"
		}
		fmt.Fprintf(b, "    %s %s\n", mark, status)
		renderContent(b, u["content"])
		var meta struct {
			Out *struct {
				Data string `json:"data"`
			} `json:"terminal_output"`
		}
		if json.Unmarshal(u["_meta"], &meta) == nil && meta.Out != nil {
			writeIndented(b, strings.TrimRight(meta.Out.Data, "\n"), "      │ ")
		}
	case "plan":
		flush()
		var entries []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		}
		_ = json.Unmarshal(u["entries"], &entries)
		b.WriteString("  ▸ plan\n")
		for _, e := range entries {
			box := map[string]string{"completed": "[x]", "in_progress": "[~]"}[e.Status]
			if box == "" {
				box = "[ ]"
			}
			fmt.Fprintf(b, "      %s %s\n", box, e.Content)
		}
	case "current_mode_update":
		flush()
		fmt.Fprintf(b, "  ▸ mode: %s\n", str("currentModeId"))
	}
}

func renderContent(b *strings.Builder, raw json.RawMessage) {
	var items []struct {
		Type    string `json:"type"`
		Content *struct {
			Text string `json:"text"`
		} `json:"content"`
		Path    string  `json:"path"`
		OldText *string `json:"oldText"`
		NewText string  `json:"newText"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return
	}
	for _, it := range items {
		switch it.Type {
		case "content":
			if it.Content != nil {
				writeIndented(b, clipLines(it.Content.Text, 12), "      │ ")
			}
		case "diff":
			fmt.Fprintf(b, "      ── %s\n", it.Path)
			if it.OldText != nil {
				writeIndented(b, *it.OldText, "      - ")
			}
			writeIndented(b, it.NewText, "      + ")
		}
	}
}

func writeIndented(b *strings.Builder, text, prefix string) {
	if text == "" {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		b.WriteString(prefix)
		b.WriteString(l)
		b.WriteString("\n")
	}
}

func clipLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) <= n {
		return s
	}
	return strings.Join(ls[:n], "\n") + fmt.Sprintf("\n… (%d more lines)", len(ls)-n)
}
