package redisq

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The queue's own limit counts every claim whatever the items' limit keys:
// a claim over it leases nothing more and leaves the due items due, in
// their order; the consumer waits for the window's room without polling;
// a Snooze gives its claim back; removing the limit wakes the waiting
// consumer at once.
func TestQueueRateLimit(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	sc := newScriptCounter()
	c.AddHook(sc)
	ctx := context.Background()
	q := newQueue(t, c, "qrate", WithWakeCap(time.Minute))
	lim := RateLimit{N: 2, Per: time.Hour}
	require.NoError(t, q.SetQueueRateLimit(ctx, lim))
	require.NoError(t, q.SetRateLimit(ctx, "b", RateLimit{N: 100, Per: time.Hour}), "a key's limit beside it")
	var items []EnqueueItem
	for i, key := range []string{"a", "b", "", "a", "b"} {
		items = append(items, EnqueueItem{ID: fmt.Sprintf("i%d", i), At: time.Unix(1, 0), Job: Job{LimitKey: key}})
	}
	enqueueAll(t, q, items)
	got, ms := takeIDs(t, q, 10)
	require.Equal(t, []string{"i0", "i1"}, got, "N of the queue, in order, whatever their keys")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, lim, st.QueueRateLimit)
	require.EqualValues(t, 3, st.DueBacklog, "the others stay due")
	ls, err := q.QueueRateLimit(ctx)
	require.NoError(t, err)
	require.Equal(t, lim, ls.Limit)
	require.Equal(t, 2, ls.Used)
	require.False(t, ls.Room.Before(ls.Oldest.Add(time.Hour)), "room %v, oldest %v", ls.Room, ls.Oldest)

	// A Take waits for the room, an hour away: one claim, then nothing
	// until it gives up.
	before := sc.snapshot()
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	d := sc.snapshot().minus(before)
	require.LessOrEqual(t, d.calls["claim"], int64(2), "a waiting consumer polls: %v", d.calls)

	// A snoozed claim does not count.
	_, err = ms[0].Snooze(ctx, time.Hour)
	require.NoError(t, err)
	ls, err = q.QueueRateLimit(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, ls.Used, "the snoozed claim is out of the log")
	got, ms2 := takeIDs(t, q, 10)
	require.Equal(t, []string{"i2"}, got, "the snooze gave its claim back")

	// Removing the limit wakes a consumer waiting for the room.
	taken := make(chan []*Message, 1)
	go func() {
		ms, err := q.TakeBatch(ctx, 10)
		if err != nil {
			t.Error(err)
		}
		taken <- ms
	}()
	eventually(t, 10*time.Second, "the consumer waits", func() bool { return blockedTakes(t, q) >= 1 })
	require.NoError(t, q.SetQueueRateLimit(ctx, RateLimit{}))
	select {
	case ms3 := <-taken:
		require.Equal(t, []string{"i3", "i4"}, idsOf(ms3))
		require.Empty(t, errsOf(q.AckMany(ctx, append(append(ms[1:], ms2...), ms3...))))
	case <-time.After(10 * time.Second):
		t.Fatal("removing the limit left the consumer waiting")
	}
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.QueueRateLimit)
	ls, err = q.QueueRateLimit(ctx)
	require.NoError(t, err)
	require.Zero(t, ls.Limit)
	require.Error(t, q.SetQueueRateLimit(ctx, RateLimit{N: 1}), "no Per")
	audit(t, q)
}

// Four OS processes claiming by both claim scripts, items of several
// keys: in the ledger of claims, by the Redis clock, no window of Per
// holds more than N, the consumers keep up with the limit, and every item
// is claimed once.
func TestQueueRateLimitAcrossProcesses(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "qrate-procs")
	lim := RateLimit{N: 5, Per: 400 * time.Millisecond}
	require.NoError(t, q.SetQueueRateLimit(ctx, lim))
	const n = 40
	var items []EnqueueItem
	for i := range n {
		items = append(items, EnqueueItem{ID: fmt.Sprintf("i%d", i), At: time.Unix(1, 0), Job: Job{LimitKey: []string{"a", "b", ""}[i%3]}})
	}
	enqueueAll(t, q, items)
	lines := rateClaimers(t, s.addr(), "qrate-procs")
	var all []claim
	seen := map[string]bool{}
	timeout := time.After(2 * time.Minute)
	for len(all) < n {
		select {
		case l := <-lines:
			f := fields(l)
			require.GreaterOrEqual(t, len(f), 3, "helper: %q", l) // the key "" leaves no 4th
			require.Equal(t, "CLAIM", f[0], "helper: %q", l)
			ms, err := strconv.ParseInt(f[2], 10, 64)
			require.NoError(t, err)
			require.False(t, seen[f[1]], "%s claimed twice", f[1])
			seen[f[1]] = true
			all = append(all, claim{id: f[1], at: ms})
		case <-timeout:
			t.Fatalf("claimed %d of %d", len(all), n)
		}
	}
	requireWithinLimit(t, all, lim)
	first, last := all[0].at, all[0].at
	for _, c := range all {
		first, last = min(first, c.at), max(last, c.at)
	}
	// 40 at 5 per 400 ms: 7 windows after the first claim, and not much
	// more (a generous bound for a loaded machine).
	require.GreaterOrEqual(t, last-first, int64(7*400))
	require.Less(t, last-first, int64(7*400+10000), "the consumers fell behind the limit")
	// The helpers go on; audit once they have acked everything.
	eventually(t, 30*time.Second, "all acked", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Acked == n
	})
	audit(t, q)
}

// A Worker over a queue at its own limit: every item handled once, no
// window over N, and the handlers wait for the room instead of claiming
// in a loop (a few claims per window, not one per handler per round trip).
func TestQueueRateLimitWorker(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "no")
	c := s.client(t)
	sc := newScriptCounter()
	c.AddHook(sc)
	ctx := context.Background()
	q := newQueue(t, c, "qrate-worker")
	lim := RateLimit{N: 10, Per: 300 * time.Millisecond}
	require.NoError(t, q.SetQueueRateLimit(ctx, lim))
	const n = 60
	seed(t, q, ids("i", n))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	var mu sync.Mutex
	var all []claim
	seen := map[string]int{}
	w := NewWorker(q, func(_ context.Context, m *Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID]++
		all = append(all, claim{id: m.ID, at: m.ClaimedAt.UnixMilli()})
		return nil
	}, WorkerOptions{Concurrency: 8, NoRecurring: true, Heartbeat: -1})
	runWorker(t, w)
	eventually(t, time.Minute, "all handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(all) == n
	})
	mu.Lock()
	defer mu.Unlock()
	for id, k := range seen {
		require.Equal(t, 1, k, "%s handled %d times", id, k)
	}
	requireWithinLimit(t, all, lim)
	cs := sc.snapshot().calls
	claims := cs["claim"] + cs["ack_claim"] + cs["ack_many_claim"]
	t.Logf("claims %v for %d items in %d windows", cs, n, n/lim.N)
	// Each window: a claim per handler that finds it full at most, and
	// the one woken for the room.
	require.Less(t, claims, int64(n+(n/lim.N)*(8+2)), "claims %v", cs)
}
