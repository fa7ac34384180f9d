package session

import (
	"iter"
	"slices"
)

// SummaryIndex holds summaries in listing order (Before), for a store
// that keeps its own index: an update moves one entry, a page reads from
// the cursor's position. It is not safe for concurrent use.
type SummaryIndex struct {
	byID  map[string]Summary
	order []Summary
}

// Len returns the number of summaries.
func (x *SummaryIndex) Len() int { return len(x.order) }

// Get returns the summary of id.
func (x *SummaryIndex) Get(id string) (Summary, bool) {
	s, ok := x.byID[id]
	return s, ok
}

// Put adds or replaces the summary of s.Header.ID. An empty Title keeps
// the title the index has.
func (x *SummaryIndex) Put(s Summary) {
	if x.byID == nil {
		x.byID = map[string]Summary{}
	}
	if old, ok := x.byID[s.Header.ID]; ok {
		if s.Title == "" {
			s.Title = old.Title
		}
		x.remove(old)
	}
	x.byID[s.Header.ID] = s
	i, _ := slices.BinarySearchFunc(x.order, s, cmpSummary)
	x.order = slices.Insert(x.order, i, s)
}

// Remove drops the summary of id.
func (x *SummaryIndex) Remove(id string) {
	if old, ok := x.byID[id]; ok {
		x.remove(old)
		delete(x.byID, id)
	}
}

func (x *SummaryIndex) remove(old Summary) {
	if i, ok := slices.BinarySearchFunc(x.order, old, cmpSummary); ok {
		x.order = slices.Delete(x.order, i, i+1)
	}
}

// Load replaces the index with sums (later entries of an id win; an
// empty Title keeps an earlier one's), sorting once.
func (x *SummaryIndex) Load(sums []Summary) {
	x.byID = make(map[string]Summary, len(sums))
	for _, s := range sums {
		if old, ok := x.byID[s.Header.ID]; ok && s.Title == "" {
			s.Title = old.Title
		}
		x.byID[s.Header.ID] = s
	}
	x.order = x.order[:0]
	for _, s := range x.byID {
		x.order = append(x.order, s)
	}
	slices.SortFunc(x.order, cmpSummary)
}

// All returns every summary in listing order.
func (x *SummaryIndex) All() []Summary { return slices.Clone(x.order) }

// Page returns the page q selects (as Paginate over All would).
func (x *SummaryIndex) Page(q ListQuery) (Page, error) {
	after, ok, err := q.After()
	if err != nil {
		return Page{}, err
	}
	start := 0
	if ok {
		start, _ = slices.BinarySearchFunc(x.order, after, cmpSummary)
		if start < len(x.order) && x.order[start].Header.ID == after.Header.ID && x.order[start].UpdatedAt == after.UpdatedAt {
			start++
		}
	}
	return Collect(q, x.from(start)), nil
}

func (x *SummaryIndex) from(i int) iter.Seq[Summary] {
	return func(yield func(Summary) bool) {
		for _, s := range x.order[i:] {
			if !yield(s) {
				return
			}
		}
	}
}

func cmpSummary(a, b Summary) int {
	switch {
	case before(a, b):
		return -1
	case before(b, a):
		return 1
	}
	return 0
}
