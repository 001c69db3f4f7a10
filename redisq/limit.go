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
// the items without one, not the whole queue: that is SetQueueRateLimit),
// for every process that uses the queue: at most
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
	return allLimits(ctx, q.db.LimitKeys, q.rateLimitStates)
}

// allLimits reads the state of every key that scan pages through (a
// limits hash, 100 keys a page) with read.
func allLimits[S any](ctx context.Context, scan func(context.Context, uint64, int64) ([]string, uint64, error),
	read func(context.Context, []string) ([]S, error)) ([]S, error) {
	var all []S
	var cursor uint64
	for {
		keys, next, err := scan(ctx, cursor, 100)
		if err != nil {
			return nil, err
		}
		if len(keys) > 0 {
			st, err := read(ctx, keys)
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

// MaxConcurrency is the largest concurrency limit.
const MaxConcurrency = 1 << 30

// ConcurrencyState is a limit key's concurrency limit and its use, as
// Redis saw it when it was read.
type ConcurrencyState struct {
	Key   string
	Limit int // 0: the key has no concurrency limit (or Removing)
	// Removing is set while SetConcurrencyLimit(ctx, key, 0) lets the
	// waiting items go: if it is set with no such call running, one was
	// interrupted, and calling it again ends the removal.
	Removing bool
	// Leased counts the key's items that hold a place: leased since the
	// limit was set, their leases not expired. Granted counts the items
	// given a place as one freed, due and not yet leased (a place taken
	// too). Waiting counts the items that a claim found with every place
	// taken and that wait for one.
	Leased, Granted, Waiting int
}

// SetConcurrencyLimit sets the concurrency limit of the items whose
// LimitKey is key ("": the items without one), for every process that uses
// the queue: at most k of them are leased at once. k 0 removes the limit.
//
// A claim leases an item of the key only while fewer than k of the key's
// items hold a place; an item holds one from its claim until its lease
// ends (Ack, Nack, DeadLetter, a release, or its lease expiring: a
// consumer that dies holding an item frees its place when the lease
// expires, and Extend keeps it). An item due while every place is taken
// is not leased: it waits in Redis, scheduled but never due on its own,
// and when a place frees the first waiting item is made due and claimed
// like any due item (no process polls). Waiting items keep their order,
// and a new item of the key waits behind them. Items of other keys are
// not held up: the claim that makes an item wait leases the next due one.
// A key may have a rate limit as well (SetRateLimit): an item is leased
// when both allow it.
//
// Raising the limit makes as many waiting items due as there are new
// places (up to 1,000 at once; the others as claims go on); lowering it
// leaves the items leased as they are (no new one is leased until fewer
// than k are); removing it lets every waiting item go (one round trip per
// 100 of them). An error during a removal leaves the key listed, with
// ConcurrencyState.Removing set, until a removal ends: call it again. Items
// leased before the limit was set, or while it was being removed, hold no
// place.
func (q *Queue) SetConcurrencyLimit(ctx context.Context, key string, k int) error {
	if len(key) > MaxLimitKeyLen {
		return fmt.Errorf("redisq: a limit key of %d bytes, over MaxLimitKeyLen (%d)", len(key), MaxLimitKeyLen)
	}
	if k < 0 || k > MaxConcurrency {
		return fmt.Errorf("redisq: SetConcurrencyLimit(%q, %d): k must be 0 (no limit) to %d", key, k, MaxConcurrency)
	}
	if q.isClosed() {
		return ErrClosed
	}
	return q.db.SetConcurrencyLimit(ctx, key, int64(k))
}

// ConcurrencyLimitState reads key's concurrency limit and its use. One
// round trip.
func (q *Queue) ConcurrencyLimitState(ctx context.Context, key string) (ConcurrencyState, error) {
	st, err := q.concStates(ctx, []string{key})
	if err != nil {
		return ConcurrencyState{}, err
	}
	return st[0], nil
}

// ConcurrencyLimits reads every concurrency limit set on the queue and its
// use, in no particular order: one round trip per 100 keys.
func (q *Queue) ConcurrencyLimits(ctx context.Context) ([]ConcurrencyState, error) {
	return allLimits(ctx, q.db.ConcKeys, q.concStates)
}

func (q *Queue) concStates(ctx context.Context, keys []string) ([]ConcurrencyState, error) {
	if q.isClosed() {
		return nil, ErrClosed
	}
	raw, err := q.db.ConcStates(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]ConcurrencyState, len(raw))
	for i, r := range raw {
		out[i] = ConcurrencyState{Key: r.Key, Limit: int(r.K), Removing: r.Removing, Leased: int(r.Leased), Granted: int(r.Granted),
			Waiting: int(r.Waiting)}
	}
	return out, nil
}
