package dqweb

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// The overview sorts its queues by a column, to tell which queue is sick:
// the parameters sort (name, scheduled, due, overdue, inflight, dead or
// errors) and dir (asc or desc; by default asc for the name, desc, worst
// first, for a figure), set by the links of the table's head, so that it
// works without the script and the URL keeps the sort. Without sort, the
// queues are in the order of their list (by name, unless Options.Queues
// says otherwise). Sorted by name, a page reads its 100 queues; sorted by
// a figure, the overview reads every listed queue (at most maxSorted, the
// first by name, rowReaders at a time), sorts them and shows 100: a
// request costs a Stats per queue (and a Workers per queue with due
// items). Rows that cannot be read, and error rates not yet known (the
// first reading of a queue), sort last.

// maxSorted is the most queues the overview reads to sort them by a
// figure (a variable for tests). It stays below maxTracked, so that
// sorting does not make the rates forget every queue.
var maxSorted = 500

// rowReaders is how many queues the overview reads at once.
const rowReaders = 8

// sortKeys are the columns the overview sorts by.
var sortKeys = []string{"name", "scheduled", "due", "overdue", "inflight", "dead", "errors"}

// sortLabels name the sort keys for the "Sort by" line.
var sortLabels = map[string]string{"name": "name", "scheduled": "scheduled", "due": "due now", "overdue": "oldest overdue",
	"inflight": "in flight", "dead": "dead", "errors": "error rate"}

// headCell is a sortable column's head, for the template "sorth".
type headCell struct {
	sortHead
	Key, Label, Class, Title string
}

// sortHead is the link of a column's head: to sort by it, or, when it is
// the sort, to turn it around.
type sortHead struct {
	URL   string
	Arrow string // " ▲" or " ▼" on the current sort
	Aria  string // aria-sort: "ascending", "descending", or ""
}

// overviewSort is the overview's sort, from the request.
type overviewSort struct {
	key  string // "" (the list's order) or one of sortKeys
	desc bool
}

// parseSort reads the sort and dir parameters.
func parseSort(v url.Values) (overviewSort, error) {
	s := overviewSort{key: v.Get("sort")}
	if s.key != "" && !slices.Contains(sortKeys, s.key) {
		return s, fmt.Errorf("unknown sort %s: the overview sorts by %s", quoted(s.key), strings.Join(sortKeys, ", "))
	}
	switch d := v.Get("dir"); d {
	case "":
		s.desc = s.key != "" && s.key != "name"
	case "asc", "desc":
		s.desc = d == "desc"
	default:
		return s, fmt.Errorf("unknown dir %s: asc or desc", quoted(d))
	}
	return s, nil
}

// heads are the links of the sortable columns' heads.
func (h *handler) heads(s overviewSort) map[string]sortHead {
	m := map[string]sortHead{}
	for _, k := range sortKeys {
		desc := k != "name" // the first click: worst first, or A to Z
		cur := s.key == k || (k == "name" && s.key == "")
		var hd sortHead
		if cur {
			hd.Arrow, hd.Aria = " ▲", "ascending"
			if s.desc {
				hd.Arrow, hd.Aria = " ▼", "descending"
			}
			desc = !s.desc
		}
		dir := "asc"
		if desc {
			dir = "desc"
		}
		hd.URL = h.opt.Prefix + "?" + url.Values{"sort": {k}, "dir": {dir}}.Encode()
		m[k] = hd
	}
	return m
}

// overviewRows reads the rows of names, rowReaders at a time.
func (h *handler) overviewRows(ctx context.Context, list *listing, names []string) []queueRow {
	rows := make([]queueRow, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, rowReaders)
	for i, n := range names {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rows[i] = h.overviewRow(ctx, list, n)
		}()
	}
	wg.Wait()
	return rows
}

// sortRows sorts rows by s (a figure, or the name): unreadable rows and
// unknown error rates last, ties by name.
func sortRows(rows []queueRow, s overviewSort) {
	value := func(r queueRow) (float64, bool) {
		st := r.Stats
		switch s.key {
		case "scheduled":
			return float64(st.Scheduled), true
		case "due":
			return float64(st.DueBacklog), true
		case "overdue":
			return float64(st.OldestOverdue), true
		case "inflight":
			return float64(st.InFlight), true
		case "dead":
			return float64(st.Dead), true
		case "errors":
			return r.Rates.ErrorRate, r.Rates.ErrKnown
		}
		return 0, true
	}
	slices.SortStableFunc(rows, func(a, b queueRow) int {
		if c := cmp.Compare(boolInt(a.Err != ""), boolInt(b.Err != "")); c != 0 {
			return c
		}
		va, oka := value(a)
		vb, okb := value(b)
		if c := cmp.Compare(boolInt(!oka), boolInt(!okb)); c != 0 {
			return c
		}
		c := cmp.Compare(va, vb)
		if s.key == "name" || c == 0 {
			c = strings.Compare(a.Name, b.Name)
		}
		if s.desc && (s.key == "name" || cmp.Compare(va, vb) != 0) {
			c = -c
		}
		return c
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
