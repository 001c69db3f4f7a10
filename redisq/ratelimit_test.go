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

// enqueueAll adds items by EnqueueMany, failing the test on any error.
func enqueueAll(t *testing.T, q *Queue, items []EnqueueItem) {
	t.Helper()
	res, err := q.EnqueueMany(context.Background(), items)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
}

// rateClaimers starts four "rate" helper processes claiming from queue
// on the server at addr (see runHelper) and returns their lines.
func rateClaimers(t *testing.T, addr, queue string) <-chan string {
	lines := make(chan string, 1000)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the helpers' cleanups kill them
	for p := range 4 {
		_, sc := helperProcess(t, "rate", "REDISQ_ADDR="+addr, "REDISQ_QUEUE="+queue, "REDISQ_ME="+strconv.Itoa(p), "REDISQ_VIS=1m")
		wg.Go(func() {
			for sc.Scan() {
				lines <- sc.Text()
			}
		})
	}
	return lines
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
	enqueueAll(t, q, items)
	lines := rateClaimers(t, s.addr(), "rate-procs")
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
	// A Partitioned queue keeps a key's limits in its partition: the
	// items without a key, spread over them, cannot have one, nor an item
	// whose two keys are of different partitions.
	p := newPartitioned(t, c, "rate-bad-p", 2)
	require.ErrorContains(t, p.SetRateLimit(ctx, "", RateLimit{N: 1, Per: time.Second}), "give them a key")
	require.ErrorContains(t, p.SetConcurrencyLimit(ctx, "", 1), "give them a key")
	lk, uk := "k", "k"
	for i := 0; p.PartitionOf(uk) == p.PartitionOf(lk); i++ {
		uk = fmt.Sprint("u", i)
	}
	_, err = p.Add(ctx, EnqueueItem{ID: "x", Job: Job{LimitKey: lk, UniqueKey: uk, UniqueFor: time.Minute}})
	require.ErrorContains(t, err, "must share one")
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
			require.NoError(t, q.SetConcurrencyLimit(ctx, "k", 1))
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
	t.Logf("commands while idle for 1.5 s: %d unlimited, %d limited (a rate and a concurrency limit)", plain, limited)
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

// waitingSlots returns the rate slots of ids, failing unless each waits.
func waitingSlots(t *testing.T, q *Queue, ids ...string) []time.Time {
	t.Helper()
	var slots []time.Time
	for _, id := range ids {
		it, err := q.Get(context.Background(), id)
		require.NoError(t, err)
		require.False(t, it.RateSlot.IsZero(), "%s does not wait for a slot", id)
		slots = append(slots, it.RateSlot)
	}
	return slots
}

// Waiting items whose slots passed while no consumer claimed (busy
// workers) and whose window is full when they are claimed at last wait
// again, each in its place and Per/N after the one before, even when
// every claim takes one item: they do not all come due at one slot.
func TestRateLimitWaitAgain(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-again")
	lim := RateLimit{N: 1, Per: time.Second}
	require.NoError(t, q.SetRateLimit(ctx, "", lim))
	ids := []string{"w0", "w1", "w2", "w3", "w4"}
	for _, id := range ids {
		_, err := q.Add(ctx, EnqueueItem{ID: id, At: time.Unix(1, 0)})
		require.NoError(t, err)
	}
	ms, err := q.TakeBatch(ctx, 10)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	slots := waitingSlots(t, q, ids[1:]...)
	// Every slot passes, and w0's claim leaves the window.
	time.Sleep(time.Until(slots[3]) + 100*time.Millisecond)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "w1", m.ID)
	// Claims of one item each meet w2, w3 and w4, due, with the window
	// full (w1 was just claimed): each waits again.
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	again := waitingSlots(t, q, "w2", "w3", "w4")
	require.WithinDuration(t, m.ClaimedAt.Add(lim.Per), again[0], 2*time.Millisecond, "w2 waits for w1's claim to leave the window")
	for i := 1; i < len(again); i++ {
		require.WithinDuration(t, again[i-1].Add(lim.Per), again[i], time.Millisecond, "slots %v are not a period apart, in order", again)
	}
	st, err := q.RateLimitState(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 3, st.Waiting)
	require.WithinDuration(t, again[2], st.LastSlot, time.Millisecond)
	audit(t, q)
}

// An item that leaves the schedule while it waits for its slot (cancel,
// reschedule, upsert, a debounce that replaces it, purge) leaves its
// key's waiting items: it is no longer counted, it waits again only if it
// must, and new items do not wait behind its slot. RunNow leaves a
// waiting item in its place.
func TestRateLimitWaitingItemsLeave(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-leave")
	lim := RateLimit{N: 1, Per: time.Hour}
	require.NoError(t, q.SetRateLimit(ctx, "k", lim))
	job := Job{LimitKey: "k"}
	for i := range 6 {
		it := EnqueueItem{ID: fmt.Sprintf("w%d", i), At: time.Unix(1, 0), Job: job}
		if i == 5 {
			it.Job.UniqueKey, it.Job.UniqueFor, it.Job.Debounce = "d", time.Hour, true
		}
		_, err := q.Add(ctx, it)
		require.NoError(t, err)
	}
	ms, err := q.TakeBatch(ctx, 10)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	slots := waitingSlots(t, q, "w1", "w2", "w3", "w4", "w5")
	waiting := func(want int, last time.Time) {
		t.Helper()
		st, err := q.RateLimitState(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, want, st.Waiting)
		if last.IsZero() {
			require.True(t, st.LastSlot.IsZero(), "last slot %v", st.LastSlot)
		} else {
			require.WithinDuration(t, last, st.LastSlot, time.Millisecond)
		}
	}
	waiting(5, slots[4])

	r, err := q.RunNow(ctx, "w2")
	require.NoError(t, err)
	require.Equal(t, RunNowWaiting, r.Outcome)
	require.Equal(t, slots[1], r.Due)

	// A debounced enqueue replaces w5; the new item is not due yet.
	_, err = q.Add(ctx, EnqueueItem{ID: "w5b", At: time.Now().Add(time.Hour), Job: Job{LimitKey: "k", UniqueKey: "d", UniqueFor: time.Hour, Debounce: true}})
	require.NoError(t, err)
	waiting(4, slots[3])
	out, err := q.Cancel(ctx, "w4")
	require.NoError(t, err)
	require.Equal(t, CancelRemoved, out)
	waiting(3, slots[2])
	require.NoError(t, q.Reschedule(ctx, "w3", time.Now().Add(time.Hour)))
	res, err := q.ScheduleItem(ctx, EnqueueItem{ID: "w2", At: time.Now().Add(time.Hour), Job: job})
	require.NoError(t, err)
	require.False(t, res.Created)
	waiting(1, slots[0])
	for _, id := range []string{"w2", "w3"} {
		it, err := q.Get(ctx, id)
		require.NoError(t, err)
		require.True(t, it.RateSlot.IsZero(), "%s moved by an operator still waits for slot %v", id, it.RateSlot)
	}

	// A new item waits behind w1 only, the one item still waiting.
	_, err = q.Add(ctx, EnqueueItem{ID: "n", Job: job})
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	n := waitingSlots(t, q, "n")
	require.WithinDuration(t, slots[0].Add(lim.Per), n[0], time.Millisecond)
	waiting(2, n[0])

	_, err = q.Purge(ctx, StateScheduled)
	require.NoError(t, err)
	waiting(0, time.Time{})
	audit(t, q)
}

// A limit lowered below the claims in its window has room when enough of
// them leave it (not when the oldest does), and a new item waits until
// then.
func TestRateLimitLowered(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-lowered")
	require.NoError(t, q.SetRateLimit(ctx, "", RateLimit{N: 3, Per: time.Hour}))
	var at []time.Time
	for i := range 3 {
		_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("c%d", i)})
		require.NoError(t, err)
		m, err := q.Take(ctx)
		require.NoError(t, err)
		at = append(at, m.ClaimedAt)
		time.Sleep(20 * time.Millisecond) // claims apart, to tell them
	}
	lim := RateLimit{N: 2, Per: time.Hour}
	require.NoError(t, q.SetRateLimit(ctx, "", lim))
	st, err := q.RateLimitState(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 3, st.Used)
	// Of three claims in the window, two must leave it to leave fewer than two.
	require.WithinDuration(t, at[1].Add(lim.Per), st.Room, time.Millisecond)
	_, err = q.Add(ctx, EnqueueItem{ID: "n"})
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.WithinDuration(t, at[1].Add(lim.Per), waitingSlots(t, q, "n")[0], 2*time.Millisecond)
}

// A claim later than its item's slot moves the slot of the waiting item
// whose room it takes: that item's turn comes a period after the claim,
// not a period after the slot, so it does not come due into a full window
// and wait again (a claim for nothing). The order is kept.
func TestRateLimitSuccessorFollowsLateClaim(t *testing.T) {
	lim := RateLimit{N: 2, Per: time.Second}
	q, c, slots := fourWaiting(t, "rate-successor", lim)
	// r2 is claimed 300 ms after its slot.
	untilRedisTime(t, c, slots[0].Add(300*time.Millisecond))
	ids, ms := takeIDs(t, q, 10)
	require.Equal(t, []string{"r2"}, ids)
	after := waitingSlots(t, q, "r3", "r4", "r5")
	require.Equal(t, slots[1], after[0], "r3 takes a room that was free already")
	require.False(t, after[1].Before(ms[0].ClaimedAt.Add(lim.Per)), "r4's slot %v, before r2's claim %v + Per", after[1], ms[0].ClaimedAt)
	require.True(t, after[1].After(slots[2]), "r4 moved")
	require.False(t, after[2].Before(after[1]), "the order is kept")
	audit(t, q)
}

// A fast limit (more than 100 per second) gives its waiting items slots
// at the ends of 10 ms intervals, so that they come due and are claimed in
// groups; never earlier than one per Per/N would, and never more than N
// claims in any Per.
func TestRateLimitFastGroups(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-fast")
	lim := RateLimit{N: 200, Per: time.Second}
	require.NoError(t, q.SetRateLimit(ctx, "k", lim))
	items := make([]EnqueueItem, 500)
	for i := range items {
		items[i] = EnqueueItem{ID: fmt.Sprintf("f%03d", i), At: time.Unix(1, 0), Job: Job{LimitKey: "k"}}
	}
	_, err := q.EnqueueMany(ctx, items)
	require.NoError(t, err)
	var claimed []time.Time
	waited := 0
	for len(claimed) < len(items) {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ms, err := q.TakeBatch(tctx, 100)
		cancel()
		require.NoError(t, err)
		for _, m := range ms {
			claimed = append(claimed, m.ClaimedAt)
			if m.Due.After(time.Unix(1, 0)) {
				waited++
				require.Zero(t, m.Due.UnixMilli()%10, "%s due %v: not at a 10 ms boundary", m.ID, m.Due)
			}
		}
		require.Empty(t, errors.Join(q.AckMany(ctx, ms)...))
	}
	require.Equal(t, 300, waited)
	slices.SortFunc(claimed, func(a, b time.Time) int { return a.Compare(b) })
	for i := lim.N; i < len(claimed); i++ {
		require.GreaterOrEqual(t, claimed[i].Sub(claimed[i-lim.N]), lim.Per, "claims %d and %d within a period", i-lim.N, i)
	}
	// The limiter keeps up: the 300 that waited go one per Per/N after the
	// first period (a bound generous enough for a loaded machine).
	require.Less(t, claimed[len(claimed)-1].Sub(claimed[0]), lim.Per+300*lim.Per/time.Duration(lim.N)+time.Second)
	audit(t, q)
}

// A claim so late that its successor's room would come after the next
// waiting item's slot leaves the successor in place: the order is kept
// (the successor waits again if it must).
func TestRateLimitSuccessorKeepsOrder(t *testing.T) {
	q, c, slots := fourWaiting(t, "rate-successor-order", RateLimit{N: 2, Per: time.Second})
	// r2 is claimed alone 700 ms after its slot, more than the 500 ms
	// between slots: r4, whose room it takes, would go after r5.
	untilRedisTime(t, c, slots[0].Add(700*time.Millisecond))
	ids, _ := takeIDs(t, q, 1)
	require.Equal(t, []string{"r2"}, ids)
	after := waitingSlots(t, q, "r3", "r4", "r5")
	require.Equal(t, slots[1:], after, "moving r4 a period after the claim would put it after r5")
	audit(t, q)
}

// An item enqueued due now while its key's waiting items are still ahead
// goes straight into waiting behind them, as a claim would have put it,
// so that no claim has to find it due first: by Add and by EnqueueMany,
// one behind the other. A key with a concurrency limit too is left to the
// claim, which checks that limit first; so is an item due later.
func TestRateLimitEnqueueBehindWaiting(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "rate-enqueue")
	lim := RateLimit{N: 1, Per: time.Hour}
	require.NoError(t, q.SetRateLimit(ctx, "k", lim))
	require.NoError(t, q.SetRateLimit(ctx, "both", lim))
	require.NoError(t, q.SetConcurrencyLimit(ctx, "both", 5))
	for _, key := range []string{"k", "both"} {
		for i := range 2 {
			_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("%s%d", key, i), At: time.Unix(1, 0), Job: Job{LimitKey: key}})
			require.NoError(t, err)
		}
	}
	ids, _ := takeIDs(t, q, 10)
	require.ElementsMatch(t, []string{"k0", "both0"}, ids)
	tail := waitingSlots(t, q, "k1")[0]

	_, err := q.Add(ctx, EnqueueItem{ID: "k2", Job: Job{LimitKey: "k"}})
	require.NoError(t, err)
	res, err := q.EnqueueMany(ctx, []EnqueueItem{{ID: "k3", Job: Job{LimitKey: "k"}}, {ID: "k4", Job: Job{LimitKey: "k"}},
		{ID: "later", At: time.Now().Add(30 * time.Minute), Job: Job{LimitKey: "k"}}, {ID: "both2", Job: Job{LimitKey: "both"}}})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	slots := waitingSlots(t, q, "k2", "k3", "k4")
	require.Equal(t, []time.Time{tail.Add(lim.Per), tail.Add(2 * lim.Per), tail.Add(3 * lim.Per)}, slots, "one period apart, behind the tail, with no claim")
	for _, id := range []string{"later", "both2"} {
		it, err := q.Get(ctx, id)
		require.NoError(t, err)
		require.True(t, it.RateSlot.IsZero(), "%s waits already", id)
	}
	st, err := q.RateLimitState(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, 4, st.Waiting)
	audit(t, q)
}

// fourWaiting makes queue name with rate limit lim on key "k" and six
// items r0..r5 of the key due long ago, claims r0 and r1, and returns the
// slots of the four that wait.
func fourWaiting(t *testing.T, name string, lim RateLimit) (*Queue, *redis.Client, []time.Time) {
	t.Helper()
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, name)
	require.NoError(t, q.SetRateLimit(ctx, "k", lim))
	for i := range 6 {
		_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("r%d", i), At: time.Unix(1, 0), Job: Job{LimitKey: "k"}})
		require.NoError(t, err)
	}
	ids, _ := takeIDs(t, q, 10)
	require.Equal(t, []string{"r0", "r1"}, ids)
	return q, c, waitingSlots(t, q, "r2", "r3", "r4", "r5")
}
