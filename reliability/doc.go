// Package reliability is an integration suite for the whole dsh-acp binary:
// its tests build bin/dsh-acp, drive it over real stdio as a subprocess the
// way an editor does, against a scripted OpenAI-compatible model served on
// loopback, and judge it by what reaches the wire, the model and the
// session store. The crash test kills the agent at random points of turns
// with tools and checks that the session loads, is intact and continues;
// the soak runs many sessions with cancels on one connection and checks
// the ACP ordering rules and the agent's memory.
//
// The package has no API; everything lives in its tests.
package reliability
