package redisq

import (
	"context"
)

// Pause stops deliveries of the queue, in every process: while it is
// paused no Take, TakeBatch or AckTake leases anything (AckTake still acks),
// and blocked consumers keep waiting on the wake marker as they do on an
// idle queue, at no more cost; Stats.PausedSince says since when. Enqueues, cancels, acks, nacks, lease
// extensions and the admin calls keep working; leases that expire meanwhile
// are returned to the schedule when the queue is resumed. The pause is
// stored in Redis, so it outlives the processes (Destroy ends it). Pausing
// a paused queue changes nothing. One round trip. It returns ErrClosed after
// Close, or a Redis/context error.
func (q *Queue) Pause(ctx context.Context) error {
	if q.isClosed() {
		return ErrClosed
	}
	return q.db.Pause(ctx)
}

// Resume ends a pause: the wake marker is rung, so blocked consumers wake at
// once and claim what is due. Resuming a queue that is not paused changes
// nothing. One round trip; errors as Pause.
func (q *Queue) Resume(ctx context.Context) error {
	if q.isClosed() {
		return ErrClosed
	}
	return q.db.Resume(ctx)
}

// Paused reports whether the queue is paused (Stats reports it too). One
// round trip.
func (q *Queue) Paused(ctx context.Context) (bool, error) {
	if q.isClosed() {
		return false, ErrClosed
	}
	return q.db.Paused(ctx)
}
