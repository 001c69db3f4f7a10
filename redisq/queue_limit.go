package redisq

import (
	"context"
	"fmt"
	"time"
)

// SetQueueRateLimit sets the rate limit of the whole queue, for every
// process that uses it: at most l.N claims of its items in any l.Per, by
// the Redis clock to the microsecond, whatever their limit keys. The zero
// RateLimit removes it. It is checked besides the items' own keys' limits
// (SetRateLimit, SetConcurrencyLimit): an item is claimed when all allow
// it. (SetRateLimit(ctx, "", l) is another thing: the limit of the items
// without a limit key.)
//
// While the window is full a claim leases nothing more: the due items stay
// due, in their order (FIFO holds, and no item is rescored), and the
// consumers wait until the window has room, when one of them claims: no
// process polls, and a Take returns no sooner. Each claim counts, a retry's
// too, but not a claim that a handler gives back with Snooze. Calling it
// again changes the limit at once, and wakes a waiting consumer to claim
// under it. One round trip.
//
// The limit applies to the claims of this Queue's consumers: Take,
// TakeBatch, AckTake and the Worker. QueueRateLimit reads its use, and
// Stats.QueueRateLimit says it is set.
func (q *Queue) SetQueueRateLimit(ctx context.Context, l RateLimit) error {
	if l != (RateLimit{}) && (l.N < 1 || l.N > MaxRateN || l.Per <= 0 || l.Per > MaxRatePer) {
		return fmt.Errorf("redisq: SetQueueRateLimit(%v): N must be 1 to %d and Per positive and at most %v", l, MaxRateN, MaxRatePer)
	}
	if q.isClosed() {
		return ErrClosed
	}
	return q.db.SetQueueRateLimit(ctx, int64(l.N), max(delayUS(l.Per), 1))
}

// QueueRateLimit reads the queue's own rate limit (SetQueueRateLimit) and
// its use, as RateLimitState reads a key's: Key is "", and Waiting and
// LastSlot are zero (the items over it stay due, in order, instead of
// waiting for slots). One round trip.
func (q *Queue) QueueRateLimit(ctx context.Context) (LimitState, error) {
	if q.isClosed() {
		return LimitState{}, ErrClosed
	}
	_, r, err := q.db.QueueRateState(ctx)
	if err != nil {
		return LimitState{}, err
	}
	s := LimitState{Used: int(r.Used)}
	if r.Oldest > 0 {
		s.Oldest = time.UnixMicro(r.Oldest)
	}
	if r.N > 0 {
		s.Limit = RateLimit{N: int(r.N), Per: time.Duration(r.Per) * time.Microsecond}
		s.Room = time.UnixMicro(r.Room)
	}
	return s, nil
}
