package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// claim is one line of the rate helpers' ledger.
type claim struct {
	id, key string
	at      int64 // ClaimedAt, ms of Redis TIME
}

// requireWithinLimit fails unless no l.N+1 of claims fall in one window
// of l.Per: in time order, claims i and i+N are at least Per apart. The
// ledger is ClaimedAt in whole ms, TIME rounded down, so that holds
// exactly when the claims' µs are Per apart.
func requireWithinLimit(t *testing.T, claims []claim, l RateLimit) {
	t.Helper()
	at := make([]int64, len(claims))
	for i, c := range claims {
		at[i] = c.at
	}
	slices.Sort(at)
	for i := 0; i+l.N < len(at); i++ {
		require.GreaterOrEqual(t, at[i+l.N]-at[i], l.Per.Milliseconds(),
			"claims %d and %d (of %d) are %d ms apart, under %v", i, i+l.N, len(at), at[i+l.N]-at[i], l)
	}
}

// A limited key's due items are claimed at the limit's rate and no
// faster, by several OS processes claiming by both scripts. Items of an
// unlimited key, and of a key whose limit is used up for an hour, are not
// held behind them: every item that may go goes.
func TestRateLimitAcrossProcesses(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-procs")
	lim, hourly := RateLimit{N: 5, Per: 400 * time.Millisecond}, RateLimit{N: 2, Per: time.Hour}
	require.NoError(t, q.SetRateLimit(ctx, "tenant", lim))
	require.NoError(t, q.SetRateLimit(ctx, "full", hourly))
	count := map[string]int{"tenant": 40, "full": 10, "free": 40}
	var items []EnqueueItem
	for _, key := range []string{"full", "tenant", "free"} { // the full key's first
		for i := range count[key] {
			items = append(items, EnqueueItem{ID: fmt.Sprintf("%s%d", key, i), At: time.Unix(1, 0), Job: Job{LimitKey: key}})
		}
	}
	res, err := q.EnqueueMany(ctx, items)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	lines := make(chan string, 1000)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the helpers' cleanups kill them
	for p := range 4 {
		_, sc := helperProcess(t, "rate", "REDISQ_ADDR="+s.addr(), "REDISQ_QUEUE=rate-procs", "REDISQ_ME="+strconv.Itoa(p), "REDISQ_VIS=1m")
		wg.Go(func() {
			for sc.Scan() {
				lines <- sc.Text()
			}
		})
	}
	by := map[string][]claim{}
	seen := map[string]bool{}
	timeout := time.After(2 * time.Minute)
	for len(by["tenant"]) < count["tenant"] || len(by["free"]) < count["free"] || len(by["full"]) < hourly.N {
		select {
		case l := <-lines:
			f := fields(l)
			require.Len(t, f, 4, "helper: %q", l)
			require.Equal(t, "CLAIM", f[0], "helper: %q", l)
			ms, err := strconv.ParseInt(f[2], 10, 64)
			require.NoError(t, err)
			require.False(t, seen[f[1]], "%s claimed twice", f[1])
			seen[f[1]] = true
			by[f[3]] = append(by[f[3]], claim{id: f[1], at: ms, key: f[3]})
		case <-timeout:
			t.Fatalf("claimed tenant %d of %d, free %d of %d, full %d of %d", len(by["tenant"]), count["tenant"],
				len(by["free"]), count["free"], len(by["full"]), hourly.N)
		}
	}
	requireWithinLimit(t, by["tenant"], lim)
	// The limiter keeps up: 40 items at 5 per 400 ms take 7 windows after
	// the first claim (a bound generous enough for a loaded machine; the
	// slots themselves are checked exactly in TestRateLimitWaitingItems).
	first, last := by["tenant"][0].at, by["tenant"][0].at
	for _, c := range by["tenant"] {
		first, last = min(first, c.at), max(last, c.at)
	}
	require.GreaterOrEqual(t, last-first, int64(7*400))
	require.Less(t, last-first, int64(7*400+10000), "the limited key fell behind its rate")
	st, err := q.RateLimitState(ctx, "full")
	require.NoError(t, err)
	require.Equal(t, hourly, st.Limit)
	require.Equal(t, hourly.N, st.Used)
	require.Equal(t, count["full"]-hourly.N, st.Waiting)
	stats, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, count["full"]-hourly.N, stats.Scheduled, "only the full key's items wait")
	select {
	case l := <-lines:
		t.Fatalf("claimed over the limit: %s", l)
	default:
	}
	audit(t, q)
}

// Over the limit, items wait scheduled at slots a period apart (for N =
// 1), in their order, shown by Get and RateLimitState; a new limit lets
// them go at once.
func TestRateLimitWaitingItems(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-wait")
	lim := RateLimit{N: 1, Per: time.Hour}
	require.NoError(t, q.SetRateLimit(ctx, "", lim))
	for i := range 4 {
		_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("w%d", i), At: time.Unix(1, 0)})
		require.NoError(t, err)
	}
	first, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "w0", first.ID)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a second item was claimed within the hour")
	var slots []time.Time
	for i := 1; i < 4; i++ {
		it, err := q.Get(ctx, fmt.Sprintf("w%d", i))
		require.NoError(t, err)
		require.Equal(t, StateScheduled, it.State)
		require.False(t, it.RateSlot.IsZero(), "w%d does not say it waits", i)
		require.Equal(t, time.Unix(1, 0), it.Due, "the due time it was enqueued with is kept")
		slots = append(slots, it.RateSlot)
	}
	// w1 waits for w0's claim to leave the window; each next one an
	// hour after the previous.
	require.WithinDuration(t, first.ClaimedAt.Add(time.Hour), slots[0], 2*time.Millisecond)
	require.WithinDuration(t, slots[0].Add(time.Hour), slots[1], time.Millisecond)
	require.WithinDuration(t, slots[1].Add(time.Hour), slots[2], time.Millisecond)
	st, err := q.RateLimitState(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 1, st.Used)
	require.Equal(t, 3, st.Waiting)
	require.WithinDuration(t, slots[0], st.Room, 2*time.Millisecond)
	require.WithinDuration(t, slots[2], st.LastSlot, time.Millisecond)
	all, err := q.RateLimits(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	stats, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, stats.RateLimits)
	require.Zero(t, stats.DueBacklog, "a waiting item is not due")
	require.Equal(t, "", all[0].Key)
	require.NoError(t, first.Ack(ctx))

	// Two per hour: w1 goes now (w0 used one), the others wait again.
	require.NoError(t, q.SetRateLimit(ctx, "", RateLimit{N: 2, Per: time.Hour}))
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "w1", m.ID, "the waiting items kept their order")
	tctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// No limit: the rest go at once, in order.
	require.NoError(t, q.SetRateLimit(ctx, "", RateLimit{}))
	ms, err := q.TakeBatch(ctx, 10)
	require.NoError(t, err)
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
		require.True(t, m.Due.Before(redisNow(t, c)))
	}
	require.Equal(t, []string{"w2", "w3"}, ids)
	all, err = q.RateLimits(ctx)
	require.NoError(t, err)
	require.Empty(t, all)
	stats, err = q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, stats.RateLimits)
	audit(t, q)
}

// SetRateLimit and LimitKey refuse what cannot be a limit.
func TestRateLimitRefused(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-bad")
	for _, l := range []RateLimit{{N: 0, Per: time.Second}, {N: 1}, {N: -1, Per: time.Second}, {N: 1, Per: -time.Second}, {N: MaxRateN + 1, Per: time.Second}, {N: 1, Per: MaxRatePer + 1}} {
		err := q.SetRateLimit(ctx, "k", l)
		require.ErrorContains(t, err, "redisq: SetRateLimit", "%+v", l)
	}
	require.ErrorContains(t, q.SetRateLimit(ctx, strings.Repeat("k", MaxLimitKeyLen+1), RateLimit{N: 1, Per: time.Second}), "MaxLimitKeyLen")
	_, err := q.Add(ctx, EnqueueItem{ID: "x", Job: Job{LimitKey: strings.Repeat("k", MaxLimitKeyLen+1)}})
	require.ErrorContains(t, err, "MaxLimitKeyLen")
	p := newPartitioned(t, c, "rate-bad-p", 2)
	_, err = p.Add(ctx, EnqueueItem{ID: "x", Job: Job{LimitKey: "k"}})
	require.ErrorContains(t, err, "does not take LimitKey")
	// A far-future key name with any bytes is a key like any other.
	odd := "\xff\x00‮tenant"
	require.NoError(t, q.SetRateLimit(ctx, odd, RateLimit{N: 3, Per: MaxRatePer}))
	st, err := q.RateLimitState(ctx, odd)
	require.NoError(t, err)
	require.Equal(t, RateLimit{N: 3, Per: MaxRatePer}, st.Limit)
}

// On a Cluster, through a move of the queue's slot, the limit holds: its
// log, waiting items and limits move with the queue.
func TestClusterRateLimit(t *testing.T) {
	noLeaks(t)
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "crate")
	lim := RateLimit{N: 3, Per: 300 * time.Millisecond}
	require.NoError(t, q.SetRateLimit(ctx, "k", lim))
	const n = 15
	for i := range n {
		_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("i%d", i), Job: Job{LimitKey: "k"}})
		require.NoError(t, err)
	}
	var got []claim
	for len(got) < n {
		ms, err := q.TakeBatch(ctx, 10)
		require.NoError(t, err)
		for _, m := range ms {
			got = append(got, claim{id: m.ID, at: m.ClaimedAt.UnixMilli()})
		}
		require.Empty(t, errors.Join(q.AckMany(ctx, ms)...))
		if len(got) >= 4 && len(got)-len(ms) < 4 {
			src, err := c.MasterOf(ctx, q.db.Keys.Sched)
			require.NoError(t, err)
			for _, s := range c.Servers[:3] {
				if s != src {
					migrateSlot(t, c, q.db.Keys.Sched, s)
					break
				}
			}
		}
	}
	requireWithinLimit(t, got, lim)
	st, err := q.RateLimitState(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, lim, st.Limit)
	audit(t, q)
}

// An idle limited queue costs the server no more commands than an
// unlimited one: its consumers wait on the marker alike, and a limit adds
// nothing to a claim that finds nothing due.
func TestRateLimitIdleCost(t *testing.T) {
	ctx := context.Background()
	idle := func(limited bool) int64 {
		s := startRedis(t)
		c := s.client(t)
		q := newQueue(t, c, "idle")
		if limited {
			require.NoError(t, q.SetRateLimit(ctx, "k", RateLimit{N: 1, Per: time.Hour}))
		}
		_, err := q.Add(ctx, EnqueueItem{ID: "later", After: time.Hour, Job: Job{LimitKey: "k"}})
		require.NoError(t, err)
		tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err = q.Take(tctx) // warm up: scripts loaded, the waiter blocked once
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		before := commandsProcessed(t, c)
		tctx, cancel = context.WithTimeout(ctx, 1500*time.Millisecond)
		_, err = q.Take(tctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		return commandsProcessed(t, c) - before - 1 // the INFO that read it
	}
	plain, limited := idle(false), idle(true)
	t.Logf("commands while idle for 1.5 s: %d unlimited, %d limited", plain, limited)
	require.LessOrEqual(t, limited, plain)
}

// commandsProcessed is the server's total_commands_processed.
func commandsProcessed(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	require.NoError(t, err)
	for _, l := range splitLines(info) {
		if v, ok := strings.CutPrefix(l, "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no total_commands_processed in INFO stats")
	return 0
}
