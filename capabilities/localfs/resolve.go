//go:build unix

package localfs

import (
	"errors"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// maxLinks is how many symbolic links one resolution follows (Linux's
// limit) before it fails with ELOOP.
const maxLinks = 40

// maxSteps bounds one walk (components, retries after a concurrent
// mkdir or rmdir), so a hostile filesystem cannot keep it busy forever.
const maxSteps = 4096

// loc is a resolved directory entry: an open directory and a name in it.
type loc struct {
	dir     int    // owned directory descriptor
	name    string // the entry; "." for the directory itself
	missing bool   // the entry does not exist (name may then be a multi-component tail)
	st      unix.Stat_t
}

func (l *loc) close() { _ = unix.Close(l.dir) }

// id is the file's identity: its directory's device and inode plus its
// name, so aliases through symbolic links share it and a missing file has
// the identity it will have.
func (l *loc) id() (string, error) {
	var st unix.Stat_t
	if err := fstat(l.dir, &st); err != nil {
		return "", err
	}
	return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10) + "/" + l.name, nil //nolint:unconvert // Dev and Ino types vary
}

// locate resolves path to a directory entry. With follow, a symbolic link
// as the final component is followed to its target (when the target does
// not exist, the link itself is the entry, reported missing); with create,
// missing parent directories are created. Every step is relative to a
// descriptor obtained by the previous one.
func (f *FS) locate(path string, follow, create bool) (loc, error) {
	rel, err := f.rel(path)
	if err != nil {
		return loc{}, err
	}
	root, err := openat(unix.AT_FDCWD, f.root, dirFlags, 0)
	if err != nil {
		return loc{}, err
	}
	if !f.walkOnly && !f.noOpenat2.Load() {
		if l, ok := f.fast(root, rel, follow); ok {
			_ = unix.Close(root)
			return l, nil
		}
	}
	w := walker{f: f, stack: []int{root}}
	defer w.closeAll()
	return w.locate(rel, follow, create)
}

// fast resolves rel's parent with one openat2 beneath root. It reports
// false whenever the walk must decide instead: openat2 unsupported, any
// failure (a missing parent, an absolute link, an escape attempt, a loop),
// or a symbolic link as the final component that follow must resolve.
func (f *FS) fast(root int, rel string, follow bool) (loc, bool) {
	dir, name := ".", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	fd, err := openBeneath(root, dir, f.confined)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			f.noOpenat2.Store(true)
		}
		return loc{}, false
	}
	l := loc{dir: fd, name: name}
	switch err := fstatat(fd, name, &l.st); {
	case errors.Is(err, unix.ENOENT):
		l.missing = true
		return l, true
	case err != nil, follow && isLink(&l.st):
		l.close()
		return loc{}, false
	}
	return l, true
}

// walker resolves a path one component at a time: openat(O_NOFOLLOW) per
// directory relative to the previous one, readlinkat for a symbolic link,
// whose target continues from the directory it was found in (an absolute
// one from the root, translated when it lies beneath it), at most maxLinks
// links, ".." popping a directory it entered and refused at the root.
//
// The standard library's os.Root (Go 1.24+) does the same kind of walk
// safely, but cannot serve here: it refuses every absolute symbolic link,
// even one whose target lies inside the root (which must keep working);
// it does not refuse /proc magic links; and it hands out no directory
// descriptors, so the staging file, the rename and the directory's fsync
// could not share the one resolution, and no directory identity would be
// left for FileInfo.ID.
type walker struct {
	f     *FS
	stack []int // open directories from the root (stack[0]) down
	links int
	steps int
	rest  []string // after ENOENT without create: the unresolved components
}

func (w *walker) top() int { return w.stack[len(w.stack)-1] }

// take removes the top directory from the stack and hands it over.
func (w *walker) take() int {
	fd := w.top()
	w.stack = w.stack[:len(w.stack)-1]
	return fd
}

func (w *walker) closeAll() {
	for _, fd := range w.stack {
		_ = unix.Close(fd)
	}
	w.stack = nil
}

// toRoot closes every directory but the root.
func (w *walker) toRoot() {
	for _, fd := range w.stack[1:] {
		_ = unix.Close(fd)
	}
	w.stack = w.stack[:1]
}

// locate is FS.locate's walk.
func (w *walker) locate(rel string, follow, create bool) (loc, error) {
	dirs, name := split(rel)
	var link *loc // the first final symbolic link followed
	defer func() {
		if link != nil {
			link.close()
		}
	}()
	for {
		if err := w.enter(dirs, create && link == nil); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				return loc{}, err
			}
			if link != nil {
				return w.dangling(&link), nil
			}
			tail := strings.Join(append(w.rest, name), "/")
			return loc{dir: w.take(), name: tail, missing: true}, nil
		}
		var st unix.Stat_t
		err := fstatat(w.top(), name, &st)
		switch {
		case errors.Is(err, unix.ENOENT) && link != nil:
			return w.dangling(&link), nil
		case errors.Is(err, unix.ENOENT):
			return loc{dir: w.take(), name: name, missing: true}, nil
		case err != nil:
			return loc{}, err
		case !follow || !isLink(&st):
			return loc{dir: w.take(), name: name, st: st}, nil
		}
		target, err := readlinkat(w.top(), name)
		if err != nil {
			return loc{}, err
		}
		if link == nil {
			fd, err := dup(w.top())
			if err != nil {
				return loc{}, err
			}
			link = &loc{dir: fd, name: name}
		}
		next, err := w.follow(target)
		if err != nil {
			return loc{}, err
		}
		dirs, name = split(strings.Join(next, "/"))
	}
}

// dangling hands over the first final link as a missing entry: writing
// replaces the link, and nothing is created where it points.
func (w *walker) dangling(link **loc) loc {
	l := **link
	*link = nil
	l.missing = true
	return l
}

// enter resolves comps as directories, pushing each onto the stack. With
// create, missing directories are made (0777 before the umask).
func (w *walker) enter(comps []string, create bool) error {
	for len(comps) > 0 {
		if w.steps++; w.steps > maxSteps {
			return unix.ELOOP
		}
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(w.stack) == 1 {
				if w.f.confined {
					return capabilities.ErrOutsideRoot
				}
				continue // ".." of "/" is "/"
			}
			_ = unix.Close(w.take())
			continue
		}
		fd, err := openat(w.top(), c, dirFlags|unix.O_NOFOLLOW, 0)
		switch {
		case err == nil:
			w.stack = append(w.stack, fd)
		case errors.Is(err, unix.ENOENT) && create:
			if err := mkdirat(w.top(), c); err != nil && !errors.Is(err, unix.EEXIST) {
				return err
			}
			comps = append([]string{c}, comps...) // open what is there now
		case errors.Is(err, unix.ENOENT):
			w.rest = append([]string{c}, comps...)
			return err
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			// Either a symbolic link (O_NOFOLLOW) or not a directory.
			target, lerr := readlinkat(w.top(), c)
			if errors.Is(lerr, unix.EINVAL) {
				return unix.ENOTDIR
			}
			if lerr != nil {
				return lerr
			}
			next, err := w.follow(target)
			if err != nil {
				return err
			}
			comps = append(next, comps...)
		default:
			return err
		}
	}
	return nil
}

// follow counts a symbolic link and returns the components to resolve in
// its place, relative to the current top of the stack. An absolute target
// restarts from the root: confined, it must lie beneath the root (as given
// or its real path), else the link leads outside.
func (w *walker) follow(target string) ([]string, error) {
	if w.links++; w.links > maxLinks {
		return nil, unix.ELOOP
	}
	if target == "" {
		return nil, unix.ENOENT
	}
	if target[0] != '/' {
		return strings.Split(target, "/"), nil
	}
	rest, ok := w.f.beneath(target)
	if !ok {
		return nil, capabilities.ErrOutsideRoot
	}
	w.toRoot()
	return rest, nil
}

// beneath strips the root from an absolute link target, component by
// component (never by cleaning: ".." after a link is the link's parent, so
// it is left to the walk). A ".." inside the root prefix does not match.
func (f *FS) beneath(target string) ([]string, bool) {
	comps := significant(target)
	for _, r := range [2]string{f.root, f.realRoot} {
		prefix := significant(r)
		if len(comps) < len(prefix) {
			continue
		}
		ok := true
		for i, c := range prefix {
			if comps[i] != c {
				ok = false
				break
			}
		}
		if ok {
			return comps[len(prefix):], true
		}
	}
	return nil, false
}

// significant splits an absolute path into its components, dropping empty
// and "." ones.
func significant(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// split separates a relative path into its directory components and its
// final name; a trailing "", "." or ".." makes the directory itself the
// entry (name ".").
func split(rel string) ([]string, string) {
	comps := strings.Split(rel, "/")
	dirs, name := comps[:len(comps)-1], comps[len(comps)-1]
	switch name {
	case "", ".":
		return dirs, "."
	case "..":
		return comps, "."
	}
	return dirs, name
}

// ignoringEINTR retries fn while it is interrupted by a signal.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func openat(dir int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func mkdirat(dir int, name string) error {
	return ignoringEINTR(func() error { return unix.Mkdirat(dir, name, 0o777) })
}

func fstat(fd int, st *unix.Stat_t) error {
	return ignoringEINTR(func() error { return unix.Fstat(fd, st) })
}

func fstatat(dir int, name string, st *unix.Stat_t) error {
	return ignoringEINTR(func() error { return unix.Fstatat(dir, name, st, unix.AT_SYMLINK_NOFOLLOW) })
}

func dup(fd int) (int, error) {
	for {
		nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return nfd, err
		}
	}
}

// readlinkat reads a symbolic link's target, growing the buffer as needed.
func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if errors.Is(err, unix.EINTR) {
			size /= 2
			continue
		}
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
