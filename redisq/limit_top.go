package redisq

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// The busiest limit keys. A queue with a limit per tenant may have
// thousands of keys, and the ones an operator needs are those with items
// waiting: TopRateLimits and TopConcurrencyLimits find them without
// reading every key's whole state. They count the waiting items of each
// key, a page of keys at a time (an HSCAN of the limits, then one ZCARD
// per waiting zset), keep the n keys with the most, and read the full
// state of those n only.

// LimitTotals sums up the keys of one kind of limit that a TopRateLimits
// or TopConcurrencyLimits call counted, and says what it left out.
type LimitTotals struct {
	// Keys counts the limits of the kind set on the queue. Read counts
	// the keys whose waiting items were counted: all of them (Read ==
	// Keys) unless the call's scan bound stopped it, in which case Keys
	// - Read keys were not looked at.
	Keys, Read int
	// Waiting is the waiting items of the keys read.
	Waiting int
	// Omitted counts the keys read that the call did not return (past
	// the n busiest), and OmittedWaiting their waiting items.
	Omitted, OmittedWaiting int
}

// TopRateLimits returns the state of the n busiest rate-limited keys of
// the queue, as RateLimitState reads it: the keys with the most items
// waiting for a slot first, ties (idle keys among them) by key, so that
// a queue of at most n keys gets every one. It counts the waiting items
// of the keys up to scan of them (0: every key; the order is the limits
// hash's), and returns their totals: how many keys are set, read and
// left out, and the items they hold.
//
// Its cost is bounded by scan, not by the number of keys: two round
// trips per 500 keys read, one for their names (an HSCAN page) and one
// for their counts (a script of one ZCARD per waiting zset), then one per
// 50 keys returned, for their state; no call takes Redis 1 ms. It reads
// no item. The counts and the states are read at different moments: the
// n keys are those with the most waiting items when they were counted,
// and are returned in the order of their state's Waiting. Keys added or
// removed meanwhile may be counted or not. It is safe for concurrent
// use, as every Queue method is.
func (q *Queue) TopRateLimits(ctx context.Context, n, scan int) ([]LimitState, LimitTotals, error) {
	return topLimits(ctx, q, rdb.RateKind, q.db.LimitKeys, q.rateLimitStates,
		func(s LimitState) (string, int) { return s.Key, s.Waiting }, n, scan)
}

// TopConcurrencyLimits is TopRateLimits for the concurrency limits: the
// state of the n keys with the most items waiting for a place, as
// ConcurrencyLimitState reads it, at the same cost.
func (q *Queue) TopConcurrencyLimits(ctx context.Context, n, scan int) ([]ConcurrencyState, LimitTotals, error) {
	return topLimits(ctx, q, rdb.ConcKind, q.db.ConcKeys, q.concStates,
		func(s ConcurrencyState) (string, int) { return s.Key, s.Waiting }, n, scan)
}

// keyCount is a limit key and its waiting items as counted.
type keyCount struct {
	key     string
	waiting int
}

// busier orders keys by waiting items, most first, then by key.
func busier(a, b keyCount) int {
	if a.waiting != b.waiting {
		return cmp.Compare(b.waiting, a.waiting)
	}
	return cmp.Compare(a.key, b.key)
}

// leastBusy is a heap of keys whose root is the least busy (see busier):
// the one to drop when a busier key comes.
type leastBusy []keyCount

func (h leastBusy) Len() int           { return len(h) }
func (h leastBusy) Less(i, j int) bool { return busier(h[i], h[j]) > 0 }
func (h leastBusy) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *leastBusy) Push(x any)        { *h = append(*h, x.(keyCount)) }
func (h *leastBusy) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// topLimits finds the n busiest keys of kind among the first scan (0:
// all) that scanPage pages through, then reads their state with read.
func topLimits[S any](ctx context.Context, q *Queue, kind rdb.LimitKind,
	scanPage func(context.Context, uint64, int64) ([]string, uint64, error),
	read func(context.Context, []string) ([]S, error), of func(S) (string, int), n, scan int) ([]S, LimitTotals, error) {
	if n < 1 || scan < 0 {
		return nil, LimitTotals{}, fmt.Errorf("redisq: the busiest %d of %d limit keys: n must be at least 1 and the scan bound 0 (none) or more", n, scan)
	}
	if q.isClosed() {
		return nil, LimitTotals{}, ErrClosed
	}
	var tot LimitTotals
	seen := map[string]bool{} // HSCAN may return a key twice
	top := &leastBusy{}
	complete := false // the scan went through the whole hash
	for cursor := uint64(0); !complete && (scan == 0 || tot.Read < scan); {
		page := rdb.TopPage
		if scan > 0 {
			page = min(page, scan-tot.Read)
		}
		keys, next, err := scanPage(ctx, cursor, int64(page))
		if err != nil {
			return nil, LimitTotals{}, err
		}
		cursor, complete = next, next == 0
		fresh := keys[:0]
		for _, k := range keys {
			switch {
			case seen[k]:
			case scan > 0 && tot.Read+len(fresh) >= scan:
				complete = false // HSCAN gave more than asked: this one is past the bound
			default:
				seen[k] = true
				fresh = append(fresh, k)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		set, waiting, err := q.db.LimitWaiting(ctx, kind, fresh)
		if err != nil {
			return nil, LimitTotals{}, err
		}
		for i, k := range fresh {
			tot.Read++
			tot.Waiting += int(waiting[i])
			heap.Push(top, keyCount{k, int(waiting[i])})
			if top.Len() > n {
				heap.Pop(top)
			}
		}
		tot.Keys = int(set)
	}
	if complete || tot.Keys < tot.Read {
		// Every key was read; a limit set or removed meanwhile may have
		// moved the count.
		tot.Keys = tot.Read
	}
	keys := make([]string, top.Len())
	tot.Omitted, tot.OmittedWaiting = tot.Read-top.Len(), tot.Waiting
	for i, kc := range *top {
		keys[i] = kc.key
		tot.OmittedWaiting -= kc.waiting
	}
	var out []S
	for lo := 0; lo < len(keys); lo += rdb.TopStates {
		st, err := read(ctx, keys[lo:min(lo+rdb.TopStates, len(keys))])
		if err != nil {
			return nil, LimitTotals{}, err
		}
		out = append(out, st...)
	}
	slices.SortFunc(out, func(a, b S) int {
		ka, wa := of(a)
		kb, wb := of(b)
		return busier(keyCount{ka, wa}, keyCount{kb, wb})
	})
	return out, tot, nil
}
