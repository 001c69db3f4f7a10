package redisq

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// A Partitioned queue's limits and uniqueness windows. Every item of a
// limit key or a unique key lives in that key's partition (see Add), so a
// key's limits and its window are kept by that partition alone, exactly as
// a Queue keeps them: each call of one key is the partition's call. The
// items without a limit key are spread over the partitions by id, where
// one limit cannot hold them all: the key "" is refused, and so is a limit
// of the whole queue (SetQueueRateLimit: set one on each partition, for a
// limit per partition).

// errNoKey is the error of a limit of the key "" on a Partitioned queue.
func (p *Partitioned) errNoKey(what string) error {
	return fmt.Errorf("redisq: %s of %q: a Partitioned queue keeps a limit in its key's partition, and the items without a limit key are spread over its partitions: give them a key", what, p.name)
}

// SetRateLimit is Queue.SetRateLimit on the partition of key, which holds
// every item of the key. The key "" is refused.
func (p *Partitioned) SetRateLimit(ctx context.Context, key string, l RateLimit) error {
	if key == "" {
		return p.errNoKey("SetRateLimit")
	}
	return p.Route(key).SetRateLimit(ctx, key, l)
}

// RateLimitState is Queue.RateLimitState on the partition of key.
func (p *Partitioned) RateLimitState(ctx context.Context, key string) (LimitState, error) {
	return p.Route(key).RateLimitState(ctx, key)
}

// RateLimits is Queue.RateLimits of every partition (concurrently), in no
// particular order.
func (p *Partitioned) RateLimits(ctx context.Context) ([]LimitState, error) {
	return gather(p, func(q *Queue) ([]LimitState, error) { return q.RateLimits(ctx) })
}

// TopRateLimits is Queue.TopRateLimits across the partitions: the n
// busiest keys of them all, scan bounding each partition's count (its
// cost, per partition, that of the Queue's, the partitions concurrently).
func (p *Partitioned) TopRateLimits(ctx context.Context, n, scan int) ([]LimitState, LimitTotals, error) {
	return topAcross(p, n, func(q *Queue) ([]LimitState, LimitTotals, error) { return q.TopRateLimits(ctx, n, scan) },
		func(s LimitState) (string, int) { return s.Key, s.Waiting })
}

// SetConcurrencyLimit is Queue.SetConcurrencyLimit on the partition of
// key, which holds every item of the key. The key "" is refused.
func (p *Partitioned) SetConcurrencyLimit(ctx context.Context, key string, k int) error {
	if key == "" {
		return p.errNoKey("SetConcurrencyLimit")
	}
	return p.Route(key).SetConcurrencyLimit(ctx, key, k)
}

// ConcurrencyLimitState is Queue.ConcurrencyLimitState on the partition
// of key.
func (p *Partitioned) ConcurrencyLimitState(ctx context.Context, key string) (ConcurrencyState, error) {
	return p.Route(key).ConcurrencyLimitState(ctx, key)
}

// ConcurrencyLimits is Queue.ConcurrencyLimits of every partition
// (concurrently), in no particular order.
func (p *Partitioned) ConcurrencyLimits(ctx context.Context) ([]ConcurrencyState, error) {
	return gather(p, func(q *Queue) ([]ConcurrencyState, error) { return q.ConcurrencyLimits(ctx) })
}

// TopConcurrencyLimits is TopRateLimits for the concurrency limits.
func (p *Partitioned) TopConcurrencyLimits(ctx context.Context, n, scan int) ([]ConcurrencyState, LimitTotals, error) {
	return topAcross(p, n, func(q *Queue) ([]ConcurrencyState, LimitTotals, error) { return q.TopConcurrencyLimits(ctx, n, scan) },
		func(s ConcurrencyState) (string, int) { return s.Key, s.Waiting })
}

// UniqueWindow is Queue.UniqueWindow on the partition of key, which keeps
// its window.
func (p *Partitioned) UniqueWindow(ctx context.Context, key string) (UniqueWindow, error) {
	return p.Route(key).UniqueWindow(ctx, key)
}

// ReleaseUnique is Queue.ReleaseUnique on the partition of key.
func (p *Partitioned) ReleaseUnique(ctx context.Context, key string) (bool, error) {
	return p.Route(key).ReleaseUnique(ctx, key)
}

// gather runs read on every partition concurrently and returns all it
// read, in partition order.
func gather[T any](p *Partitioned, read func(q *Queue) ([]T, error)) ([]T, error) {
	parts := make([][]T, len(p.parts))
	err := p.each(func(i int, q *Queue) error {
		var err error
		parts[i], err = read(q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// topAcross merges the n busiest of every partition's top (by waiting
// items, then by key) into the n busiest of the queue, and sums their
// totals.
func topAcross[S any](p *Partitioned, n int, top func(q *Queue) ([]S, LimitTotals, error), of func(S) (string, int)) ([]S, LimitTotals, error) {
	var (
		mu  sync.Mutex
		all []S
		tot LimitTotals
	)
	err := p.each(func(_ int, q *Queue) error {
		ss, t, err := top(q)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		all = append(all, ss...)
		tot.Keys += t.Keys
		tot.Read += t.Read
		tot.Waiting += t.Waiting
		tot.Omitted += t.Omitted
		tot.OmittedWaiting += t.OmittedWaiting
		return nil
	})
	if err != nil {
		return nil, LimitTotals{}, err
	}
	slices.SortFunc(all, func(a, b S) int {
		ka, wa := of(a)
		kb, wb := of(b)
		return cmp.Or(cmp.Compare(wb, wa), cmp.Compare(ka, kb))
	})
	if len(all) > n {
		for _, s := range all[n:] {
			_, w := of(s)
			tot.Omitted++
			tot.OmittedWaiting += w
		}
		all = all[:n]
	}
	return all, tot, nil
}
