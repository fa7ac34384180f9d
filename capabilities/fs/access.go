package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/localfs"
)

// reach is how one call reaches its file.
type reach struct {
	files capabilities.Files
	// inside reports that the confined file access reached the path (it
	// lies beneath the session root).
	inside bool
}

// probe runs a call's first access (do) through the file access the path
// calls for. Confined (Confine or a Gate), that is the access confined
// beneath the session root; when it refuses the path as outside, a Gate may
// let the call through the unconfined access instead, and without a Gate
// the call fails with FS_OUTSIDE_ROOT. Later accesses of the call must use
// the returned reach, so a path that was inside and is swapped for a link
// to the outside is refused, never re-judged.
func (f *files) probe(ctx context.Context, call *capabilities.Call, op Op, tg target, do func(capabilities.Files) error) (reach, error) {
	if !f.opts.Confine && f.opts.Gate == nil {
		r := reach{files: f.unconfined()}
		return r, do(r.files)
	}
	conf, err := f.confinedTo(call, tg.root)
	if err != nil {
		return reach{}, err
	}
	asked := false
	if op == OpRead && f.opts.Gate != nil {
		// A secret asks before anything is read, inside the root too; the
		// answer also covers it being outside.
		if why := f.special(call, op, tg); why != "" {
			inside := tg.display == tg.root || strings.HasPrefix(tg.display, strings.TrimSuffix(tg.root, string(filepath.Separator))+string(filepath.Separator))
			if _, err := f.opts.Gate.Check(ctx, Access{Call: call, Op: op, Path: tg.display, Root: tg.root, Inside: inside, Special: why}); err != nil {
				return reach{}, refused{err}
			}
			asked = true
		}
	}
	err = do(conf)
	if !errors.Is(err, capabilities.ErrOutsideRoot) {
		return reach{files: conf, inside: true}, err
	}
	if f.opts.Gate == nil {
		return reach{}, outsideRoot(tg.display, tg.root)
	}
	if !asked {
		if _, err := f.opts.Gate.Check(ctx, Access{Call: call, Op: op, Path: tg.display, Root: tg.root}); err != nil {
			return reach{}, refused{err}
		}
	}
	r := reach{files: f.unconfined()}
	return r, do(r.files)
}

// approve consults the Gate before a write or edit inside the root (one
// outside was judged by probe). asked reports that someone was asked: the
// caller then checks the file again, since it may have changed meanwhile.
func (f *files) approve(ctx context.Context, call *capabilities.Call, op Op, tg target, r reach) (asked bool, err error) {
	if f.opts.Gate == nil || !r.inside {
		return false, nil
	}
	return f.opts.Gate.Check(ctx, Access{Call: call, Op: op, Path: tg.display, Root: tg.root, Inside: true, Special: f.special(call, op, tg)})
}

// special is why the target is special for op (Options.Special), judged
// on its real path: the nearest existing ancestor with links resolved,
// and the rest of the path as given.
func (f *files) special(call *capabilities.Call, op Op, tg target) string {
	if f.opts.Special == nil {
		return ""
	}
	return f.opts.Special(call, op, realPath(tg.display))
}

// realPath resolves the symbolic links of p's longest existing prefix.
func realPath(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(dir) == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// confinedTo returns the file access confined beneath root (one per root,
// kept for the session). When the session's host reaches file contents
// (an editor), contents go through it, every path checked beneath root
// first (capabilities.Through).
func (f *files) confinedTo(call *capabilities.Call, root string) (capabilities.Files, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.confined[root]; ok {
		return c, nil
	}
	var c capabilities.Files
	var err error
	if f.opts.Confined != nil {
		c, err = f.opts.Confined(root)
	} else {
		c, err = newLocal(root)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot resolve the session root %s: %w", root, err)
	}
	if host := capabilities.HostOf(call.Session).Files; host != nil {
		c = capabilities.Through(c, host)
	}
	if f.confined == nil {
		f.confined = map[string]capabilities.Files{}
	}
	f.confined[root] = c
	return c, nil
}

// newLocal is localfs.New as a capabilities.Files (a nil *FS must not
// become a non-nil interface).
func newLocal(root string) (capabilities.Files, error) {
	l, err := localfs.New(root)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// unconfined returns the access that reaches any path.
func (f *files) unconfined() capabilities.Files {
	if f.opts.Unconfined != nil {
		return f.opts.Unconfined
	}
	return localfs.Unconfined()
}

// fail maps a file access failure of verb to the tool's error.
func fail(ctx context.Context, verb string, tg target, err error) error {
	var ce *capabilities.CodedError
	var r refused
	switch {
	case errors.As(err, &r):
		return r.err
	case errors.As(err, &ce):
		return err
	case errors.Is(err, capabilities.ErrOutsideRoot):
		return outsideRoot(tg.display, tg.root)
	case errors.Is(err, syscall.ENOTDIR):
		return fsError(CodeNotFound, "cannot resolve "+quote(tg.display)+": a parent path segment is not a directory")
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return fsError(CodeAborted, verb+" aborted")
	}
	return ioError(verb, tg.display, err)
}

// maxEager is the largest file current reads along with its description.
const maxEager = 16 << 20

// current describes the file at path and, when it is a regular file of at
// most maxEager bytes, reads it in the same access, so that a write or an
// edit through an editor costs one read for both (nil content: not read).
// Anything Open refuses but a root check is described by Stat instead.
func current(ctx context.Context, files capabilities.Files, path string) (capabilities.FileInfo, []byte, error) {
	r, info, err := files.Open(ctx, path)
	if err != nil {
		if errors.Is(err, capabilities.ErrOutsideRoot) || ctx.Err() != nil {
			return capabilities.FileInfo{}, nil, err
		}
		info, err := files.Stat(ctx, path)
		return info, nil, err
	}
	defer r.Close()
	if info.Size > maxEager {
		return info, nil, nil
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return capabilities.FileInfo{}, nil, err
	}
	return info, b, nil
}

// refused carries a Gate's refusal through probe, to be reported as is.
type refused struct{ err error }

func (r refused) Error() string { return r.err.Error() }

// record stats the file just written and records its version.
func (f *files) record(ctx context.Context, r reach, tg target) error {
	info, err := r.files.Stat(ctx, tg.display)
	if err != nil {
		return ioError("stat", tg.display, err)
	}
	f.policy.observe(info.ID, info.Version)
	return nil
}
