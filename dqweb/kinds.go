package dqweb

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

// Kinds and jobs: every item carries a redisq.Job (its kind, headers and
// own options, as enqueued). The lists of a queue's state tabs have a
// Kind column (on the dead tab, the kind in each item's head), each kind
// a link to the same tab filtered by it (kind=K, the exact bytes, with
// the dead tab's reason=R when it has one): List with ListOptions.Kind,
// or on a partitioned queue Partitioned.List with
// PartitionedListOptions.Kind, merged across its partitions and paged by
// its cursor. A page examines up to 1000 items (of each partition), so it
// may hold fewer items than its size, or none, and still have a next one,
// as with a cause of death. The pager keeps the filter; the filter is
// said above the list, with a link to all kinds; the actions on a whole
// state are not offered on a list filtered by kind (they would act on
// every kind), and neither is a cause's grouping (it counts every kind).
// A kind on a tab that is no list, longer than redisq.MaxKindLen, or not
// UTF-8 (no kind is) is a 400, decided before Redis is read. The item
// page shows the kind, the headers sorted by name (at most headersShown
// of them; dqctl show -json prints all) and the options of its Job that
// are set. Kinds and header names are shown as ids are (shown: escaped,
// Go-quoted when not plain, cut when long), header values as reasons
// are; in sentences a kind is inside a <bdi>, so that right-to-left text
// in it cannot reorder the words around it.

// headersShown bounds the headers the item page lists (MaxHeaderBytes
// allows thousands of one-byte ones); the others are counted.
const headersShown = 100

// kindParam is the lists' filter: the kind parameter, exactly.
func kindParam(r *http.Request, state redisq.State) (string, error) {
	kind := r.URL.Query().Get("kind")
	switch {
	case kind == "":
	case state == 0:
		return "", fmt.Errorf("a kind filters the lists of items (the tabs scheduled, inflight, dead and completed), not %s", tabNoun(r.URL.Query().Get("state")))
	case len(kind) > redisq.MaxKindLen:
		return "", fmt.Errorf("kind of %d bytes is longer than any (at most %d bytes)", len(kind), redisq.MaxKindLen)
	case !utf8.ValidString(kind):
		return "", fmt.Errorf("kind %s is not UTF-8, which every kind is", quoted(kind))
	}
	return kind, nil
}

// tabNoun names the tab of a state parameter that is no state's.
func tabNoun(s string) string {
	if s == "" {
		return "the summary"
	}
	return "the " + quoted(s) + " tab"
}

// kindURL is the list of state of queue name filtered by kind (and, on
// the dead tab, by reason when it is not ""), "" when it cannot be.
func (h *handler) kindURL(name string, state redisq.State, reason, kind string) string {
	u := h.tabURL(name, state)
	if u == "" || state == 0 || kind == "" || len(kind) > redisq.MaxKindLen {
		return ""
	}
	v := url.Values{"kind": {kind}}
	if reason != "" && state == redisq.StateDead {
		v.Set("reason", reason)
	}
	return u + "&" + v.Encode()
}

// kindFilter is the kind a list is filtered by.
type kindFilter struct {
	Shown  string // quoted
	AllURL string // the list of every kind (with the same reason)
	// Whole: the state has items, whose actions on all of them are on
	// the list of all kinds.
	Whole bool
	Noun  string // "scheduled items"
}

// filterByKind fills in the filter of a list filtered by d.Kind: its
// sentence, and no action on the whole state.
func (h *handler) filterByKind(d *queueData) {
	all := h.tabURL(d.Name, d.State)
	if d.Reason != "" {
		all = h.reasonURL(d.Name, d.Reason)
	}
	d.KindFilter = &kindFilter{Shown: quoted(d.Kind), AllURL: all, Whole: len(d.Whole) > 0, Noun: stateNoun(d.State) + "s"}
	d.Whole = nil
}

// filteredPager is the pager of a list filtered by a cause or a kind, at
// offset off: its size says nothing of the rest.
func filteredPager(d *queueData) pager {
	p := pager{Filtered: true, Shown: int64(len(d.Items)), Among: stateNoun(d.State) + "s"}
	switch {
	case d.Reason != "" && d.Kind != "":
		p.Of = "of this cause and kind"
	case d.Kind != "":
		p.Of = "of this kind"
	default:
		p.Of = "of this cause"
	}
	return p
}

// headerRow is one header of an item.
type headerRow struct {
	Name, Value string // as shown
}

// jobOption is one option of an item's Job that is set.
type jobOption struct {
	Key, Name string // Key for data-k
	Value     string
	At        when // NotAfter
	Note      string
}

// jobView is an item's headers and options as its page shows them (its
// kind is in its itemRow).
type jobView struct {
	Headers     []headerRow
	MoreHeaders int
	Options     []jobOption
}

// jobOf formats the headers and options of it, an item read at now.
func jobOf(it redisq.Item, now time.Time) jobView {
	j := it.Job
	var v jobView
	names := make([]string, 0, len(j.Headers))
	for k := range j.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) > headersShown {
		v.MoreHeaders = len(names) - headersShown
		names = names[:headersShown]
	}
	for _, k := range names {
		v.Headers = append(v.Headers, headerRow{Name: shown(k), Value: shownReason(j.Headers[k])})
	}
	switch {
	case j.MaxAttempts > 0:
		v.Options = append(v.Options, jobOption{Key: "max-attempts", Name: "max attempts", Value: strconv.Itoa(j.MaxAttempts), Note: "its own, not the queue's"})
	case j.MaxAttempts < 0:
		v.Options = append(v.Options, jobOption{Key: "max-attempts", Name: "max attempts", Value: "no limit", Note: "its own, not the queue's"})
	}
	if j.BackoffBase > 0 {
		v.Options = append(v.Options, jobOption{Key: "backoff", Name: "backoff", Value: short(j.BackoffBase) + " doubling, at most " + short(j.BackoffMax),
			Note: "its own, not the queue's"})
	}
	if j.Timeout > 0 {
		v.Options = append(v.Options, jobOption{Key: "timeout", Name: "timeout", Value: short(j.Timeout), Note: "each run of a Worker's handler"})
	}
	if !j.NotAfter.IsZero() {
		o := jobOption{Key: "not-after", Name: "not after", At: at(j.NotAfter, now)}
		if !j.NotAfter.After(now) && it.State != redisq.StateDead {
			o.Note = "past: a Worker that claims it dead-letters it unrun"
		} else {
			o.Note = "a Worker that claims it later dead-letters it unrun"
		}
		v.Options = append(v.Options, o)
	}
	if j.Retention > 0 {
		v.Options = append(v.Options, jobOption{Key: "retention", Name: "retention", Value: short(j.Retention), Note: "kept that long once acked"})
	}
	if j.UniqueKey != "" {
		note := "no other enqueue of the key for " + short(j.UniqueFor) + " after its own (dqctl unique shows the window)"
		if j.Debounce {
			note = "debounced: an enqueue of the key within " + short(j.UniqueFor) + " replaces it while it waits"
		}
		v.Options = append(v.Options, jobOption{Key: "unique", Name: "unique key", Value: quoted(j.UniqueKey), Note: note})
	}
	if j.LimitKey != "" {
		v.Options = append(v.Options, jobOption{Key: "limit", Name: "limit key", Value: quoted(j.LimitKey),
			Note: "its starts count against the key's rate and concurrency limits, if any (dqctl limits shows them)"})
	}
	if !it.RateSlot.IsZero() {
		v.Options = append(v.Options, jobOption{Key: "rate-slot", Name: "waits for a slot", At: at(it.RateSlot, now),
			Note: "its limit key's rate limit was reached when it came due: it is claimed at this slot"})
	}
	if it.WaitsForPlace {
		v.Options = append(v.Options, jobOption{Key: "place", Name: "waits for a place", Value: "under its limit key's concurrency limit",
			Note: "every place was taken when it came due: it is due when one frees"})
	}
	return v
}
