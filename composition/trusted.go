package composition

import (
	"crypto/sha256"
	"errors"
	"os"
	"slices"
	"sync"

	"github.com/rs/zerolog"
)

// pairs is the content of a trusted state file: per project directory, the
// values the user allowed (grant scopes, or the hash of a hook set).
type pairs map[string][]string

func (p pairs) has(project, v string) bool { return slices.Contains(p[project], v) }

// clone returns a deep copy.
func (p pairs) clone() pairs {
	out := make(pairs, len(p))
	for k, vs := range p {
		out[k] = slices.Clone(vs)
	}
	return out
}

// within returns what p and disk both hold, in p's order, and whether disk
// holds anything p does not.
func (p pairs) within(disk pairs) (pairs, bool) {
	out := pairs{}
	for k, vs := range p {
		for _, v := range vs {
			if disk.has(k, v) {
				out[k] = append(out[k], v)
			}
		}
	}
	added := false
	for k, vs := range disk {
		for _, v := range vs {
			if !p.has(k, v) {
				added = true
			}
		}
	}
	return out, added
}

// trustedFile is a state file the agent honours (permissions.json,
// hook-consent.json) guarded against changes made behind its back: the
// file sits in the user's state directory, which a confined command can
// write when a workspace root contains it (a user who opens $HOME), and
// no secret the agent could sign it with would be out of that command's
// reach. So the process trusts the file as it found it at start-up (before
// it ran any command) and what it wrote itself, and nothing else: a
// later change by anyone else may take allowances away (a /clear-permissions
// in another window) but never add one. An addition is ignored with a
// warning, and the next write by this process drops it from the file.
//
// The price: an "always allow" given in another dsh-acp process while this
// one runs is asked again here (and dropped when this one next writes);
// it holds again for the processes started after.
type trustedFile struct {
	path   string
	decode func([]byte) (pairs, error)
	encode func(pairs) any
	log    zerolog.Logger

	mu     sync.Mutex
	known  pairs    // what this process trusts
	sum    [32]byte // of the bytes last read or written (zero: missing)
	warned [32]byte // the content last warned about
}

// newTrustedFile loads path now, as trusted (a missing or unreadable file
// trusts nothing).
func newTrustedFile(path string, decode func([]byte) (pairs, error), encode func(pairs) any, log zerolog.Logger) *trustedFile {
	t := &trustedFile{path: path, decode: decode, encode: encode, log: log, known: pairs{}}
	if data, err := os.ReadFile(path); err == nil {
		t.sum = sha256.Sum256(data)
		if p, err := decode(data); err == nil {
			t.known = p
		}
	}
	return t
}

// view returns what is trusted now (the caller holds mu): the file is
// read again, and when it changed since this process last read or wrote
// it, only what both hold stays trusted.
func (t *trustedFile) view() pairs {
	data, err := os.ReadFile(t.path)
	var sum [32]byte
	var disk pairs
	switch {
	case errors.Is(err, os.ErrNotExist):
		disk = pairs{}
	case err != nil:
		return t.known // unreadable for now: keep what is known
	default:
		sum = sha256.Sum256(data)
		if sum == t.sum {
			return t.known
		}
		if disk, err = t.decode(data); err != nil {
			disk = pairs{}
		}
	}
	if sum == t.sum { // still missing
		return t.known
	}
	kept, added := t.known.within(disk)
	if added && sum != t.warned {
		t.warned = sum
		t.log.Warn().Str("file", t.path).
			Msg("this file gained permissions that dsh-acp did not write (a command run in the sandbox can reach it when a workspace contains it); they are ignored")
	}
	t.known, t.sum = kept, sum
	return t.known
}

// has reports whether v is trusted for project.
func (t *trustedFile) has(project, v string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.view().has(project, v)
}

// update changes what is trusted with fn and writes it (atomically: temp
// file, rename), which also drops from the file whatever it gained behind
// this process's back. fn reports whether anything changed (nothing is
// written otherwise).
func (t *trustedFile) update(pattern string, fn func(pairs) bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := t.view().clone()
	if !fn(next) {
		return nil
	}
	data, err := writeJSONFile(t.path, pattern, t.encode(next))
	if err != nil {
		return err
	}
	t.known, t.sum = next, sha256.Sum256(data)
	return nil
}
