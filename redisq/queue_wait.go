package redisq

import (
	"context"
	"time"
)

// The taking side in two steps: waitWork waits until a queue may have due
// work and leases nothing, and claim (claimDue) leases what is due without
// waiting. Take loops over both (takeBatch); a Worker chooses which queue
// gets an idle handler between them, before it leases anything.

// enterTake registers a taking call, as takeBatch does, so that Close
// waits for it; the returned ctx ends with cause ErrClosed when the Queue
// is closed. leave undoes it.
func (q *Queue) enterTake(ctx context.Context) (c context.Context, leave func(), err error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil, nil, ErrClosed
	}
	q.active.Add(1)
	q.mu.Unlock()
	c, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(q.closeCtx, func() { cancel(ErrClosed) })
	return c, func() { stop(); cancel(nil); q.active.Done() }, nil
}

// woke says why a waitWork returned: popped, it consumed a wake-up (the
// marker rang) that some consumer must act on; due, the known due time
// this Queue owns the timer for has come.
type woke struct{ popped, due bool }

// owes reports that the wait consumed a wake-up or a due time that some
// consumer must act on: the caller claims at once, or passes it on with
// passWake.
func (w woke) owes() bool { return w.popped || w.due }

// waitWork blocks until this Queue may have due work, leasing nothing, and
// returns. It returns when items are due (found by a claim of no item,
// which also reclaims expired leases, when peek is set: the caller's last
// claim did not just look), when the wake marker rang, when the known due
// time this Queue owns the timer for has come (waiting for it locally
// when it is at most localWaitMax away), or after the wake cap; woke says
// which. It returns ctx's cause, ErrClosed after Close, or a Redis error;
// a wake-up it consumed before an error is passed on.
func (q *Queue) waitWork(ctx context.Context, peek bool) (woke, error) {
	ctx, leave, err := q.enterTake(ctx)
	if err != nil {
		return woke{}, err
	}
	defer leave()
	for {
		if at, mine := q.timerWait(); mine {
			// The due time, or the wake cap if it comes first.
			wait, timed := q.opt.wakeCap, false
			if d := time.Until(at); d < wait {
				wait, timed = d, true
			}
			popped, err := q.await(ctx, wait, timed)
			if ctx.Err() != nil {
				q.timerWaitDone(at, true) // the watch acts at the deadline instead
				q.passWakeIf(popped)
				return woke{}, context.Cause(ctx)
			}
			q.timerWaitDone(at, false)
			if err != nil && migrating(err) {
				q.pauseForMigration(ctx)
				err = nil
			}
			if err != nil {
				q.passWakeIf(popped)
				return woke{}, err
			}
			return woke{popped: popped, due: timed}, nil
		}
		if peek {
			_, next, err := q.claim(ctx, 0, nil)
			if err != nil {
				if ctx.Err() != nil {
					err = context.Cause(ctx)
				}
				return woke{}, err
			}
			if next == 0 {
				return woke{}, nil
			}
			peek = false
			continue // the claim may have given this Queue the timer
		}
		popped, err := q.block(ctx, q.opt.wakeCap, false)
		if err != nil && migrating(err) {
			q.pauseForMigration(ctx)
			err = nil
		}
		if ctx.Err() != nil || err != nil {
			q.passWakeIf(popped)
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return woke{}, err
		}
		return woke{popped: popped}, nil
	}
}

// passWakeIf passes a consumed wake-up on to another waiter, in any
// process (as a Take leaving without a claim does).
func (q *Queue) passWakeIf(popped bool) {
	if popped {
		q.passWake()
	}
}

// passWake rings the wake marker for another waiter.
func (q *Queue) passWake() {
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = q.db.RingWake(c)
}
