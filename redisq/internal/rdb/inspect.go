package rdb

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

var (
	scriptStats        = newScript("stats", kSched, kLease, kDead, kStats, kSeq, kLate)
	scriptList         = newScript("list")
	scriptGet          = newScript("get")
	scriptGetPrefix    = newScript("get_prefix")
	scriptDueHistogram = newScript("due_histogram", kSched)
	scriptDeadReasons  = newScript("dead_reasons", kDead)
)

// StatsReply is one reading of a queue (lua/stats.lua).
type StatsReply struct {
	Now                            int64 // Redis TIME, ms
	Scheduled, Due, InFlight, Dead int64
	Completed                      int64 // kept and not yet expired
	Head                           int64 // the earliest due time (ms), when HasHead
	HasHead                        bool
	Counters                       map[string]int64 // the stats hash
	Lateness                       map[string]int64 // the lateness hash: bucket bound or "inf", and "sum"
	// NewItems is the count of new items the sequence says were enqueued
	// (n - s0 - r; 0 before the first).
	NewItems int64
	Paused   bool
	// PausedAt is when Pause paused it (ms); 0 when it did not say.
	PausedAt int64
	// RateLimits counts the rate limits set (the sequence's lim).
	RateLimits int64
	// ConcLimits counts the concurrency limits set (the sequence's cc).
	ConcLimits int64
	// QueueRateN and QueueRatePer are the queue's own rate limit (the
	// sequence's ql): N claims per Per µs; N 0: none.
	QueueRateN, QueueRatePer int64
}

// Stats reads the queue's sizes and counters in one script.
func (r *Runner) Stats(ctx context.Context) (StatsReply, error) {
	res, err := r.run(ctx, scriptStats, nil)
	if err != nil {
		return StatsReply{}, err
	}
	s := StatsReply{Now: toInt(res[0]), Scheduled: toInt(res[1]), Due: toInt(res[2]), InFlight: toInt(res[4]), Dead: toInt(res[5])}
	// res[3] is nil when sched is empty; any score (before 1970 too) is a head.
	if res[3] != nil {
		s.Head, s.HasHead = toInt(res[3]), true
	}
	if len(res) > 9 {
		s.Completed = toInt(res[9])
	}
	s.Counters = flatMap(res[6])
	s.Lateness = flatMap(res[7])
	f, _ := res[8].([]interface{}) // n, s0, r, paused, lim, cc, ql of the sequence
	if len(f) >= 3 && f[0] != nil && f[1] != nil {
		n, s0, rq := toInt(f[0]), toInt(f[1]), int64(0)
		if f[2] != nil {
			rq = toInt(f[2])
		}
		s.NewItems = n - s0 - rq
	}
	if len(f) > 4 && f[4] != nil {
		s.RateLimits = toInt(f[4])
	}
	if len(f) > 5 && f[5] != nil {
		s.ConcLimits = toInt(f[5])
	}
	if len(f) > 6 && f[6] != nil {
		s.QueueRateN, s.QueueRatePer = parseRate(f[6])
	}
	if len(f) > 3 && f[3] != nil {
		s.Paused = true
		if ms := ToMS(f[3]); ms > 1 {
			s.PausedAt = ms
		}
	}
	return s, nil
}

// flatMap reads an HGETALL reply given as a flat list.
func flatMap(v interface{}) map[string]int64 {
	flat, _ := v.([]interface{})
	m := make(map[string]int64, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		m[k] = toInt(flat[i+1])
	}
	return m
}

// Item is one item as the inspection scripts read it (the lease token is
// never read). Times are ms; Score is its zset's score (due time, lease
// deadline or time of death).
type Item struct {
	ID          string
	Score       int64
	State       State // "" for a hash without one
	Due         int64
	Attempts    int
	Deadline    int64 // the lease deadline (in flight)
	Enqueued    int64
	Cancelled   bool
	Reason      string // why it died (dead)
	PayloadSize int
	Payload     []byte // nil when not read
	Pos         int64  // List: its offset in the state's order
	Job         Job
	Finished    int64 // when a completed item was acked (ms)
	ResultSize  int
	Result      []byte // nil when not read
	// SlotWait is the rate slot a scheduled item waits for (its score,
	// ms), set when a claim found its limit key's limit reached; 0 when
	// it does not wait for one.
	SlotWait int64
	// PlaceWait is set on a scheduled item that waits for a place under
	// its limit key's concurrency limit (field cq).
	PlaceWait bool
}

// itemStride is the number of reply elements per item from append_item
// (lua/include/append_item.lua): id, zset score, st, due, att, dl, enq, can, why,
// payload size, payload, the job fields (JobFields), fin, result size,
// result, wt, cq.
const itemStride = 11 + len(JobFields) + 5

func itemOf(r []interface{}) Item {
	str := func(v interface{}) string { s, _ := v.(string); return s }
	it := Item{
		ID: str(r[0]), Score: ToMS(r[1]), State: State(str(r[2])), Due: ToMS(r[3]), Attempts: int(toInt(r[4])),
		Deadline: ToMS(r[5]), Enqueued: ToMS(r[6]), Cancelled: str(r[7]) == "1", Reason: str(r[8]),
		PayloadSize: int(toInt(r[9])),
	}
	if p, ok := r[10].(string); ok && (p != "" || it.PayloadSize == 0) {
		it.Payload = []byte(p)
	}
	j := 11 + len(JobFields)
	it.Job = jobOf(r[11:j])
	it.Finished, it.ResultSize = ToMS(r[j]), int(toInt(r[j+1]))
	if p, ok := r[j+2].(string); ok && (p != "" || it.ResultSize == 0) && it.State == Completed {
		it.Result = []byte(p)
	}
	if it.State == Scheduled {
		it.SlotWait = ToMS(r[j+3])
		it.PlaceWait = str(r[j+4]) == "1"
	}
	return it
}

// ListArgs selects a page of List (lua/list.lua).
type ListArgs struct {
	State    State
	Offset   int64
	Limit    int
	Payloads bool
	Reverse  bool
	Reason   string // dead items of this reason only ("" for all)
	Kind     string // items of this kind only ("" for all)
}

// Page is one page of List.
type Page struct {
	Now      int64
	Total    int64 // items in the state
	Examined int64 // members the page went through (a Reason skips some)
	Items    []Item
}

// List reads one page of a state's items.
func (r *Runner) List(ctx context.Context, a ListArgs) (Page, error) {
	res, err := r.run(ctx, scriptList, []string{r.stateKey(a.State)}, string(a.State), a.Offset, a.Limit, flag(a.Payloads), flag(a.Reverse), a.Reason, a.Kind)
	if err != nil {
		return Page{}, err
	}
	p := Page{Now: toInt(res[0]), Total: toInt(res[1]), Examined: toInt(res[2])}
	pos, _ := res[3].([]interface{})
	for i := 4; i+itemStride <= len(res); i += itemStride {
		it := itemOf(res[i : i+itemStride])
		if !a.Payloads {
			it.Payload = nil
		}
		if k := len(p.Items); k < len(pos) {
			it.Pos = a.Offset + toInt(pos[k])
		}
		p.Items = append(p.Items, it)
	}
	return p, nil
}

func (r *Runner) stateKey(st State) string {
	set, ok := SetOf(st)
	if !ok {
		set = SetDead
	}
	return r.SetName(set)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Get reads one item with its payload (lua/get.lua); ok false when there is
// none.
func (r *Runner) Get(ctx context.Context, id string) (it Item, ok bool, err error) {
	res, err := r.run(ctx, scriptGet, []string{r.Keys.Item(id)}, id)
	return oneItem(res, err)
}

// GetPrefix reads one item and at most max bytes of its payload
// (lua/get_prefix.lua): none of a payload over ListBytes.
func (r *Runner) GetPrefix(ctx context.Context, id string, max int) (it Item, ok bool, err error) {
	res, err := r.run(ctx, scriptGetPrefix, []string{r.Keys.Item(id)}, id, max)
	return oneItem(res, err)
}

func oneItem(res []interface{}, err error) (Item, bool, error) {
	if err != nil {
		return Item{}, false, err
	}
	if len(res) < 1+itemStride {
		return Item{}, false, nil
	}
	return itemOf(res[1 : 1+itemStride]), true, nil
}

// DueCounts is what DueHistogram counted (lua/due_histogram.lua).
type DueCounts struct {
	Now     int64
	Overdue int64
	Counts  []int64
	Later   int64
}

// DueHistogram counts the scheduled items in buckets of width ms from
// Redis TIME on.
func (r *Runner) DueHistogram(ctx context.Context, width int64, buckets int) (DueCounts, error) {
	res, err := r.run(ctx, scriptDueHistogram, nil, width, buckets)
	if err != nil {
		return DueCounts{}, err
	}
	if len(res) < 3 {
		return DueCounts{}, errors.New("redisq: due histogram: malformed reply")
	}
	h := DueCounts{Now: toInt(res[0]), Overdue: toInt(res[1]), Later: toInt(res[len(res)-1])}
	for _, v := range res[2 : len(res)-1] {
		h.Counts = append(h.Counts, toInt(v))
	}
	return h, nil
}

// ReasonCount is one cause of death among the dead items one DeadReasons
// page examined: how many, and their first and last death (ms).
type ReasonCount struct {
	Reason      string
	Count       int64
	First, Last int64
}

// ReasonPage is one page of DeadReasons.
type ReasonPage struct {
	Now      int64
	Dead     int64 // dead items
	Examined int64
	Reasons  []ReasonCount
}

// DeadReasons groups n dead items from offset, oldest death first, by
// reason (lua/dead_reasons.lua).
func (r *Runner) DeadReasons(ctx context.Context, offset, n int64) (ReasonPage, error) {
	res, err := r.run(ctx, scriptDeadReasons, nil, offset, n)
	if err != nil {
		return ReasonPage{}, err
	}
	p := ReasonPage{Now: toInt(res[0]), Dead: toInt(res[1]), Examined: toInt(res[2])}
	for i := 3; i+3 < len(res); i += 4 {
		why, _ := res[i].(string)
		p.Reasons = append(p.Reasons, ReasonCount{Reason: why, Count: toInt(res[i+1]), First: ToMS(res[i+2]), Last: ToMS(res[i+3])})
	}
	return p, nil
}

// parseRate reads a rate limit "N,PER" (µs) as the scripts store it; 0, 0
// when it is not one.
func parseRate(v interface{}) (n, per int64) {
	s, _ := v.(string)
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0
	}
	n, err1 := strconv.ParseInt(a, 10, 64)
	per, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	return n, per
}
