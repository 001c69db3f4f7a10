// Package delayqueue provides Queue, an in-process delay queue: items go in
// with a deadline and come out, exactly once, when the deadline has passed,
// earliest deadline first.
//
// Items live in an array-backed min-heap ordered by (deadline, offer order)
// under one mutex. Blocked takers wait Leader-Follower style: one goroutine,
// the leader, sleeps on a timer for exactly the head's remaining delay, and
// the others wait on their own channels with no timer until promoted. So a
// queue with many blocked takers wakes one goroutine per event, never spins
// while nothing is due, and allocates nothing per operation in steady state.
//
// Keyed is the same queue with items identified by keys instead of handles:
// schedule (upsert), add (dedupe), reschedule and cancel by key; a key can
// recur on a Schedule (Every, a cron schedule), its next occurrence queued
// as each is handed out.
package delayqueue

import (
	"context"
	"errors"
	"iter"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by operations that add or wait for items once the
// queue has been closed.
var ErrClosed = errors.New("delayqueue: closed")

// ErrFull is returned by Offer when a bounded queue holds its capacity.
var ErrFull = errors.New("delayqueue: full")

// Option configures a Queue in New.
type Option func(*config)

type config struct {
	capacity int
	precise  bool
}

// WithCapacity bounds the queue to n items: Offer returns ErrFull and Put
// blocks while n items are queued. n == 0 means unbounded (the default);
// New panics if n < 0.
func WithCapacity(n int) Option {
	return func(c *config) { c.capacity = n }
}

// Handle refers to one item offered to a Queue, for Remove and Reschedule.
// Handles are comparable. The zero Handle refers to nothing, and a handle
// stops referring to its item once the item leaves the queue, even if the
// queue reuses the item's storage for a new one.
type Handle struct {
	queue uint64 // Queue.id of the issuing queue; 0 in the zero Handle
	slot  uint32
	gen   uint32
}

// Stats is a snapshot of a queue's counters. At any moment when no call is
// in progress, Offered == Taken + Removed + Drained + Len, and
// Lateness.Count == Taken.
type Stats struct {
	Len         int    // items queued now
	Waiting     int    // goroutines blocked in Take/TakeBatch now (takers only)
	BlockedPuts int    // goroutines blocked in Put now, waiting for room
	Offered     uint64 // items accepted by Offer/OfferAfter/Put (Keyed: keys inserted, plus each next occurrence queued for a recurring key)
	Taken       uint64 // items handed out by Take/TakeBatch/Poll/DrainExpired
	Removed     uint64 // items removed by Remove (Keyed: Cancel)
	Drained     uint64 // items returned by Drain, DrainEntries or Shutdown
	Rescheduled uint64 // successful Reschedules (Keyed: and Schedule/Put replacing a queued key)
	Wakeups     uint64 // times a goroutine blocked in Take/TakeBatch resumed from a wait, for any reason

	// Lateness is the distribution of how late the Taken items were handed
	// out; see Histogram for its resolution and Lateness for what it
	// measures.
	Lateness Histogram
}

var lastQueueID atomic.Uint64

// Queue is a delay queue of values of type T. Each value has a deadline; it
// becomes due when the deadline is at or before now, and due values leave in
// deadline order, equal deadlines in the order they were offered.
//
// Deadlines are kept on the monotonic clock: a deadline that carries a
// monotonic reading (as time.Now().Add(d) does) is never made early or late
// by a step of the wall clock. A deadline without one (from time.Date, say)
// is placed on the monotonic clock by its wall-clock distance from the
// queue's creation. Past and zero deadlines are due at once.
//
// Every value accepted by Offer, OfferAfter or Put leaves the queue exactly
// once: through Take, TakeBatch, Poll, DrainExpired, Remove, Drain,
// DrainEntries or Shutdown.
//
// A Queue must be created with New: its zero value is not usable, and every
// method panics on it with a message saying so. It is safe for concurrent use by
// multiple goroutines. Under testing/synctest, a Queue belongs to the bubble
// it was created in (its timer and channels do): create it inside the
// bubble that uses it.
type Queue[T any] struct {
	id       uint64    // for Handles; never 0
	base     time.Time // deadlines are nanoseconds since base (monotonic)
	capacity int       // 0: unbounded
	timer    leaderTimer

	mu sync.Mutex
	// The fields below are guarded by mu.
	heap    heap[T]
	lastNow int64 // the latest clock reading, in ns since base
	closed  bool
	// stopping: Shutdown has begun. Offers fail with ErrClosed while takers
	// keep taking; Shutdown waits on putters (no Put is blocked then).
	stopping bool
	// recurring: recur is set. The hand-outs test this flag, which sits in
	// the padding of a cache line they touch anyway, not recur, which sits
	// past the lateness counts.
	recurring bool
	leader    *waiter // the taker responsible for the head; nil if none
	// leaderAsleep: the leader armed the timer and is waiting on it, or has
	// just woken and not yet relocked mu. While it is set, a head change
	// must re-arm the timer (rearmLocked), since the leader will not look.
	leaderAsleep bool
	// leaderDone is the Done channel of the sleeping leader's ctx (nil if
	// none), so that a re-arm can tell that the wait should end.
	leaderDone  <-chan struct{}
	followers   waitList // blocked takers without a timer, FIFO
	putters     waitList // blocked Puts (and Shutdowns), FIFO: woken as items leave
	waiterPool  []*waiter
	waiting     int
	offered     uint64
	taken       uint64
	removed     uint64
	drained     uint64
	rescheduled uint64
	wakeups     uint64
	blockedPuts int
	lateness    lateness
	// recur, if set, sees every due head that a hand-out (Take, TakeBatch,
	// Poll, DrainExpired) is about to take, and may keep it queued, moved
	// to a later deadline; see handOutLocked. Keyed sets it (and
	// recurring) while it holds recurring keys, so a Queue, or a Keyed
	// without them, pays one predictable branch per hand-out.
	recur func(first bool) (v T, how recurAction, fail string)
}

// recurAction is what Queue.recur decided for the head.
type recurAction uint8

const (
	recurPop  recurAction = iota // hand the head out: it leaves the queue
	recurKeep                    // hand out the returned copy: the head stays, moved to its next deadline
	recurStop                    // hand out nothing: the hook failed (fail says why)
)

// New returns an empty, open queue configured by opts.
func New[T any](opts ...Option) *Queue[T] {
	var c config
	for _, o := range opts {
		if o != nil { // a nil Option (say, from a conditional list) is ignored
			o(&c)
		}
	}
	if c.capacity < 0 {
		panic("delayqueue: WithCapacity with a negative capacity")
	}
	q := &Queue[T]{
		id:       lastQueueID.Add(1),
		base:     time.Now(),
		capacity: c.capacity,
	}
	if c.precise {
		q.timer = newPreciseTimer()
	} else {
		q.timer = newRuntimeTimer()
	}
	return q
}

// tick places a deadline on the queue's clock. time.Time.Sub saturates, so
// the zero time and the year 9999 map to the ends of the int64 range rather
// than overflowing. A time past time.Time's own range, whose seconds from
// year 1 overflow (time.Unix(math.MaxInt64, 0), a common "never"), compares
// as if wrapped to the far past; it is placed by its Unix seconds instead,
// as never due.
func (q *Queue[T]) tick(at time.Time) int64 {
	if at.Unix() > maxUnwrappedUnix {
		return math.MaxInt64
	}
	return int64(at.Sub(q.base))
}

// maxUnwrappedUnix is the last Unix second that time.Time holds without its
// seconds from year 1 (Unix + 62135596800) overflowing int64.
const maxUnwrappedUnix = math.MaxInt64 - 62135596800

// mustNew fails fast on a Queue that New did not make: the zero Queue has
// no clock base, timer or identity, and would misorder or crash later.
func (q *Queue[T]) mustNew() {
	if q.id == 0 {
		panic("delayqueue: Queue used without New; create it with delayqueue.New")
	}
}

// readClockLocked reads the clock and remembers the reading.
func (q *Queue[T]) readClockLocked() int64 {
	q.lastNow = int64(time.Since(q.base))
	return q.lastNow
}

// headDueLocked reports whether the head exists and is due. Deadlines at or
// before the last reading are due without reading the clock again.
func (q *Queue[T]) headDueLocked() bool {
	if q.heap.len() == 0 {
		return false
	}
	at := q.heap.head().at
	return at <= q.lastNow || at <= q.readClockLocked()
}

// Offer adds v with deadline at and returns a handle to it. It never blocks.
// It returns ErrClosed after Close, and ErrFull if the queue is bounded and
// full.
//
// A deadline at or before now, including the zero time.Time, is due at once.
// The queue keeps deadlines as nanoseconds from its creation in an int64, so
// deadlines more than about 292 years before or after New (the zero time,
// year 9999) are clamped to that range: a far-past one is still due at once
// and a far-future one is never due, but Peek, Snapshot and Deadline then
// report the clamped time (such as year 1734 or 2318), and clamped
// deadlines at the same end tie, leaving in offer order. A time beyond
// time.Time's own range, such as time.Unix(math.MaxInt64, 0), which
// time.Time itself orders before year 1, is never due, as its Unix seconds
// say.
// The complexity is O(log n) where n = q.Len().
func (q *Queue[T]) Offer(v T, at time.Time) (Handle, error) {
	q.mustNew()
	t := q.tick(at)
	q.mu.Lock()
	h, err := q.offerLocked(v, t)
	q.mu.Unlock()
	return h, err
}

// OfferAfter is Offer(v, time.Now().Add(d)).
func (q *Queue[T]) OfferAfter(v T, d time.Duration) (Handle, error) {
	return q.Offer(v, time.Now().Add(d))
}

func (q *Queue[T]) offerLocked(v T, at int64) (Handle, error) {
	if q.closed || q.stopping {
		return Handle{}, ErrClosed
	}
	if q.capacity > 0 && q.heap.len() >= q.capacity {
		return Handle{}, ErrFull
	}
	slot, gen := q.heap.push(v, at)
	q.offered++
	if q.heap.head().slot == slot {
		q.headEarlierLocked()
	}
	return Handle{queue: q.id, slot: slot, gen: gen}, nil
}

// Put adds v with deadline at, blocking while a bounded queue is full.
// It returns ctx.Err() if ctx is done before v is added (at once, without
// adding v, if ctx is already done), and ErrClosed if the queue is or
// becomes closed first.
func (q *Queue[T]) Put(ctx context.Context, v T, at time.Time) (Handle, error) {
	q.mustNew()
	if err := ctx.Err(); err != nil {
		return Handle{}, err
	}
	t := q.tick(at)
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.closed || q.stopping || q.capacity == 0 || q.heap.len() < q.capacity {
			return q.offerLocked(v, t)
		}
		if err := q.awaitRoomLocked(ctx); err != nil {
			return Handle{}, err
		}
	}
}

// awaitRoomLocked blocks a Put until an item leaves, the queue closes or
// ctx is done (then it returns ctx.Err()).
func (q *Queue[T]) awaitRoomLocked(ctx context.Context) error {
	return q.awaitRoomAsLocked(ctx, q.getWaiterLocked())
}

// awaitRoomAsLocked is awaitRoomLocked waiting as w, from getWaiterLocked.
func (q *Queue[T]) awaitRoomAsLocked(ctx context.Context, w *waiter) error {
	q.blockedPuts++
	err := q.awaitLeaveLocked(ctx, w)
	q.blockedPuts--
	return err
}

// awaitLeaveLocked waits as w, from getWaiterLocked, on the putters list
// until an item leaves or the queue closes (spaceFreedLocked or
// wakeAllLocked), or ctx is done. w goes back to the pool.
func (q *Queue[T]) awaitLeaveLocked(ctx context.Context, w *waiter) error {
	q.putters.pushBack(w)
	q.mu.Unlock()
	var err error
	select {
	case <-w.ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	q.mu.Lock()
	// Still listed: nobody woke us. Unlisted: spaceFreedLocked or
	// Close popped and signalled us; if we leave on ctx, pass it on.
	if w.list != nil {
		w.list.remove(w)
	} else if err != nil && q.heap.len() < q.capacity {
		q.spaceFreedLocked(1) // pass on the wake-up we will not use
	}
	w.consume()
	q.waiterPool = append(q.waiterPool, w)
	return err
}

// Take removes and returns the head once it is due, blocking until then.
// It returns ctx.Err() if ctx is done first (at once, taking nothing, if ctx
// is already done), and ErrClosed if the queue is or becomes closed first,
// taking nothing: items left stay for Drain. When ctx ends during the wait,
// the item is either returned with a nil error or left in the queue: never
// lost, never duplicated.
func (q *Queue[T]) Take(ctx context.Context) (T, error) {
	return q.take(ctx, nil)
}

// take is Take; seen, if not nil, is shown the head it hands out, under the
// lock, before it leaves (or moves: see recur).
func (q *Queue[T]) take(ctx context.Context, seen func(h *node[T])) (T, error) {
	q.mustNew()
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	q.mu.Lock()
	// One fresh reading per call: an item found due is then measured
	// (Stats.Lateness) from this call, not from an earlier call's reading,
	// however long the caller worked in between. Poll, the non-blocking
	// hot path, does not pay for it (see Lateness).
	q.readClockLocked()
	var w *waiter
	for {
		if !q.closed && q.headDueLocked() {
			if seen != nil {
				seen(q.heap.head())
			}
			var v T
			if !q.recurring {
				v = q.takeHeadLocked()
			} else {
				var fail string
				if v, fail = q.handOutLocked(true); fail != "" {
					q.leaveLocked(w)
					q.mu.Unlock()
					panic(fail)
				}
			}
			q.taken++
			// Leave first: if w led, it hands off to a follower, who arms
			// for the new head itself; otherwise a sleeping leader is
			// re-armed for it.
			q.leaveLocked(w)
			q.rearmLocked()
			q.spaceFreedLocked(1)
			q.mu.Unlock()
			return v, nil
		}
		if err := q.waitTakeLocked(ctx, &w); err != nil {
			q.mu.Unlock()
			return zero, err
		}
	}
}

// waitTakeLocked blocks a taker until it should look again, or returns why
// it must stop (ErrClosed or ctx.Err()), having left the waiters.
func (q *Queue[T]) waitTakeLocked(ctx context.Context, w **waiter) error {
	if q.closed {
		q.leaveLocked(*w)
		return ErrClosed
	}
	if *w == nil {
		*w = q.getWaiterLocked()
	}
	if err := q.awaitLocked(ctx, *w); err != nil {
		q.leaveLocked(*w)
		return err
	}
	return nil
}

// TakeBatch blocks until at least one item is due, then appends up to max
// due items (all due items if max <= 0) to dst in delivery order and returns
// the extended slice. Errors are as for Take; on error dst is returned
// unchanged.
func (q *Queue[T]) TakeBatch(ctx context.Context, dst []T, max int) ([]T, error) {
	q.mustNew()
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	q.mu.Lock()
	var w *waiter
	for {
		if !q.closed && q.headDueLocked() {
			var fail string
			if !q.recurring {
				dst = q.popDueLocked(dst, max)
			} else {
				dst, fail = q.popDueRecurLocked(dst, max)
			}
			q.leaveLocked(w)
			q.mu.Unlock()
			if fail != "" {
				panic(fail)
			}
			return dst, nil
		}
		if err := q.waitTakeLocked(ctx, &w); err != nil {
			q.mu.Unlock()
			return dst, err
		}
	}
}

// popDueLocked appends up to max (max <= 0: all) due items to dst.
func (q *Queue[T]) popDueLocked(dst []T, max int) []T {
	// One fresh reading per batch, so that the batch's lateness is not
	// measured against a reading taken before a backlog built up.
	q.readClockLocked()
	n := 0
	for (max <= 0 || n < max) && q.headDueLocked() {
		dst = append(dst, q.takeHeadLocked())
		n++
	}
	if n > 0 {
		q.taken += uint64(n)
		q.rearmLocked()
		q.spaceFreedLocked(n)
	}
	return dst
}

// popDueRecurLocked is popDueLocked for a queue with a recur hook. It hands
// out only items due by the reading it starts with: a recurring key's next
// occurrence, queued during the batch, waits for the next call even if it
// falls due meanwhile, so that a batch ends however short the period. If
// the hook fails on the first item, it hands out nothing and returns why;
// on a later item, it ends the batch before that item, whose hand-out is
// then first in the next call.
func (q *Queue[T]) popDueRecurLocked(dst []T, max int) ([]T, string) {
	now := q.readClockLocked()
	n := 0
	for (max <= 0 || n < max) && q.heap.len() > 0 && q.heap.head().at <= now {
		v, fail := q.handOutLocked(n == 0)
		if fail != "" {
			if n == 0 {
				return dst, fail
			}
			break
		}
		dst = append(dst, v)
		n++
	}
	if n > 0 {
		q.taken += uint64(n)
		q.rearmLocked()
		q.spaceFreedLocked(n)
	}
	return dst, ""
}

// handOutLocked is takeHeadLocked for a queue with a recur hook: the hook
// may keep the due head queued, moved to a later deadline, and hand out a
// copy of its value. If the hook fails, nothing is handed out or recorded
// and fail says why: the caller releases the lock and panics with it.
func (q *Queue[T]) handOutLocked(first bool) (v T, fail string) {
	if !q.recurring { // the hook removed itself during this batch
		return q.takeHeadLocked(), ""
	}
	at := q.heap.head().at
	v, how, fail := q.recur(first)
	switch how {
	case recurStop:
		return v, fail
	case recurPop:
		v = q.heap.pop()
	}
	q.lateness.record(uint64(q.lastNow) - uint64(at))
	return v, ""
}

// Poll removes and returns the head if it is due. It never blocks.
func (q *Queue[T]) Poll() (T, bool) {
	q.mustNew()
	q.mu.Lock()
	if !q.headDueLocked() {
		q.mu.Unlock()
		var zero T
		return zero, false
	}
	if q.recurring {
		return q.pollRecurLocked()
	}
	// takeHeadLocked written out: Poll is the hot path, and the call (too
	// big to inline) cost more than the recording itself.
	q.lateness.record(uint64(q.lastNow) - uint64(q.heap.head().at))
	v := q.heap.pop()
	q.taken++
	q.rearmLocked()
	q.spaceFreedLocked(1)
	q.mu.Unlock()
	return v, true
}

// pollRecurLocked is the rest of Poll, the head being due, for a queue with
// a recur hook. It releases the lock.
func (q *Queue[T]) pollRecurLocked() (T, bool) {
	v, fail := q.handOutLocked(true)
	if fail != "" {
		q.mu.Unlock()
		panic(fail)
	}
	q.taken++
	q.rearmLocked()
	q.spaceFreedLocked(1)
	q.mu.Unlock()
	return v, true
}

// DrainExpired appends up to max due items (all due items if max <= 0) to
// dst in delivery order and returns the extended slice. It never blocks.
func (q *Queue[T]) DrainExpired(dst []T, max int) []T {
	q.mustNew()
	q.mu.Lock()
	if q.recurring {
		var fail string
		dst, fail = q.popDueRecurLocked(dst, max)
		q.mu.Unlock()
		if fail != "" {
			panic(fail)
		}
		return dst
	}
	dst = q.popDueLocked(dst, max)
	q.mu.Unlock()
	return dst
}

// Peek returns the head, due or not, and its deadline, without removing it.
// ok is false if the queue is empty. The deadline is the one given to Offer
// as the queue's clock holds it: equal to it by time.Time.Equal, except for
// deadlines more than about 292 years from the queue's creation (such as the
// zero time or year 9999), which are clamped to that range (see Offer).
func (q *Queue[T]) Peek() (v T, at time.Time, ok bool) {
	q.mustNew()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.heap.len() == 0 {
		return v, at, false
	}
	h := q.heap.head()
	return h.v, q.deadlineOf(h.at), true
}

// Remove removes the item h refers to and returns it. It returns false if h
// is the zero Handle, comes from another queue, or its item already left.
// It wakes no blocked taker.
// The complexity is O(log n) where n = q.Len().
func (q *Queue[T]) Remove(h Handle) (T, bool) {
	q.mustNew()
	var zero T
	if h.queue != q.id {
		return zero, false
	}
	q.mu.Lock()
	i := q.heap.lookup(h.slot, h.gen)
	if i < 0 {
		q.mu.Unlock()
		return zero, false
	}
	v := q.removeLocked(i)
	q.mu.Unlock()
	return v, true
}

// removeLocked removes and returns the item at heap index i, for Remove.
func (q *Queue[T]) removeLocked(i int) T {
	v := q.heap.removeAt(i)
	q.removed++
	if i == 0 {
		q.rearmLocked()
	}
	q.spaceFreedLocked(1)
	return v
}

// Reschedule gives the item h refers to the new deadline at; for ties it
// counts as newly offered. It returns false as Remove does. It wakes a
// blocked taker only if the item becomes a head earlier than the old one.
// The complexity is O(log n) where n = q.Len().
func (q *Queue[T]) Reschedule(h Handle, at time.Time) bool {
	q.mustNew()
	if h.queue != q.id {
		return false
	}
	t := q.tick(at)
	q.mu.Lock()
	defer q.mu.Unlock()
	i := q.heap.lookup(h.slot, h.gen)
	if i < 0 {
		return false
	}
	q.rescheduleLocked(i, t)
	return true
}

// rescheduleLocked gives the item at heap index i the deadline t, for
// Reschedule.
func (q *Queue[T]) rescheduleLocked(i int, t int64) {
	slot := q.heap.nodes[i].slot
	oldHead := q.heap.head().at
	q.heap.fix(i, t)
	q.rescheduled++
	// Three cases: the item became an earlier head (wake or re-arm), the
	// head changed otherwise (re-arm a sleeping leader), or neither the old
	// nor the new head is this item (nobody is disturbed).
	switch isHead := q.heap.head().slot == slot; {
	case isHead && t < oldHead:
		q.headEarlierLocked()
	case isHead || i == 0:
		q.rearmLocked()
		q.headLaterLocked()
	}
}

// Len returns the number of items queued, due or not.
func (q *Queue[T]) Len() int {
	q.mustNew()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heap.len()
}

// Close closes the queue. Blocked and later Take, TakeBatch and Put calls,
// and later Offers, return ErrClosed. Items still queued stay for Drain;
// Poll, DrainExpired, Peek, Remove, Reschedule, Len, Stats and Drain keep
// working. Close is idempotent and safe to call from any goroutine. To let
// takers finish what is due first, use Shutdown.
func (q *Queue[T]) Close() {
	q.mustNew()
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.wakeAllLocked()
	q.mu.Unlock()
	// Outside the mutex: closing a timerfd waits for a parked leader's read
	// to let go of it. A concurrent re-arm of a closed timer falls back to
	// the runtime timer harmlessly.
	q.timer.close()
}

// Drain removes and returns every item, due or not, in delivery order. It
// works whether the queue is open or closed, and returns nil if it is empty.
func (q *Queue[T]) Drain() []T {
	q.mustNew()
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.heap.len()
	if n == 0 {
		return nil
	}
	out := make([]T, 0, n)
	for q.heap.len() > 0 {
		out = append(out, q.heap.pop())
	}
	q.drained += uint64(n)
	q.spaceFreedLocked(n)
	return out
}

// Stats returns a snapshot of the queue's counters.
func (q *Queue[T]) Stats() Stats {
	q.mustNew()
	q.mu.Lock()
	defer q.mu.Unlock()
	return Stats{
		Len:         q.heap.len(),
		Waiting:     q.waiting,
		BlockedPuts: q.blockedPuts,
		Offered:     q.offered,
		Taken:       q.taken,
		Removed:     q.removed,
		Drained:     q.drained,
		Rescheduled: q.rescheduled,
		Wakeups:     q.wakeups,
		Lateness:    q.lateness.histogram(),
	}
}

// Consume returns an iterator over items as Take returns them. The loop
// ends when Take fails: when ctx is done or the queue is closed (check
// ctx.Err() to tell which). Breaking out of the loop takes nothing more.
//
//	for v := range q.Consume(ctx) { handle(v) }
func (q *Queue[T]) Consume(ctx context.Context) iter.Seq[T] {
	q.mustNew()
	return func(yield func(T) bool) {
		for {
			v, err := q.Take(ctx)
			if err != nil || !yield(v) {
				return
			}
		}
	}
}
