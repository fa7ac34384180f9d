package jsworker

import "github.com/dsh-acp/dsh-acp/sandbox"

// osConfine starts every worker under Seatbelt with the worker's own
// profile (sandbox.Seatbelt.WorkerProfile: deny by default, no writes, no
// network, nothing readable but what the worker's executable needs),
// whatever the session's backend: the session profiles allow by default.
// A sandbox-exec that is missing or refuses the profile fails the start:
// no program runs unconfined.
func osConfine(argv []string) ([]string, bool) {
	return (&sandbox.Seatbelt{}).WrapWorker(argv), true
}
