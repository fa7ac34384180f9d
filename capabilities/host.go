package capabilities

import (
	"context"

	"github.com/dsh-acp/dsh-acp/session"
)

// Host is the world one session's tools act on: what the program hosting
// the session (the editor, through ACP) supplies — files, terminals, extra
// roots, questions to the user — and what the session itself offers its
// tools (knobs, modes, child agents, nested tool calls, notices to the
// model). A tool reads the field it needs and so states at compile time
// what it uses; a nil *Host, and every nil field, means the local fallback
// (files on the local disk, commands run by the agent itself) or, for a
// service, that the session does not offer it. A host never widens what a
// tool may do: tools check roots and confine commands before they reach
// it.
type Host struct {
	// Files reaches file contents through the host (an editor's
	// fs/read_text_file and fs/write_text_file, which see unsaved buffers
	// and put writes in the editor's review). Tools reach it only through
	// [Through], which checks every path beneath the roots locally first.
	// Nil: local files.
	Files TextFiles
	// Terminals runs commands in the host's terminals (ACP terminal/*).
	// The command it is given is already confined. Nil: commands run
	// locally and their output streams into the tool card.
	Terminals Terminals
	// Roots are the session's workspace roots beyond its working
	// directory (absolute paths), confined roots for the file tools and
	// writable roots for the sandbox.
	Roots []string
	// Live shows what a running call does in its card while it runs (the
	// terminal it runs in, the output so far) without logging it. Nil:
	// nothing new is shown until the result.
	Live Live
	// Asker puts questions to the session's user (nil: no channel).
	Asker Asker

	// Knobs reads and switches the session's knobs (sandbox-mode,
	// tools-mode; nil: the session has none).
	Knobs Knobs
	// Modes reports the session's mode (nil: modes are not composed).
	Modes Modes
	// Spawner starts child agents (nil: the session cannot).
	Spawner Spawner
	// Dispatcher runs a tool call from inside another (nil: the session
	// cannot).
	Dispatcher Dispatcher
	// Injector tells the model something between steps (nil: nobody
	// listens).
	Injector Injector
	// Tools is the session's tool registry (set once it is built).
	Tools *Registry
}

// Knobs are a session's switches: the sandbox mode, the tool mode.
type Knobs interface {
	// Knob returns a knob's current value and whether the session has it.
	Knob(id string) (string, bool)
	// SetKnob switches a knob; an id the session does not have, or a
	// value the knob does not allow, is an error.
	SetKnob(id, value string) error
}

// Modes reports a session's mode.
type Modes interface {
	// LoggedMode is the mode folded from the session log ("default",
	// "plan").
	LoggedMode() string
}

// Injector announces context to a session's model: into the open turn at
// its next step boundary, or in a turn of its own when idle.
type Injector interface {
	Inject(source session.Source, text string)
}

// HostOf returns what env's host supplies: the zero Host (everything
// local, no session service) when env or its host is nil.
func HostOf(env Env) Host {
	if env == nil {
		return Host{}
	}
	if h := env.Host(); h != nil {
		return *h
	}
	return Host{}
}

// Terminals starts commands in terminals the host owns and shows.
type Terminals interface {
	// Create starts cmd in a new terminal of the session and returns it
	// once the host has accepted it.
	Create(ctx context.Context, cmd TerminalCommand) (Terminal, error)
}

// TerminalCommand is a command to start in a host terminal.
type TerminalCommand struct {
	// Command is the program (argv[0]); Args the rest of argv.
	Command string
	Args    []string
	// Env is the complete environment, "NAME=value" entries.
	Env []string
	// Cwd is the absolute working directory.
	Cwd string
	// OutputByteLimit bounds the output the host keeps (its tail); zero
	// means the host's default.
	OutputByteLimit int
}

// Terminal is one host terminal. Every method but ID is one round trip to
// the host; Release must be called once the terminal is no longer needed
// (it kills a command still running).
type Terminal interface {
	// ID is the host's terminal id (what a tool card embeds).
	ID() string
	// Output returns the output so far and, once it ended, the exit status.
	Output(ctx context.Context) (TerminalOutput, error)
	// WaitForExit blocks until the command exits (or ctx is done).
	WaitForExit(ctx context.Context) (ExitStatus, error)
	// Kill stops the command; the terminal stays readable.
	Kill(ctx context.Context) error
	// Release kills a running command and frees the terminal. It must not
	// block on the host: the request is sent before it returns, and the
	// host's answer need not be awaited (it may be called while the
	// session log is being appended to, to fix the request's place on
	// the wire).
	Release(ctx context.Context) error
}

// TerminalOutput is a terminal's output so far.
type TerminalOutput struct {
	// Output is the retained output (stdout and stderr interleaved).
	Output string
	// Truncated reports that the beginning was dropped to the byte limit.
	Truncated bool
	// Exit is the exit status once the command ended, else nil.
	Exit *ExitStatus
}

// ExitStatus is how a command ended: an exit code, or the signal that
// killed it.
type ExitStatus struct {
	// Code is the exit code (nil when a signal ended it).
	Code *int
	// Signal is the signal's name, such as "SIGKILL" ("" when it exited).
	Signal string
}
