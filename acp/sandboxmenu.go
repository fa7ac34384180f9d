package acp

import "github.com/dsh-acp/dsh-acp/sandbox"

// noSandboxNote ends a confined mode's description on a system without a
// command sandbox (Windows: the contract's win32 chain is empty).
const noSandboxNote = " This system has no command sandbox, so commands are refused in this mode (file tools still work); choose Full access to run them."

// sandboxMenu returns the Sandbox menu's choices on the system goos. Where
// the system has no sandbox backend, the confined modes say that commands
// fail closed in them.
func sandboxMenu(goos string) []choice {
	if len(sandbox.ChainFor(goos, nil, false)) > 0 {
		return sandboxChoices
	}
	out := append([]choice(nil), sandboxChoices...)
	for i, c := range out {
		if c.value != string(sandbox.DangerFullAccess) {
			out[i].description += noSandboxNote
		}
	}
	return out
}
