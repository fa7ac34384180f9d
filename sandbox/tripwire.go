package sandbox

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tripwire guards the protected paths a backend cannot keep as they are
// (see [Confined.Tripwire]): those the Landlock helper as a subreaper
// cannot make read-only beneath a writable root, and those that do not
// exist yet, which no mount can cover without leaving its mount point
// behind. [Provider.Confine] records them before the command runs;
// [Tripwire.Check], called when the command has ended (and while a
// background task runs), puts back what changed and removes what
// appeared. The command may have used what it wrote while it ran (a git
// hook run by its own `git commit`, confined like it); nothing outside the
// sandbox runs it after the check. What the check replaces or removes is
// kept in [Policy.Quarantine] when set, so that nothing is lost (an edit
// the user made meanwhile, say).
//
// Every file operation goes through an [os.Root] at the workspace root the
// path lies beneath, so that a command that replaced a directory by a
// symbolic link cannot make the check write or remove anything outside
// that root. A Tripwire is safe for concurrent use.
type Tripwire struct {
	quarantine string

	mu      sync.Mutex
	guarded []guarded
	absent  []absentPath
}

// guarded is an existing protected path as it was recorded.
type guarded struct {
	root, rel string // rel is slash-separated, beneath root
	nodes     []node // parents first
}

// absentPath is a protected path (a glob pattern, slash-separated, beneath
// root) that did not exist.
type absentPath struct{ root, pattern string }

// node is one file, directory or symbolic link of a guarded tree.
type node struct {
	rel    string
	mode   fs.FileMode // type and permission bits
	data   []byte      // a regular file's content
	target string      // a symbolic link's
	stamp  fileStamp
	racy   bool // changed so shortly before it was recorded that a change after might keep its stamp
}

// fileStamp is what a stat says of a file's identity and last change.
type fileStamp struct {
	ino          uint64
	size         int64
	mtime, ctime int64 // nanoseconds; ctime 0 where the system has none
}

// racyWindow is how recent a file's change may be for its stamp alone to
// prove, later, that it has not changed since (file times come from a
// coarse clock): a tripwire's recordings and a Landlock ruleset's listed
// directories obey it alike.
const racyWindow = 50 * time.Millisecond

// recordings keeps what the tripwires of a provider recorded, so that a
// file whose stamp has not changed since is not read again.
type recordings struct {
	mu    sync.Mutex
	nodes map[string]node // by absolute path
}

func (r *recordings) get(p string) (node, bool) {
	if r == nil {
		return node{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[p]
	return n, ok
}

func (r *recordings) put(p string, n node) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes == nil {
		r.nodes = map[string]node{}
	}
	if len(r.nodes) >= maxRecordings {
		clear(r.nodes)
	}
	r.nodes[p] = n
}

// maxRecordings bounds a provider's recordings.
const maxRecordings = 4096

// newTripwire records guard (existing protected paths) and absent
// (protected paths or patterns that do not exist), each beneath one of
// roots; it returns nil when there is nothing to guard.
func newTripwire(rec *recordings, roots, guard, absent []string, quarantine string) *Tripwire {
	t := &Tripwire{quarantine: quarantine}
	for _, p := range guard {
		root, rel, ok := under(roots, p)
		if !ok {
			continue
		}
		nodes, err := walkNodes(root, rel, rec, true)
		if err != nil || len(nodes) == 0 {
			continue
		}
		t.guarded = append(t.guarded, guarded{root: root, rel: rel, nodes: nodes})
	}
	for _, p := range absent {
		if root, rel, ok := under(roots, p); ok {
			t.absent = append(t.absent, absentPath{root: root, pattern: rel})
		}
	}
	if len(t.guarded) == 0 && len(t.absent) == 0 {
		return nil
	}
	return t
}

// under returns the root of roots that p lies strictly beneath, and p
// relative to it (slash-separated).
func under(roots []string, p string) (string, string, bool) {
	for _, r := range roots {
		if r != "" && p != r && beneath(p, r) {
			rel, err := filepath.Rel(r, p)
			if err == nil {
				return r, filepath.ToSlash(rel), true
			}
		}
	}
	return "", "", false
}

// walkNodes records rel beneath root and everything beneath it, without
// following symbolic links; a missing rel records nothing. A regular
// file's content is read when read is set, unless rec holds it under the
// same stamp and not racy.
func walkNodes(root, rel string, rec *recordings, read bool) ([]node, error) {
	now := time.Now().UnixNano()
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []node
	// walk records name in dir (rel beneath root); a directory is walked
	// through a root of its own, one stat per entry.
	var walk func(dir *os.Root, name, rel string) error
	walk = func(dir *os.Root, name, rel string) error {
		fi, err := dir.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n := node{rel: rel, mode: fi.Mode(), stamp: stampFile(fi)}
		n.racy = n.stamp.mtime >= now-int64(racyWindow) || n.stamp.ctime >= now-int64(racyWindow)
		switch {
		case fi.Mode().IsRegular() && read:
			abs := filepath.Join(root, filepath.FromSlash(rel))
			if old, ok := rec.get(abs); ok && !old.racy && old.stamp == n.stamp && old.mode == n.mode {
				n.data = old.data
				break
			}
			if n.data, err = dir.ReadFile(name); err != nil {
				return err
			}
			if !n.racy {
				rec.put(abs, n)
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			if n.target, err = dir.Readlink(name); err != nil {
				return err
			}
		}
		out = append(out, n)
		if !fi.IsDir() {
			return nil
		}
		sub, err := dir.OpenRoot(name)
		if err != nil {
			return err
		}
		defer sub.Close()
		f, err := sub.Open(".")
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		_ = f.Close()
		if err != nil {
			return err
		}
		slices.Sort(names)
		for _, child := range names {
			if err := walk(sub, child, path.Join(rel, child)); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(r, rel, rel)
}

// unchanged reports whether the tree cur, walked without reading
// contents, is still the recorded one: the same names, types, modes and
// link targets, and each file either with its recorded stamp (when that
// recording was not racy) or with the same content, read again beneath
// root.
func unchanged(root string, rec, cur []node) bool {
	if len(rec) != len(cur) {
		return false
	}
	var r *os.Root
	defer func() {
		if r != nil {
			_ = r.Close()
		}
	}()
	for i, x := range rec {
		y := cur[i]
		if x.rel != y.rel || x.mode != y.mode || x.target != y.target {
			return false
		}
		if !x.mode.IsRegular() || (!x.racy && x.stamp == y.stamp) {
			continue
		}
		if r == nil {
			var err error
			if r, err = os.OpenRoot(root); err != nil {
				return false
			}
		}
		data, err := r.ReadFile(x.rel)
		if err != nil || !bytes.Equal(data, x.data) {
			return false
		}
	}
	return true
}

// Check puts every guarded path back as it was recorded and removes every
// protected path that appeared, and returns those it changed (absolute
// paths; nil when nothing was touched). A path it could not put back is
// returned too: the command changed it either way.
func (t *Tripwire) Check() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var changed []string
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	for _, g := range t.guarded {
		cur, err := walkNodes(g.root, g.rel, nil, false)
		if err == nil && unchanged(g.root, g.nodes, cur) {
			continue
		}
		changed = append(changed, filepath.Join(g.root, filepath.FromSlash(g.rel)))
		cur, _ = walkNodes(g.root, g.rel, nil, true)
		t.keep(stamp, g.root, cur)
		_ = restore(g.root, g.rel, g.nodes)
	}
	for _, a := range t.absent {
		for _, rel := range appeared(a.root, a.pattern) {
			changed = append(changed, filepath.Join(a.root, filepath.FromSlash(rel)))
			cur, _ := walkNodes(a.root, rel, nil, true)
			t.keep(stamp, a.root, cur)
			if r, err := os.OpenRoot(a.root); err == nil {
				_ = r.RemoveAll(rel)
				_ = r.Close()
			}
		}
	}
	return changed
}

// restore replaces rel beneath root by the recorded nodes.
func restore(root, rel string, nodes []node) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.RemoveAll(rel); err != nil {
		return err
	}
	var errs []error
	for _, n := range nodes {
		switch {
		case n.mode.IsDir():
			errs = append(errs, r.Mkdir(n.rel, n.mode.Perm()), r.Chmod(n.rel, n.mode.Perm()))
		case n.mode&fs.ModeSymlink != 0:
			errs = append(errs, r.Symlink(n.target, n.rel))
		case n.mode.IsRegular():
			errs = append(errs, r.WriteFile(n.rel, n.data, n.mode.Perm()), r.Chmod(n.rel, n.mode.Perm()))
		}
	}
	return errors.Join(errs...)
}

// appeared lists what matches pattern beneath root: each match, and each
// symbolic link met on the way to one (a link that appeared where the
// pattern's directory was missing stands for what it points to).
func appeared(root, pattern string) []string {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	var out []string
	var match func(dir string, parts []string)
	match = func(dir string, parts []string) {
		var cands []string
		if !strings.ContainsAny(parts[0], `*?[\`) {
			cands = []string{parts[0]}
		} else if f, err := r.Open(dirOrDot(dir)); err == nil {
			names, _ := f.Readdirnames(-1)
			_ = f.Close()
			for _, n := range names {
				if ok, _ := path.Match(parts[0], n); ok {
					cands = append(cands, n)
				}
			}
		}
		for _, c := range cands {
			rel := path.Join(dir, c)
			fi, err := r.Lstat(rel)
			switch {
			case err != nil:
			case len(parts) == 1 || fi.Mode()&fs.ModeSymlink != 0:
				out = append(out, rel)
			case fi.IsDir():
				match(rel, parts[1:])
			}
		}
	}
	match("", strings.Split(pattern, "/"))
	return out
}

func dirOrDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// keep copies what the check is about to replace or remove into the
// quarantine directory, beneath <stamp>/<root's path>/.
func (t *Tripwire) keep(stamp, root string, nodes []node) {
	if t.quarantine == "" || len(nodes) == 0 {
		return
	}
	base := filepath.Join(t.quarantine, stamp, strings.TrimPrefix(filepath.ToSlash(root), "/"))
	for _, n := range nodes {
		p := filepath.Join(base, filepath.FromSlash(n.rel))
		switch {
		case n.mode.IsDir():
			_ = os.MkdirAll(p, 0o700)
		case n.mode.IsRegular():
			if os.MkdirAll(filepath.Dir(p), 0o700) == nil {
				_ = os.WriteFile(p, n.data, 0o600)
			}
		case n.mode&fs.ModeSymlink != 0:
			if os.MkdirAll(filepath.Dir(p), 0o700) == nil {
				_ = os.WriteFile(p+".symlink", []byte(n.target+"\n"), 0o600)
			}
		}
	}
}
