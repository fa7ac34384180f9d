package session

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Summary is a stored session's header and the time of its last event
// (its creation time while it has none), in epoch milliseconds of the
// store's clock.
type Summary struct {
	Header    Header
	UpdatedAt int64
	// Title is the session's title, the first line of its first user
	// message (TitleOf); "" when it has none, or when the store does not
	// keep titles (session.Indexer does).
	Title string
}

// Indexer is a Store that keeps every stored session's summary (header,
// last update, title) current as it writes, so a page of the listing and
// one session's summary cost what they return, not what the store holds.
type Indexer interface {
	// Page returns the page q selects, as Paginate over every summary
	// would.
	Page(ctx context.Context, q ListQuery) (Page, error)
	// Lookup returns one stored session's summary; an unknown id is an
	// error wrapping ErrNotFound.
	Lookup(ctx context.Context, id string) (Summary, error)
}

// Summarizer is a Store that can tell, without loading logs, when each
// stored session was last written.
type Summarizer interface {
	// Summaries returns every stored session's summary (no order).
	Summaries(ctx context.Context) ([]Summary, error)
}

// Deleter is a Store that can remove a stored session. It takes the
// session's ownership lock first, so a session another owner holds (a
// live dsh-acp process, or this store itself) is refused with a
// *HeldError and left as it was; an unknown id is an error wrapping
// ErrNotFound.
type Deleter interface {
	Delete(ctx context.Context, id string) error
}

// ListQuery selects one page of stored sessions.
type ListQuery struct {
	// Cwd, when set, keeps only the sessions of that directory (compared
	// after path cleaning).
	Cwd string
	// Cursor continues after the last session of an earlier page ("" is
	// the first page).
	Cursor string
	// Limit is the page size (zero or less: DefaultPageSize).
	Limit int
	// Keep, when set, is asked about every session; false leaves it out
	// (child sessions, sessions without an absolute cwd).
	Keep func(Summary) bool
}

// DefaultPageSize is the page size of a ListQuery without a Limit.
const DefaultPageSize = 50

// Page is one page of summaries, most recently updated first; Next is the
// cursor of the following page ("" on the last one).
type Page struct {
	Sessions []Summary
	Next     string
}

// ErrBadCursor is wrapped by Paginate's error for a cursor it did not make.
var ErrBadCursor = errors.New("invalid list cursor")

// Paginate orders summaries by last update, newest first (ties by id), and
// returns the page q asks for. A cursor names the last session of the
// previous page by its position in that order, so sessions written between
// two calls never make a page repeat or skip one that stayed put.
func Paginate(sums []Summary, q ListQuery) (Page, error) {
	var after *Summary
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return Page{}, err
		}
		after = &c
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	kept := make([]Summary, 0, len(sums))
	for _, s := range sums {
		if q.keeps(s) {
			kept = append(kept, s)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return before(kept[i], kept[j]) })
	start := 0
	if after != nil {
		start = sort.Search(len(kept), func(i int) bool { return before(*after, kept[i]) })
	}
	end := min(start+limit, len(kept))
	p := Page{Sessions: kept[start:end]}
	if end < len(kept) {
		p.Next = encodeCursor(kept[end-1])
	}
	return p, nil
}

// keeps reports whether q's filters keep s.
func (q ListQuery) keeps(s Summary) bool {
	if q.Cwd != "" && path.Clean(s.Header.Cwd) != path.Clean(q.Cwd) {
		return false
	}
	return q.Keep == nil || q.Keep(s)
}

// After returns the position q's cursor names (the zero Summary and false
// for the first page), for a store that reads its summaries in listing
// order from there.
func (q ListQuery) After() (Summary, bool, error) {
	if q.Cursor == "" {
		return Summary{}, false, nil
	}
	c, err := decodeCursor(q.Cursor)
	return c, err == nil, err
}

// Collect builds the page q selects from summaries in listing order that
// all come after q's cursor (a store's index read from there): it stops
// as soon as it knows whether a further page exists.
func Collect(q ListQuery, after iter.Seq[Summary]) Page {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	p := Page{Sessions: []Summary{}}
	for s := range after {
		if !q.keeps(s) {
			continue
		}
		if len(p.Sessions) == limit {
			p.Next = encodeCursor(p.Sessions[limit-1])
			break
		}
		p.Sessions = append(p.Sessions, s)
	}
	return p
}

// Before reports whether a comes before b in the listing order (newer
// updates first, then by id).
func Before(a, b Summary) bool { return before(a, b) }

// before is the listing order: newer updates first, then by id.
func before(a, b Summary) bool {
	if a.UpdatedAt != b.UpdatedAt {
		return a.UpdatedAt > b.UpdatedAt
	}
	return a.Header.ID < b.Header.ID
}

func encodeCursor(s Summary) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(s.UpdatedAt, 10) + " " + s.Header.ID))
}

func decodeCursor(c string) (Summary, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return Summary{}, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	ts, id, ok := strings.Cut(string(b), " ")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || id == "" {
		return Summary{}, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return Summary{Header: Header{ID: id}, UpdatedAt: n}, nil
}
