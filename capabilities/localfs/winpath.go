package localfs

import (
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// winRel turns an absolute Windows path into a path relative to one of
// roots (clean absolute Windows paths, `C:\work` or `\\server\share\dir`):
// "." for a root itself, else the rest with `\` separators. Windows
// compares names without regard to case, so `c:\Work\a` lies beneath
// `C:\work`; `/` is accepted as a separator. A ".." that climbs above the
// root is refused with capabilities.ErrOutsideRoot, as is any path not
// beneath a root. It is pure string logic, so that it is tested on every
// system.
func winRel(path string, roots ...string) (string, error) {
	p, ok := winClean(path)
	if !ok {
		return "", capabilities.ErrOutsideRoot
	}
	for _, r := range roots {
		r, ok := winClean(r)
		if !ok {
			continue
		}
		switch {
		case strings.EqualFold(p, r):
			return ".", nil
		case len(p) > len(r) && strings.EqualFold(p[:len(r)], r) && (p[len(r)] == '\\' || strings.HasSuffix(r, `\`)):
			return strings.TrimPrefix(p[len(r):], `\`), nil
		}
	}
	return "", capabilities.ErrOutsideRoot
}

// winClean cleans an absolute Windows path lexically: `/` becomes `\`,
// empty and "." elements go, ".." removes the element before it (never the
// volume); ok is false for a path without a drive letter or UNC volume.
func winClean(path string) (string, bool) {
	path = strings.ReplaceAll(path, "/", `\`)
	vol := winVolume(path)
	if vol == "" || len(path) == len(vol) || path[len(vol)] != '\\' {
		return "", false
	}
	var elems []string
	for e := range strings.SplitSeq(path[len(vol):], `\`) {
		switch e {
		case "", ".":
		case "..":
			if len(elems) > 0 {
				elems = elems[:len(elems)-1]
			}
		default:
			elems = append(elems, e)
		}
	}
	return vol + `\` + strings.Join(elems, `\`), true
}

// winVolume returns the volume of an absolute Windows path: `C:` for a
// drive letter, `\\server\share` for a UNC path, "" otherwise.
func winVolume(path string) string {
	if len(path) >= 2 && path[1] == ':' && ('a' <= path[0]|0x20 && path[0]|0x20 <= 'z') {
		return path[:2]
	}
	if rest, ok := strings.CutPrefix(path, `\\`); ok {
		server, after, ok := strings.Cut(rest, `\`)
		if !ok || server == "" || server == "." || server == "?" {
			return ""
		}
		share, _, _ := strings.Cut(after, `\`)
		if share == "" {
			return ""
		}
		return `\\` + server + `\` + share
	}
	return ""
}
