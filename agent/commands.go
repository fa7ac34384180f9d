package agent

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/session"
)

// TypeCommandResult records what a slash command told the user:
// {command, text}.
const TypeCommandResult = "command/result"

// Command is a slash command the agent runs itself, without the model
// (e.g. /undo).
type Command struct {
	// Name is the command without the slash.
	Name string
	// Description is shown in the editor's command menu.
	Description string
	// Run performs the command in the open turn and returns the report for
	// the user; it may append its own events.
	Run func(ctx context.Context, s *Session, args string) string
}

// CommandResult is the data of command/result.
type CommandResult struct {
	Command string `json:"command"`
	Text    string `json:"text"`
}

// Commands lists the session's slash commands.
func (s *Session) Commands() []Command { return s.rt.cfg.Commands }

// command finds the slash command a prompt invokes.
func (s *Session) command(text string) (Command, string, bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return Command{}, "", false
	}
	name, args, _ := strings.Cut(t[1:], " ")
	for _, c := range s.rt.cfg.Commands {
		if c.Name == name {
			return c, strings.TrimSpace(args), true
		}
	}
	return Command{}, "", false
}

// runCommand runs a slash command inside the open turn: its report is
// shown to the user and, as context, to the model on its next request.
func (s *Session) runCommand(ctx context.Context, c Command, args string) {
	text := c.Run(ctx, s, args)
	s.log.Append(TypeCommandResult, CommandResult{Command: c.Name, Text: text})
	s.log.Append(session.TypeContextMessage, session.Message{
		Content: []session.Block{session.TextBlock("The user ran /" + c.Name + ". " + text)},
		Source:  session.PluginSource("command"),
	})
}

// ModeCommand is /mode [id]: switches the session's mode at once (the
// editor is told), or names the current one and the choices.
func ModeCommand() Command {
	return Command{Name: "mode", Description: "Switch the session mode: /mode plan, /mode default",
		Run: func(_ context.Context, s *Session, args string) string {
			ids, ok := s.Modes()
			if !ok {
				return "This agent has no session modes."
			}
			if args == "" {
				return "The session is in " + s.Mode() + " mode; available modes: " + strings.Join(ids, ", ") + "."
			}
			if !slices.Contains(ids, args) {
				return "Unknown mode " + strconv.Quote(args) + "; available modes: " + strings.Join(ids, ", ") + "."
			}
			s.switchModeNow(args)
			return "Switched to " + args + " mode."
		}}
}

// switchModeNow logs a mode switch inside the open turn (a held switch is
// dropped), so the editor hears of it before the turn ends.
func (s *Session) switchModeNow(id string) {
	s.mu.Lock()
	s.pendingMode = ""
	s.mu.Unlock()
	if s.loggedMode() != id {
		s.log.Append(session.TypeModeSet, struct {
			Mode string `json:"mode"`
		}{id})
	}
}

// ModelCommand is /model [id]: switches the session's model (one of those
// models lists), or names the current one and the choices listed.
func ModelCommand(models func(ctx context.Context) []string) Command {
	return Command{Name: "model", Description: "Switch the model: /model <id>",
		Run: func(ctx context.Context, s *Session, args string) string {
			cur, ok := s.Knob(KnobModel)
			if !ok {
				return "This agent's model cannot be switched."
			}
			ids := models(ctx)
			if !slices.Contains(ids, cur) {
				ids = append([]string{cur}, ids...)
			}
			if args == "" {
				return "The session uses " + cur + "; available models: " + strings.Join(ids, ", ") + "."
			}
			if !slices.Contains(ids, args) {
				return "Unknown model " + strconv.Quote(args) + "; available models: " + strings.Join(ids, ", ") + "."
			}
			s.SetKnob(KnobModel, args)
			return "Switched to " + args + "."
		}}
}
