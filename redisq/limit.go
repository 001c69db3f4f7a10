package redisq

import (
	"context"
	"fmt"
	"time"
)

// RateLimit is a limit on how often the items of one limit key start (see
// Queue.SetRateLimit): at most N claims in any interval of length Per, by
// the Redis clock to the microsecond. It is a sliding window, not a token
// bucket: N claims at once use the whole of Per, and none follows until
// the first of them is Per old. A retry is a start like the first. The
// zero RateLimit is no limit.
type RateLimit struct {
	N   int
	Per time.Duration
}

// MaxRatePer is the longest RateLimit.Per; MaxRateN the largest N.
const (
	MaxRatePer = 10 * 365 * 24 * time.Hour
	MaxRateN   = 1 << 30
)

func (l RateLimit) String() string {
	if l.N == 0 {
		return "none"
	}
	return fmt.Sprintf("%d per %v", l.N, l.Per)
}

// LimitState is a limit key's rate limit and its use, as the Redis clock
// saw it when it was read.
type LimitState struct {
	Key   string
	Limit RateLimit // zero: the key has no limit
	// Used counts the claims of the window that ends now; Oldest is the
	// first of them (zero when none), and Room when the next claim may be
	// made (now, while Used < N; after a limit is lowered below Used, when
	// enough of them have left the window).
	Used   int
	Oldest time.Time
	Room   time.Time
	// Waiting counts the items that a claim found over the limit and that
	// wait in the queue for a slot; LastSlot is the last slot given to
	// one, zero when none is ahead.
	Waiting  int
	LastSlot time.Time
}

// SetRateLimit sets the rate limit of the items whose LimitKey is key ("":
// the items without one), for every process that uses the queue: at most
// l.N of them are claimed in any l.Per. The zero RateLimit removes the
// limit. An item due while its key's window is full is not leased: it
// waits in Redis, scheduled at its slot, when the window has room again
// and at least l.Per/l.N after the slot given before it, so that a backlog
// comes due one item at a time at the limit's rate, and is claimed then
// like any due item (no process polls for it); the window is checked
// again then, and an item whose window is still full (its consumer was
// late) waits again in its place. Waiting items of a key keep their
// order, and a new item of the key waits behind them. Items of other keys
// are not held up. Calling it again changes the limit at once; the items
// waiting under the old one are let go and wait again under the new one
// only if they must. It returns when they are (one round trip per 100
// of them).
//
// Limits apply to the claims of this Queue's consumers: Take, TakeBatch,
// AckTake and the Worker. Take a limit into account when choosing a
// visibility: an item waiting for its slot is not leased.
func (q *Queue) SetRateLimit(ctx context.Context, key string, l RateLimit) error {
	if len(key) > MaxLimitKeyLen {
		return fmt.Errorf("redisq: a limit key of %d bytes, over MaxLimitKeyLen (%d)", len(key), MaxLimitKeyLen)
	}
	if l != (RateLimit{}) && (l.N < 1 || l.N > MaxRateN || l.Per <= 0 || l.Per > MaxRatePer) {
		return fmt.Errorf("redisq: SetRateLimit(%q, %v): N must be 1 to %d and Per positive and at most %v", key, l, MaxRateN, MaxRatePer)
	}
	if q.isClosed() {
		return ErrClosed
	}
	return q.db.SetRateLimit(ctx, key, int64(l.N), max(delayUS(l.Per), 1))
}

// RateLimitState reads key's limit and its use. One round trip.
func (q *Queue) RateLimitState(ctx context.Context, key string) (LimitState, error) {
	st, err := q.rateLimitStates(ctx, []string{key})
	if err != nil {
		return LimitState{}, err
	}
	return st[0], nil
}

// RateLimits reads every limit set on the queue and its use, in no
// particular order: one round trip per 100 keys.
func (q *Queue) RateLimits(ctx context.Context) ([]LimitState, error) {
	var all []LimitState
	var cursor uint64
	for {
		keys, next, err := q.db.LimitKeys(ctx, cursor, 100)
		if err != nil {
			return nil, err
		}
		if len(keys) > 0 {
			st, err := q.rateLimitStates(ctx, keys)
			if err != nil {
				return nil, err
			}
			all = append(all, st...)
		}
		if next == 0 {
			return all, nil
		}
		cursor = next
	}
}

func (q *Queue) rateLimitStates(ctx context.Context, keys []string) ([]LimitState, error) {
	if q.isClosed() {
		return nil, ErrClosed
	}
	now, raw, err := q.db.LimitStates(ctx, keys)
	if err != nil {
		return nil, err
	}
	us := func(v int64) time.Time {
		if v == 0 {
			return time.Time{}
		}
		return time.UnixMicro(v)
	}
	out := make([]LimitState, len(raw))
	for i, r := range raw {
		s := LimitState{Key: r.Key, Used: int(r.Used), Oldest: us(r.Oldest), Waiting: int(r.Waiting)}
		if r.N > 0 {
			s.Limit = RateLimit{N: int(r.N), Per: time.Duration(r.Per) * time.Microsecond}
			s.Room = time.UnixMicro(r.Room)
		}
		if r.LastSlot > now {
			s.LastSlot = us(r.LastSlot)
		}
		out[i] = s
	}
	return out, nil
}
