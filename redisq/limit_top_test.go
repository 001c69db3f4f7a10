package redisq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// waitOn makes n items of key wait under its limit (rate 1 an hour, or a
// concurrency of 1): n+1 due items, one of which a claim takes and holds.
func waitOn(t *testing.T, q *Queue, key string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n + 1 {
		_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("%s#%d", key, i), At: time.Unix(1, 0), Job: Job{LimitKey: key}})
		require.NoError(t, err)
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := q.TakeBatch(tctx, 100)
		cancel()
		if err != nil {
			return
		}
	}
}

// TestTopRateLimits (issue 41, item 10): among 2,500 rate-limited keys,
// the busiest come first whatever their name (the exporter showed the
// first 100 by name), then idle ones by key; the totals count every key
// and the waiting items of those left out; a scan bound reads no more
// than it says and reports the rest as unread; the cost is two round
// trips per 500 keys and one per 50 returned, whatever was asked.
func TestTopRateLimits(t *testing.T) {
	s := startRedis(t, "--appendonly", "no")
	c := s.client(t)
	q := newQueue(t, c, "tenants")
	ctx := context.Background()
	const keys = 2500
	for i := range keys {
		require.NoError(t, q.SetRateLimit(ctx, fmt.Sprintf("k%04d", i), RateLimit{N: 1, Per: time.Hour}))
	}
	waitOn(t, q, "k2400", 5)
	waitOn(t, q, "k0500", 3)
	waitOn(t, q, "k1999", 3)
	waitOn(t, q, "k0007", 1)

	top, tot, err := q.TopRateLimits(ctx, 3, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"k2400", "k0500", "k1999"}, rateKeysOf(top), "the busiest, ties by key")
	require.Equal(t, []int{5, 3, 3}, []int{top[0].Waiting, top[1].Waiting, top[2].Waiting})
	require.Equal(t, RateLimit{N: 1, Per: time.Hour}, top[0].Limit)
	require.Equal(t, 1, top[0].Used, "its state is RateLimitState's")
	require.Equal(t, LimitTotals{Keys: keys, Read: keys, Waiting: 12, Omitted: keys - 3, OmittedWaiting: 1}, tot)

	// Past the keys with waiting items, the idle ones by key.
	top, _, err = q.TopRateLimits(ctx, 6, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"k2400", "k0500", "k1999", "k0007", "k0000", "k0001"}, rateKeysOf(top))

	// A bound: no more keys read than it says; the others are unread.
	top, tot, err = q.TopRateLimits(ctx, 10, 1200)
	require.NoError(t, err)
	require.Equal(t, keys, tot.Keys)
	require.Equal(t, 1200, tot.Read)
	require.Equal(t, 1200-len(top), tot.Omitted)
	require.Len(t, top, 10)

	// The cost: HSCAN pages of 500 (at least 500 keys each but the last,
	// which may take one more, empty), a script per page with keys, one
	// for the states of each 50 keys returned.
	for _, c2 := range []struct{ n, scan, pages, states int }{{100, 0, 5, 2}, {120, 0, 5, 3}, {10, 1500, 3, 1}} {
		require.NoError(t, c.ConfigResetStat(ctx).Err())
		_, _, err := q.TopRateLimits(ctx, c2.n, c2.scan)
		require.NoError(t, err)
		scans := commandCalls(t, c, "hscan")
		require.LessOrEqual(t, scans, int64(c2.pages+1), "HSCAN pages for %+v", c2)
		require.GreaterOrEqual(t, scans, int64(c2.pages), "HSCAN pages for %+v", c2)
		scripts := commandCalls(t, c, "evalsha")
		require.LessOrEqual(t, scripts, int64(c2.pages+1+c2.states), "scripts for %+v", c2)
		require.GreaterOrEqual(t, scripts, int64(c2.pages+c2.states), "scripts for %+v", c2)
	}

	// Bad bounds are errors; a closed queue says so.
	_, _, err = q.TopRateLimits(ctx, 0, 0)
	require.ErrorContains(t, err, "n must be at least 1")
	_, _, err = q.TopRateLimits(ctx, 1, -1)
	require.ErrorContains(t, err, "the scan bound 0 (none) or more")
	closed := newQueue(t, c, "tenants")
	require.NoError(t, closed.Close())
	_, _, err = closed.TopRateLimits(ctx, 1, 0)
	require.ErrorIs(t, err, ErrClosed)
}

func rateKeysOf(st []LimitState) []string {
	var ks []string
	for _, s := range st {
		ks = append(ks, s.Key)
	}
	return ks
}

// TestTopConcurrencyLimits: the keys with the most items waiting for a
// place first, with ConcurrencyLimitState's state, and the totals; a
// queue without concurrency limits has none (and a small limits hash,
// which HSCAN returns whole, is read in one page).
func TestTopConcurrencyLimits(t *testing.T) {
	s := startRedis(t, "--appendonly", "no")
	c := s.client(t)
	q := newQueue(t, c, "tenants")
	ctx := context.Background()
	top, tot, err := q.TopConcurrencyLimits(ctx, 10, 0)
	require.NoError(t, err)
	require.Empty(t, top)
	require.Equal(t, LimitTotals{}, tot)
	for i := range 50 {
		require.NoError(t, q.SetConcurrencyLimit(ctx, fmt.Sprintf("t%02d", i), 1))
	}
	waitOn(t, q, "t40", 4)
	waitOn(t, q, "t03", 2)
	top, tot, err = q.TopConcurrencyLimits(ctx, 2, 0)
	require.NoError(t, err)
	require.Len(t, top, 2)
	require.Equal(t, ConcurrencyState{Key: "t40", Limit: 1, Leased: 1, Waiting: 4}, top[0])
	require.Equal(t, "t03", top[1].Key)
	require.Equal(t, LimitTotals{Keys: 50, Read: 50, Waiting: 6, Omitted: 48, OmittedWaiting: 0}, tot)
	// A bound under the page HSCAN returns whole: the keys past it are
	// not read.
	_, tot, err = q.TopConcurrencyLimits(ctx, 2, 20)
	require.NoError(t, err)
	require.Equal(t, 50, tot.Keys)
	require.Equal(t, 20, tot.Read)
}

// TestTopLimitsACL: the documented reader's rights are enough (HSCAN,
// EVALSHA, HGET, ZCARD and the states' reads).
func TestTopLimitsACL(t *testing.T) {
	s := startRedis(t, "--appendonly", "no")
	c := s.client(t)
	q := newQueue(t, c, "tenants")
	ctx := context.Background()
	require.NoError(t, q.SetRateLimit(ctx, "a", RateLimit{N: 1, Per: time.Hour}))
	require.NoError(t, q.SetConcurrencyLimit(ctx, "b", 1))
	require.NoError(t, c.Do(ctx, "ACL", "SETUSER", "topreader", "on", ">pw", "~{dq:*}:*", "~{dq}:*", "-@all",
		"+evalsha", "+eval", "+time", "+hget", "+hmget", "+hscan", "+zcard", "+zcount", "+zrange", "+exists", "+type").Err())
	rc := redis.NewClient(&redis.Options{Addr: s.addr(), Username: "topreader", Password: "pw"})
	t.Cleanup(func() { _ = rc.Close() })
	rq := newQueue(t, rc, "tenants", WithEvictionCheck(EvictionIgnore), WithoutRegistry())
	top, _, err := rq.TopRateLimits(ctx, 5, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, rateKeysOf(top))
	ct, _, err := rq.TopConcurrencyLimits(ctx, 5, 0)
	require.NoError(t, err)
	require.Len(t, ct, 1)
}
