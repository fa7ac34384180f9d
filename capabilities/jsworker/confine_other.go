//go:build !darwin

package jsworker

// osConfine leaves argv to the session's backend (Options.Confiner) and
// the worker's own confinement (Landlock on Linux, a Job Object on
// Windows).
func osConfine(argv []string) ([]string, bool) { return argv, false }
