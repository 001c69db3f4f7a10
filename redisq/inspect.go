package redisq

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// State is the state of an item: scheduled (waiting for its due time, or
// due and not yet claimed), in flight (leased to a consumer), dead, or
// completed (acked, and kept for its Job's Retention).
type State int

const (
	StateScheduled State = iota + 1
	StateInFlight
	StateDead
	StateCompleted
)

// States lists every State, in the order items move through them.
var States = []State{StateScheduled, StateInFlight, StateDead, StateCompleted}

// String returns "scheduled", "inflight", "dead" or "completed".
func (s State) String() string {
	switch s {
	case StateScheduled:
		return "scheduled"
	case StateInFlight:
		return "inflight"
	case StateDead:
		return "dead"
	case StateCompleted:
		return "completed"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// ParseState parses a State's String form (also "in-flight", "leased").
func ParseState(s string) (State, error) {
	switch strings.ToLower(s) {
	case "scheduled":
		return StateScheduled, nil
	case "inflight", "in-flight", "leased":
		return StateInFlight, nil
	case "dead":
		return StateDead, nil
	case "completed", "done":
		return StateCompleted, nil
	}
	return 0, fmt.Errorf("redisq: unknown state %q (want scheduled, inflight, dead or completed)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (s State) MarshalText() ([]byte, error) {
	if s < StateScheduled || s > StateCompleted {
		return nil, fmt.Errorf("redisq: bad state %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	*s = v
	return err
}

// code is the state as the storage layer names it.
func (s State) code() (rdb.State, error) {
	switch s {
	case StateScheduled:
		return rdb.Scheduled, nil
	case StateInFlight:
		return rdb.Leased, nil
	case StateDead:
		return rdb.Dead, nil
	case StateCompleted:
		return rdb.Completed, nil
	}
	return "", fmt.Errorf("redisq: bad state %d", int(s))
}

func stateOf(code rdb.State) State {
	switch code {
	case rdb.Scheduled:
		return StateScheduled
	case rdb.Leased:
		return StateInFlight
	case rdb.Dead:
		return StateDead
	case rdb.Completed:
		return StateCompleted
	}
	return 0
}

// Item is a read-only view of one item, as List and Get return it. Times
// are by the Redis clock, to the millisecond. The lease token is never read.
type Item struct {
	ID    string `json:"id"`
	State State  `json:"state"`
	// Due is when the item is (or, in flight and dead, was last) due.
	Due      time.Time `json:"due"`
	Attempts int       `json:"attempts"` // deliveries so far
	// LeaseDeadline is when an in-flight item's lease ends; zero otherwise.
	LeaseDeadline time.Time `json:"lease_deadline,omitzero"`
	// Cancelled is set on an in-flight item that Cancel or Purge marked.
	Cancelled bool      `json:"cancelled,omitempty"`
	Enqueued  time.Time `json:"enqueued"` // when the id was first enqueued
	// DiedAt and DeadReason are set on dead items: when and why they died
	// ("max attempts: lease expired", "max attempts: nacked", "max
	// attempts: " + a NackReason, or a DeadLetter reason).
	DiedAt      time.Time `json:"died_at,omitzero"`
	DeadReason  string    `json:"dead_reason,omitempty"`
	PayloadSize int       `json:"payload_size"`
	// Payload is set by Get, and by List with ListOptions.Payloads.
	Payload []byte `json:"payload,omitempty"`
	// CompletedAt, Expires and Result are set on completed items: when
	// they were acked, when they go, and the handler's result
	// (Message.SetResult; like Payload, set by Get and by List with
	// Payloads, and ResultSize always).
	CompletedAt time.Time `json:"completed_at,omitzero"`
	Expires     time.Time `json:"expires,omitzero"`
	ResultSize  int       `json:"result_size,omitempty"`
	Result      []byte    `json:"result,omitempty"`
	// RateSlot is set on a scheduled item that a claim found over its
	// LimitKey's rate limit (see Queue.SetRateLimit): the slot it waits
	// for, later than Due; zero otherwise.
	RateSlot time.Time `json:"rate_slot,omitzero"`
	// WaitsForPlace is set on a scheduled item that a claim found with
	// every place of its LimitKey's concurrency limit taken (see
	// Queue.SetConcurrencyLimit): it is not due on its own, and becomes
	// due when a place frees.
	WaitsForPlace bool `json:"waits_for_place,omitempty"`
	// Job is the item's kind, headers and options, as enqueued.
	Job

	pos int64 // List: the item's offset in its state's order
}

// itemFrom makes the exported view of an item the storage layer read.
func itemFrom(r rdb.Item) Item {
	it := Item{
		ID:          r.ID,
		State:       stateOf(r.State),
		Due:         msTime(r.Due),
		Attempts:    r.Attempts,
		Cancelled:   r.Cancelled,
		Enqueued:    msTime(r.Enqueued),
		DeadReason:  r.Reason,
		PayloadSize: r.PayloadSize,
		Payload:     r.Payload,
		Job:         jobFrom(r.Job),
		pos:         r.Pos,
	}
	switch it.State {
	case StateScheduled:
		if r.SlotWait != 0 && r.SlotWait == r.Score {
			it.RateSlot = msTime(r.SlotWait)
		}
		it.WaitsForPlace = r.PlaceWait
	case StateInFlight:
		it.LeaseDeadline = msTime(r.Deadline)
	case StateDead:
		it.DiedAt = msTime(r.Score)
	case StateCompleted:
		it.CompletedAt, it.Expires = msTime(r.Finished), msTime(r.Score)
		it.ResultSize, it.Result = r.ResultSize, r.Result
	}
	return it
}

// MaxPage is the largest ListOptions.Limit.
const MaxPage = 1000

// ListOptions selects a page of List.
type ListOptions struct {
	Offset   int64 // items to skip from the start of the order (>= 0)
	Limit    int   // items per page, 1..MaxPage; 0 means 100
	Reverse  bool  // latest first: last due, last lease deadline, latest death
	Payloads bool  // include each item's payload
	// Reason keeps only the dead items that died of exactly this reason
	// (Item.DeadReason; StateDead only). Such a page examines at most
	// MaxPage dead items from Offset, so it may hold fewer than Limit
	// items, none at all, and still have a Next.
	Reason string
	// Kind keeps only the items of this Job.Kind; like Reason, such a
	// page examines at most MaxPage items from Offset.
	Kind string
}

// Page is one page of List.
type Page struct {
	Now   time.Time // Redis TIME when the page was read
	Total int64     // items in the state when the page was read
	Items []Item
	// Next is the Offset of the following page, or -1 after the last one.
	Next int64
}

// List returns one page of the items in state, in the state's order:
// scheduled by due time (FIFO among equal due times), in flight by lease
// deadline, dead by time of death; Reverse turns it around; Reason keeps
// the dead items of one cause of death (see DeadReasons), Kind the items
// of one kind. One script call
// (one round trip), O(log n + limit), so it is safe on a live queue; pages
// are read at different moments, so an item that moves between two calls
// can be missed or seen twice. Without Payloads, Item.Payload is nil and
// PayloadSize still says how big it is; with Payloads a page ends early,
// after the item that brings its payloads to 1 MiB (Next goes on from
// there), so one call copies a bounded amount. It returns ErrClosed after Close, an
// error for a bad state or page, or a Redis/context error.
func (q *Queue) List(ctx context.Context, state State, opt ListOptions) (Page, error) {
	code, err := state.code()
	if err != nil {
		return Page{}, err
	}
	if opt.Limit == 0 {
		opt.Limit = 100
	}
	if opt.Limit < 1 || opt.Limit > MaxPage || opt.Offset < 0 {
		return Page{}, fmt.Errorf("redisq: bad page: offset %d, limit %d (want offset >= 0, limit 1..%d)", opt.Offset, opt.Limit, MaxPage)
	}
	if opt.Reason != "" && state != StateDead {
		return Page{}, fmt.Errorf("redisq: a reason filters dead items, not %s ones", state)
	}
	if q.isClosed() {
		return Page{}, ErrClosed
	}
	r, err := q.db.List(ctx, rdb.ListArgs{State: code, Offset: opt.Offset, Limit: opt.Limit, Payloads: opt.Payloads, Reverse: opt.Reverse, Reason: opt.Reason, Kind: opt.Kind})
	if err != nil {
		return Page{}, err
	}
	p := Page{Now: msTime(r.Now), Total: r.Total, Next: -1}
	examined := r.Examined
	for _, it := range r.Items {
		p.Items = append(p.Items, itemFrom(it))
	}
	// The script reads the page and Total atomically: items past the page
	// exist exactly when end < Total (a page with payloads may end early).
	if end := opt.Offset + examined; examined > 0 && end < p.Total {
		p.Next = end
	}
	return p, nil
}

// Get returns the item id in whatever state it is, with its payload. One
// round trip, O(log n). It returns ErrNotFound for an unknown id, ErrClosed
// after Close, or a Redis/context error.
func (q *Queue) Get(ctx context.Context, id string) (Item, error) {
	if err := checkID(id); err != nil {
		return Item{}, err
	}
	if q.isClosed() {
		return Item{}, ErrClosed
	}
	return q.item(q.db.Get(ctx, id))
}

// item is the Item the storage layer read, or ErrNotFound.
func (q *Queue) item(r rdb.Item, ok bool, err error) (Item, error) {
	if err != nil {
		return Item{}, err
	}
	if !ok {
		return Item{}, ErrNotFound
	}
	return itemFrom(r), nil
}

// MaxPrefixScan is the largest payload GetPrefix cuts a prefix from: 1 MiB,
// the amount that also bounds the payloads of one List page.
const MaxPrefixScan = listBytes

// listBytes bounds the payloads one List page copies: the page ends after
// the item that reaches it (Page.Next goes on from there).
const listBytes = rdb.ListBytes

// GetPrefix returns the item id like Get, reading at most max bytes of its
// payload (0 <= max <= MaxPrefixScan). PayloadSize is always the full size;
// Payload is the whole payload when PayloadSize <= max, its first max bytes
// when PayloadSize <= MaxPrefixScan, and nil for a larger payload (and,
// with max 0, for any non-empty one), so len(Payload) < PayloadSize tells
// a cut or unread payload.
//
// Cost: one round trip, O(log n), plus, for a payload of up to
// MaxPrefixScan bytes, copying it whole on Redis' main thread: Redis has no
// command that reads part of a hash field, so the script copies the
// payload to cut it (HSTRLEN, O(1), sizes it first). A larger payload is
// not touched, so GetPrefix is O(1) in its size, where Get copies a
// payload four times (into the script's reply buffer, into one string,
// into Lua, into the reply); what each costs: docs/performance.md. What
// reaches the client is at most max bytes of payload.
//
// It returns ErrNotFound for an unknown id, ErrClosed after Close, an
// error for a bad max, or a Redis/context error.
func (q *Queue) GetPrefix(ctx context.Context, id string, max int) (Item, error) {
	if err := checkID(id); err != nil {
		return Item{}, err
	}
	if max < 0 || max > MaxPrefixScan {
		return Item{}, fmt.Errorf("redisq: bad payload prefix %d (want 0..%d)", max, MaxPrefixScan)
	}
	if q.isClosed() {
		return Item{}, ErrClosed
	}
	return q.item(q.db.GetPrefix(ctx, id, max))
}

// MaxDueBuckets is the most buckets DueHistogram counts.
const MaxDueBuckets = 1000

// DueHistogram counts scheduled items by due time, for a chart of what is
// coming.
type DueHistogram struct {
	Now     time.Time     // Redis TIME of the count
	Width   time.Duration // bucket width
	Overdue int64         // due at or before Now (the backlog)
	// Counts[i] counts items due after Now+i·Width, up to Now+(i+1)·Width.
	Counts []int64
	Later  int64 // due after Now+len(Counts)·Width
}

// DueHistogram counts the scheduled items in buckets of width (at least
// 1ms; whole milliseconds) from Redis TIME on. It is one script call,
// O(buckets · log n), with 1 <= buckets <= MaxDueBuckets. It returns
// ErrClosed after Close, an error for bad arguments, or a Redis/context
// error.
func (q *Queue) DueHistogram(ctx context.Context, width time.Duration, buckets int) (DueHistogram, error) {
	if width < time.Millisecond || buckets < 1 || buckets > MaxDueBuckets {
		return DueHistogram{}, fmt.Errorf("redisq: bad due histogram: width %v, %d buckets (want >= 1ms, 1..%d)", width, buckets, MaxDueBuckets)
	}
	if q.isClosed() {
		return DueHistogram{}, ErrClosed
	}
	w := width.Milliseconds()
	r, err := q.db.DueHistogram(ctx, w, buckets)
	if err != nil {
		return DueHistogram{}, err
	}
	return DueHistogram{Now: msTime(r.Now), Width: time.Duration(w) * time.Millisecond, Overdue: r.Overdue, Counts: r.Counts, Later: r.Later}, nil
}

// Exists reports whether the queue has any data in Redis: an item, a
// counter or its sequence (a queue that was never used, or was destroyed,
// does not exist). One round trip.
func (q *Queue) Exists(ctx context.Context) (bool, error) {
	return q.db.Exists(ctx)
}

// DeadReason is one cause of death and the dead items that died of it
// (DeadReasons).
type DeadReason struct {
	Reason string    `json:"reason"` // Item.DeadReason, exactly
	Count  int64     `json:"count"`
	First  time.Time `json:"first"` // the earliest death among them
	Last   time.Time `json:"last"`  // the latest
}

// DeadReasonSummary is what DeadReasons found.
type DeadReasonSummary struct {
	Now      time.Time    `json:"now"`
	Dead     int64        `json:"dead"`     // dead items when the first page was read
	Examined int64        `json:"examined"` // how many of them were grouped
	Reasons  []DeadReason `json:"reasons"`  // most frequent first, then by reason
}

// Complete reports whether every dead item was grouped.
func (s DeadReasonSummary) Complete() bool { return s.Examined >= s.Dead }

// DeadReasons groups the dead items by their cause of death (Item.
// DeadReason, exactly), oldest death first, examining at most limit of
// them (1..MaxDeadReasonScan; 0 means MaxDeadReasonScan): one script per
// 1000 dead items, none of which copies a payload. List with
// ListOptions.Reason lists one group's items; RequeueDeadByReason and
// DeleteDeadByReason act on one. Pages are read at different moments, so
// items that die or leave the dead set meanwhile may be counted twice or
// missed. It returns ErrClosed after Close, an error for a bad limit, or a
// Redis/context error.
func (q *Queue) DeadReasons(ctx context.Context, limit int64) (DeadReasonSummary, error) {
	if limit == 0 {
		limit = MaxDeadReasonScan
	}
	if limit < 1 || limit > MaxDeadReasonScan {
		return DeadReasonSummary{}, fmt.Errorf("redisq: dead reasons of %d items (want 1..%d)", limit, MaxDeadReasonScan)
	}
	if q.isClosed() {
		return DeadReasonSummary{}, ErrClosed
	}
	var sum DeadReasonSummary
	var pages []DeadReasonSummary
	for first := true; sum.Examined < limit; first = false {
		r, err := q.db.DeadReasons(ctx, sum.Examined, min(limit-sum.Examined, rdb.MaxFilterScan))
		if err != nil {
			return DeadReasonSummary{}, err
		}
		if first {
			sum.Now, sum.Dead = msTime(r.Now), r.Dead
		}
		page := DeadReasonSummary{}
		for _, rc := range r.Reasons {
			page.Reasons = append(page.Reasons, DeadReason{Reason: rc.Reason, Count: rc.Count, First: msTime(rc.First), Last: msTime(rc.Last)})
		}
		pages = append(pages, page)
		n := r.Examined
		sum.Examined += n
		if n == 0 {
			break
		}
	}
	sum.Reasons = mergeDeadReasons(pages).Reasons
	return sum, nil
}

func sortReasons(rs []DeadReason) {
	slices.SortFunc(rs, func(a, b DeadReason) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
	})
}

// mergeDeadReasons adds up the summaries of several queues (a partitioned
// queue's partitions).
func mergeDeadReasons(ss []DeadReasonSummary) DeadReasonSummary {
	var out DeadReasonSummary
	by := map[string]*DeadReason{}
	for _, s := range ss {
		if s.Now.After(out.Now) {
			out.Now = s.Now
		}
		out.Dead += s.Dead
		out.Examined += s.Examined
		for _, r := range s.Reasons {
			g := by[r.Reason]
			if g == nil {
				by[r.Reason] = &DeadReason{Reason: r.Reason, Count: r.Count, First: r.First, Last: r.Last}
				continue
			}
			g.Count += r.Count
			if r.First.Before(g.First) {
				g.First = r.First
			}
			if r.Last.After(g.Last) {
				g.Last = r.Last
			}
		}
	}
	for _, g := range by {
		out.Reasons = append(out.Reasons, *g)
	}
	sortReasons(out.Reasons)
	return out
}

// MaxDeadReasonScan is the most dead items one DeadReasons call groups.
const MaxDeadReasonScan = 100_000
