package delayqueue

import (
	"errors"
	"fmt"
	"time"
)

// This file holds Keyed's recurring keys. A recurring key is an ordinary
// queued key whose node has a series (Keyed.rec, by heap slot). When a
// hand-out finds it at the head, Queue.recur (nextLocked) asks the Schedule
// for the next occurrence and, instead of popping the node, moves it there
// (heap.fix) and hands out a copy of its value: the key, its index entry and
// its slot never leave, so no call can see it absent between occurrences.
// Any other way out of the heap (Cancel, a drain) removes the node, and
// heap.onRemove drops its series.

// ErrNoOccurrence is returned by ScheduleRecurring and AddRecurring when the
// schedule has no occurrence after now (its Next returned the zero time).
var ErrNoOccurrence = errors.New("delayqueue: schedule has no occurrence after now")

// RecurringOption configures a recurring key in ScheduleRecurring and
// AddRecurring.
type RecurringOption func(*recurringConfig)

type recurringConfig struct {
	catchUp  int
	first    time.Time
	hasFirst bool
}

// CatchUp makes a recurring key hand out missed occurrences one by one,
// oldest first, each with its own time (TakeEntry's Deadline), instead of
// coalescing them: when an occurrence is handed out and the one after it
// is already due, that one is queued, due at once, and so on, up to n
// times in a row; past n, the rest are coalesced as by default (see
// ScheduleRecurring). So a consumer back after missing m occurrences gets
// the one that was queued, then min(m, n) more, then the first occurrence
// after now. The bound keeps a short period after a long stall from
// flooding the queue. CatchUp(0) is the default; CatchUp panics if n < 0.
func CatchUp(n int) RecurringOption {
	if n < 0 {
		panic(fmt.Sprintf("delayqueue: CatchUp with a negative bound %d", n))
	}
	return func(c *recurringConfig) { c.catchUp = n }
}

// FirstAt makes t the first occurrence of a recurring key instead of
// s.Next(now); t may be past (due at once, then handed out as a missed
// occurrence is). Restore uses it to resume a series at the occurrence a
// Snapshot or Shutdown recorded.
func FirstAt(t time.Time) RecurringOption {
	return func(c *recurringConfig) { c.first, c.hasFirst = t, true }
}

// series is one recurring key's schedule and missed-occurrence state.
// sched and catchUp never change, so Snapshot may read them after
// releasing the lock; behind is guarded by Queue.mu.
type series struct {
	sched   Schedule
	catchUp int
	behind  int // occurrences queued in a row already due (CatchUp)
}

// ScheduleRecurring queues v under key as a recurring key: its first
// occurrence is s.Next(now) (or FirstAt's time), and each time a Take,
// TakeEntry, TakeBatch, Poll or DrainExpired hands out an occurrence, the
// next one is queued with the same value under the same lock, before the
// call returns. So the key is never absent between occurrences: Get and
// Deadline show the next one, Cancel ends the series, Reschedule moves the
// occurrence queued (the series goes on from it), Schedule and Put replace
// the series with a one-shot item and ScheduleRecurring with another
// series; Add and AddRecurring leave it be. The series ends when Next
// returns the zero time (the key leaves with its last occurrence) or when
// the key leaves otherwise (Cancel, Drain, DrainEntries, Shutdown:
// DrainEntries, Shutdown and Snapshot return the schedule with the
// occurrence queued, for Restore).
//
// Occurrences are never early, as no deadline is, and each comes strictly
// after the one before. Occurrences missed while the previous one waited
// for a consumer (a consumer busy for longer than the period, a Snapshot
// restored after downtime) are coalesced by default: the occurrence queued
// is handed out once for all of them, and the next one queued is
// s.Next(now), the first after the hand-out. CatchUp(n) hands them out one
// by one instead, up to n in a row.
//
// If key is already queued, its value, deadline and schedule are replaced
// (for ties it counts as newly scheduled) and replaced is true. It never
// blocks. Errors are as for Schedule (ErrClosed; ErrFull only for a new
// key), plus ErrNoOccurrence if s has no occurrence after now, and then
// nothing changes. It panics if s is nil, or if s.Next(now) returns a time
// not after now.
//
// The queue calls s.Next with its lock held, at each hand-out. If it
// panics, or returns a time not after its argument, the series ends, the
// occurrence stays queued as a one-shot item (the next hand-out delivers
// it), and the call handing it out panics with a delayqueue: message; a
// batch call that already holds items returns them instead, and the next
// call panics. Occurrences are computed on the queue's clock, as any
// deadline is placed (see Queue): the wall clock read by NewKeyed, moved
// on by the monotonic clock, so a later step of the wall clock shifts them
// by the step. Each occurrence counts in Stats as an item offered and
// taken.
func (k *Keyed[K, V]) ScheduleRecurring(key K, v V, s Schedule, opts ...RecurringOption) (replaced bool, err error) {
	return k.scheduleRecurring(key, v, s, true, opts)
}

// AddRecurring is ScheduleRecurring only if key is not queued, and reports
// whether it queued it; a queued key keeps its value, deadline and schedule
// (or lack of one). Starting a service with AddRecurring after restoring a
// snapshot keeps each restored series where it was, missed occurrences
// included, where ScheduleRecurring would restart it from now. Errors and
// panics are as for ScheduleRecurring.
func (k *Keyed[K, V]) AddRecurring(key K, v V, s Schedule, opts ...RecurringOption) (added bool, err error) {
	found, err := k.scheduleRecurring(key, v, s, false, opts)
	return !found && err == nil, err
}

// Restore queues e as Snapshot, DrainEntries or Shutdown returned it: with
// Schedule(e.Key, e.Value, e.Deadline) if e.Schedule is nil, otherwise as
// a recurring key resumed at the occurrence recorded, with
// ScheduleRecurring(e.Key, e.Value, e.Schedule, FirstAt(e.Deadline),
// CatchUp(e.CatchUp)). An occurrence that fell due while the process was
// down is due at once and then handed out as a missed one is. Restoring
// entries in the order they were returned keeps the order of equal
// deadlines. Errors are as for Schedule, and an error if e.CatchUp < 0.
// See KeyedEntry for saving schedules that cannot be serialised.
func (k *Keyed[K, V]) Restore(e KeyedEntry[K, V]) (replaced bool, err error) {
	if e.Schedule == nil {
		return k.Schedule(e.Key, e.Value, e.Deadline)
	}
	if e.CatchUp < 0 {
		return false, fmt.Errorf("delayqueue: Restore of key %v with a negative CatchUp %d", e.Key, e.CatchUp)
	}
	return k.ScheduleRecurring(e.Key, e.Value, e.Schedule, FirstAt(e.Deadline), CatchUp(e.CatchUp))
}

// scheduleRecurring is ScheduleRecurring (replace) and AddRecurring; it
// reports whether key was found queued.
func (k *Keyed[K, V]) scheduleRecurring(key K, v V, s Schedule, replace bool, opts []RecurringOption) (found bool, err error) {
	q := k.queueFor(key)
	if s == nil {
		panic("delayqueue: ScheduleRecurring with a nil Schedule")
	}
	var c recurringConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	first := c.first
	if !c.hasFirst {
		// Outside the lock: a Schedule that panics panics here, in the
		// caller's goroutine. Now as the queue's clock has it (see
		// nextLocked): time.Now's wall and monotonic readings are taken
		// apart, so tick(Next(time.Now())) would be off the grid of an
		// Interval by their jitter.
		now := q.deadlineOf(int64(time.Since(q.base)))
		if first = s.Next(now); first.IsZero() {
			return false, ErrNoOccurrence
		}
		if !first.After(now) {
			panic(fmt.Sprintf("delayqueue: ScheduleRecurring: Next(%v) returned %v, not after it", now, first))
		}
	}
	t := q.tick(first)
	sr := &series{sched: s, catchUp: c.catchUp}
	q.mu.Lock()
	defer q.mu.Unlock()
	found, err = k.upsertLocked(key, v, t, replace)
	if err != nil || found && !replace {
		return found, err
	}
	k.setSeriesLocked(k.keys[key], sr)
	return found, nil
}

// seriesLocked returns the series of the node in slot, nil if none.
func (k *Keyed[K, V]) seriesLocked(slot uint32) *series {
	if int(slot) < len(k.rec) {
		return k.rec[slot]
	}
	return nil
}

// setSeriesLocked gives the node in slot the series s, replacing any, and
// installs the hand-out hook.
func (k *Keyed[K, V]) setSeriesLocked(slot uint32, s *series) {
	if n := int(slot) + 1; n > len(k.rec) {
		k.rec = append(k.rec, make([]*series, n-len(k.rec))...)
	}
	if k.rec[slot] == nil {
		k.nrec++
	}
	k.rec[slot] = s
	if !k.q.recurring {
		k.q.recur, k.q.recurring = k.nextLocked, true
	}
}

// dropSeriesLocked ends the series of the node in slot, if any. Without
// series left, hand-outs go back to the path without the hook.
func (k *Keyed[K, V]) dropSeriesLocked(slot uint32) {
	if int(slot) >= len(k.rec) || k.rec[slot] == nil {
		return
	}
	k.rec[slot] = nil
	if k.nrec--; k.nrec == 0 {
		k.q.recur, k.q.recurring = nil, false
	}
}

// seriesByKeyLocked maps each recurring key to its series, for a drain
// (which drops them); nil if there is none.
func (k *Keyed[K, V]) seriesByKeyLocked() map[K]*series {
	if k.nrec == 0 {
		return nil
	}
	h := &k.q.heap
	m := make(map[K]*series, k.nrec)
	for slot, s := range k.rec {
		if s != nil {
			m[h.nodes[h.slots[slot].pos].v.Key] = s
		}
	}
	return m
}

// nextLocked is Queue.recur while k has recurring keys. For a due head
// with a series it queues the next occurrence by moving the head's node
// there (a fresh sequence number: it counts as newly scheduled for ties)
// and returns a copy of the item to hand out; at the end of the series it
// drops the series and lets the head be popped. If Next fails it returns
// recurStop: on the first item of a call it ends the series (the head
// stays queued as a one-shot item) and returns the panic message; on a
// later item of a batch it keeps the series, so that the next call, for
// which that item comes first, fails instead.
func (k *Keyed[K, V]) nextLocked(first bool) (it Item[K, V], how recurAction, fail string) {
	q := k.q
	h := q.heap.head()
	s := k.seriesLocked(h.slot)
	if s == nil {
		return it, recurPop, ""
	}
	// A fresh reading: Poll may hold an old one, and coalescing needs now.
	next, ok, fail := nextOccurrence(q, s, h.at, q.readClockLocked())
	switch {
	case fail != "":
		if first {
			k.dropSeriesLocked(h.slot)
		}
		return it, recurStop, fmt.Sprintf("delayqueue: recurring key %v: %s; the series ends", h.v.Key, fail)
	case !ok:
		k.dropSeriesLocked(h.slot)
		return it, recurPop, ""
	}
	it = h.v
	q.heap.fix(0, next)
	q.offered++
	return it, recurKeep, ""
}

// nextOccurrence returns the occurrence to queue after the one at o (ticks
// of q's clock) handed out at now >= o, by s's policy, or ok == false if
// the series ends. It is strictly after o: a catch-up occurrence is after
// o, a coalescing one after now. fail says why Next failed.
func nextOccurrence[T any](q *Queue[T], s *series, o, now int64) (next int64, ok bool, fail string) {
	if s.catchUp > 0 {
		c, ok, fail := callNext(q, s.sched, o)
		if fail != "" || !ok {
			return 0, false, fail
		}
		// c <= o only for an o clamped to the clock's range (see Offer):
		// coalesce then.
		if c > o {
			if c > now {
				s.behind = 0
				return c, true, ""
			}
			if s.behind < s.catchUp {
				s.behind++
				return c, true, ""
			}
		}
	}
	s.behind = 0
	c, ok, fail := callNext(q, s.sched, now)
	if fail != "" || !ok {
		return 0, false, fail
	}
	if c <= now {
		return 0, false, fmt.Sprintf("Next(%v) returned %v, not after it", q.deadlineOf(now), q.deadlineOf(c))
	}
	return c, true, ""
}

// callNext returns s.Next at t, on q's clock, or ok == false for the zero
// time. A panic in Next is recovered (the queue's lock is held) and
// returned in fail.
func callNext[T any](q *Queue[T], s Schedule, t int64) (c int64, ok bool, fail string) {
	arg := q.deadlineOf(t)
	defer func() {
		if r := recover(); r != nil {
			c, ok, fail = 0, false, fmt.Sprintf("Next(%v) panicked: %v", arg, r)
		}
	}()
	next := s.Next(arg)
	if next.IsZero() {
		return 0, false, ""
	}
	return q.tick(next), true, ""
}
