package delayqueue

import "context"

// Shutdown closes the queue gracefully: it stops new offers at once, lets
// takers finish what is due, then closes the queue and returns what is
// left, so that nothing is lost.
//
// From the moment Shutdown is called, Offer, OfferAfter and Put return
// ErrClosed, and Puts blocked on a full queue return ErrClosed. Takers are
// not disturbed: blocked and later Take, TakeBatch, Poll and DrainExpired
// calls keep receiving every item as it falls due. As soon as no due item
// is left (the queue is empty or its head's deadline is in the future),
// Shutdown closes the queue as Close does, removes the items still queued
// and returns them with their deadlines in delivery order, with a nil
// error. If ctx is done first, it does the same at that moment and returns
// ctx.Err() with the remaining items, due ones included.
//
// Close, by contrast, makes blocked and later takers return ErrClosed at
// once even while items are due, and leaves every queued item for Drain.
//
// Shutdown needs takers to make progress: with due items and no taker it
// returns only when ctx is done. If the queue is closed meanwhile (by Close
// or another Shutdown), Shutdown returns at once with the items still
// queued, if any, and ErrClosed if some of them are due (nil otherwise).
// Remove, Reschedule, Peek, Len and Stats keep working
// throughout.
func (q *Queue[T]) Shutdown(ctx context.Context) ([]Entry[T], error) {
	return q.shutdown(ctx, nil)
}

// shutdown is Shutdown; beforeDrain, if not nil, is called under the lock
// right before the rest is drained (Keyed notes its recurring schedules).
func (q *Queue[T]) shutdown(ctx context.Context, beforeDrain func()) ([]Entry[T], error) {
	q.mustNew()
	q.mu.Lock()
	if !q.stopping {
		q.stopping = true
		// Blocked Puts look again and find offers refused; from now on only
		// Shutdown calls wait on putters.
		q.wakePuttersLocked()
	}
	var err error
	for q.headDueLocked() {
		if q.closed {
			err = ErrClosed // closed under us with items due: not a clean finish
			break
		}
		if err = q.awaitLeaveLocked(ctx, q.getWaiterLocked()); err != nil {
			break
		}
	}
	if beforeDrain != nil {
		beforeDrain()
	}
	rest := q.drainEntriesLocked()
	q.mu.Unlock()
	// The queue is empty and refuses offers, so nothing can be taken
	// between the drain and Close: blocked takers wait until Close wakes them.
	q.Close()
	return rest, err
}

// headLaterLocked is called when the head moved later without leaving
// (Reschedule): during a Shutdown, no item may be due any more.
func (q *Queue[T]) headLaterLocked() {
	if q.stopping {
		q.wakePuttersLocked()
	}
}

// wakePuttersLocked wakes everything waiting on putters.
func (q *Queue[T]) wakePuttersLocked() {
	q.spaceFreedLocked(q.putters.n)
}
