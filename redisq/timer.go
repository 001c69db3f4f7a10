package redisq

import (
	"context"
	"sync"
	"time"
)

// timerState is a Queue's share of the queue-wide timer. A claim that finds
// the next due item (or lease deadline) in the future gives the timer to the
// claimer's Queue, which must then act at that deadline: one of its Take
// calls claims then, or, when none is waiting for it (all busy with what
// they took), the watch rings the wake marker at the deadline so that some
// waiter, in any process, claims instead. A consumer that comes back to Take
// before the deadline takes the wait over without a round trip, so at a
// steady rate each item costs one claim and no hand-off.
type timerState struct {
	mu      sync.Mutex
	at      time.Time   // guarded by mu: the deadline this Queue owns (zero: none)
	waitFor time.Time   // guarded by mu: the deadline one of this Queue's Takes waits for (zero: none)
	watch   *time.Timer // guarded by mu: fires at at; nil until first needed
	closed  bool        // guarded by mu
}

// ownTimer records that this Queue owns the timer until at and arms the
// watch for it.
func (q *Queue) ownTimer(at time.Time) {
	t := &q.timer
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.at = at
	t.armLocked()
}

// handBackGrace is how long past the deadline the watch waits for one of
// this Queue's consumers to come back to Take (typically right after its
// Ack) before it rings the marker for another waiter. Ringing at once would
// wake a second waiter for nearly every item at a steady rate, whose claim
// races the returning consumer's; the grace bounds the extra lateness when
// every consumer stays busy.
const handBackGrace = time.Millisecond

// armLocked sets the watch to fire at t.at plus the grace.
func (t *timerState) armLocked() {
	d := time.Until(t.at) + handBackGrace
	if t.watch == nil {
		return
	}
	t.watch.Reset(d)
}

// dropTimer forgets the deadline: another Queue took the timer.
func (q *Queue) dropTimer() {
	t := &q.timer
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at = time.Time{}
	if t.watch != nil {
		t.watch.Stop()
	}
}

// timerWait makes the caller the Take that waits for this Queue's deadline,
// if there is one in the future and no other Take waits for it (or for a
// later one). It returns the deadline.
func (q *Queue) timerWait() (time.Time, bool) {
	t := &q.timer
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at.IsZero() || time.Until(t.at) <= 0 {
		return time.Time{}, false
	}
	if !t.waitFor.IsZero() && !t.at.Before(t.waitFor) {
		return time.Time{}, false
	}
	t.waitFor = t.at
	return t.at, true
}

// timerOwned reports the deadline this Queue owns, if timerWait would
// make a caller wait for it now, without making it so.
func (q *Queue) timerOwned() (time.Time, bool) {
	t := &q.timer
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at.IsZero() || time.Until(t.at) <= 0 || !t.waitFor.IsZero() && !t.at.Before(t.waitFor) {
		return time.Time{}, false
	}
	return t.at, true
}

// timerWaitDone ends a timerWait for at. A Take leaving without claiming
// (leaving) lets the watch act at the deadline instead.
func (q *Queue) timerWaitDone(at time.Time, leaving bool) {
	t := &q.timer
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waitFor.Equal(at) {
		t.waitFor = time.Time{}
	}
	if leaving && t.at.Equal(at) && !t.closed {
		t.armLocked()
	}
}

// timerDue runs at the watch's deadline: unless a Take of this Queue waits
// for it, ring the wake marker so that some waiter claims.
func (q *Queue) timerDue() {
	t := &q.timer
	t.mu.Lock()
	if t.closed || t.at.IsZero() || time.Until(t.at) > 0 || t.waitFor.Equal(t.at) {
		t.mu.Unlock()
		return
	}
	t.at = time.Time{}
	t.mu.Unlock()
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = q.db.RingWake(c)
}

// closeTimer stops the watch; if this Queue owns the timer, it gives it up
// and wakes another waiter to take it over.
func (q *Queue) closeTimer() {
	t := &q.timer
	t.mu.Lock()
	t.closed = true
	owned := !t.at.IsZero()
	t.at = time.Time{}
	if t.watch != nil {
		t.watch.Stop()
	}
	t.mu.Unlock()
	if owned {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = q.db.GiveUpTimer(c, q.timerID())
	}
}

// timerID names this Queue in the timer key.
func (q *Queue) timerID() string { return q.wpref + "q" }

// waitDueSoon is a consumer's local wait for this Queue's own deadline:
// when the Queue owns the timer (timerWait) for a due time at most
// localWaitMax away (and under limit), it sleeps until then without a
// Redis command, and reports true: claim now. The claim that follows then
// carries the acks of what finished meanwhile (see takeBatch, which waits
// so for its own Take). It returns ctx's error if ctx ends first.
func (q *Queue) waitDueSoon(ctx context.Context, limit time.Duration) (bool, error) {
	at, mine := q.timerWait()
	if !mine {
		return false, nil
	}
	d := time.Until(at)
	if d > localWaitMax || d >= limit {
		q.timerWaitDone(at, false)
		return false, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		q.timerWaitDone(at, true)
		return false, ctx.Err()
	}
	q.timerWaitDone(at, false)
	return true, nil
}
