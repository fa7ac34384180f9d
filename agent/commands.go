package agent

import (
	"context"
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
		Source:  session.Source{Kind: "plugin", Plugin: "command"},
	})
}
