package redisq

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// takeIDs claims what is due now (waiting at most a moment for it) and
// returns the ids, unacked.
func takeIDs(t *testing.T, q *Queue, n int) ([]string, []*Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ms, err := q.TakeBatch(ctx, n)
	if err != nil {
		require.ErrorIs(t, err, context.DeadlineExceeded)
		return nil, nil
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids, ms
}

// At most K items of a key are leased at once; the others wait, in order,
// not due, and each end of a lease (ack, nack, dead letter, release) makes
// the next one due. Items of other keys are leased in the same claim.
// Raising the limit lets more go, removing it lets all go.
func TestConcurrencyLimit(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 2))
	var items []EnqueueItem
	for i := range 6 {
		items = append(items, EnqueueItem{ID: fmt.Sprintf("t%d", i), At: time.Unix(1, 0), Job: Job{LimitKey: "t"}})
	}
	items = append(items, EnqueueItem{ID: "free", At: time.Unix(2, 0)})
	_, err := q.EnqueueMany(ctx, items)
	require.NoError(t, err)

	ids, ms := takeIDs(t, q, 10)
	require.Equal(t, []string{"t0", "t1", "free"}, ids, "the key's places, and the other key's item in the same claim")
	for _, id := range []string{"t2", "t3", "t4", "t5"} {
		it, err := q.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, StateScheduled, it.State)
		require.True(t, it.WaitsForPlace, "%s does not say it waits", id)
	}
	st, err := q.ConcurrencyLimitState(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, ConcurrencyState{Key: "t", Limit: 2, Leased: 2, Waiting: 4}, st)
	stats, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, stats.DueBacklog, "a waiting item is not due")
	require.Equal(t, 1, stats.ConcurrencyLimits)
	ids, _ = takeIDs(t, q, 10)
	require.Empty(t, ids)

	// Each end of a lease lets the next one go, in order.
	require.NoError(t, ms[0].Ack(ctx))
	ids, next := takeIDs(t, q, 10)
	require.Equal(t, []string{"t2"}, ids)
	require.NoError(t, ms[1].NackAfter(ctx, time.Hour))
	ids, more := takeIDs(t, q, 10)
	require.Equal(t, []string{"t3"}, ids)
	_, err = next[0].DeadLetter(ctx, "test")
	require.NoError(t, err)
	ids, _ = takeIDs(t, q, 10)
	require.Equal(t, []string{"t4"}, ids)
	require.NoError(t, more[0].Release(ctx))
	ids, _ = takeIDs(t, q, 10)
	require.Equal(t, []string{"t5"}, ids, "t3, released, goes behind the waiting t5")

	// RunNow of a waiting item leaves it in its place: the limit holds.
	rn, err := q.RunNow(ctx, "t3")
	require.NoError(t, err)
	require.Equal(t, RunNowWaitingForPlace, rn.Outcome)
	ids, _ = takeIDs(t, q, 10)
	require.Empty(t, ids)

	// Cancel a waiting item: it leaves the key's waiting items.
	st, err = q.ConcurrencyLimitState(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, ConcurrencyState{Key: "t", Limit: 2, Leased: 2, Waiting: 1}, st)
	out, err := q.Cancel(ctx, "t3")
	require.NoError(t, err)
	require.Equal(t, CancelRemoved, out)
	st, err = q.ConcurrencyLimitState(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, 0, st.Waiting)

	// Removing the limit lets all go.
	for i := range 3 {
		_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("u%d", i), Job: Job{LimitKey: "t"}})
		require.NoError(t, err)
	}
	ids, _ = takeIDs(t, q, 10)
	require.Empty(t, ids)
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 3))
	ids, _ = takeIDs(t, q, 10)
	require.Equal(t, []string{"u0"}, ids, "one more place")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 0))
	ids, _ = takeIDs(t, q, 10)
	require.Equal(t, []string{"u1", "u2"}, ids)
	all, err := q.ConcurrencyLimits(ctx)
	require.NoError(t, err)
	require.Empty(t, all)
	audit(t, q)
}

// Several OS processes claim by both claim scripts: no more than K items
// of a key are held at once, by the processes' own account (a zset of
// what each holds, by lease deadline, counted at each claim by the Redis
// clock). One process is SIGKILLed holding items: their places come back
// when their leases expire, and every item is done.
func TestConcurrencyLimitAcrossProcesses(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-procs")
	limit := map[string]int{"t": 3, "u": 1}
	for k, n := range limit {
		require.NoError(t, q.SetConcurrencyLimit(ctx, k, n))
	}
	count := map[string]int{"t": 40, "u": 8, "": 40}
	var items []EnqueueItem
	for _, key := range []string{"t", "u", ""} {
		for i := range count[key] {
			items = append(items, EnqueueItem{ID: fmt.Sprintf("%s%d", key, i), At: time.Unix(1, 0), Job: Job{LimitKey: key}})
		}
	}
	enqueueAll(t, q, items)
	lines := make(chan string, 1000)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the helpers' cleanups kill them
	var victim *exec.Cmd
	for p := range 4 {
		cmd, sc := helperProcess(t, "conc", "REDISQ_ADDR="+s.addr(), "REDISQ_QUEUE=conc-procs", "REDISQ_ME="+strconv.Itoa(p),
			"REDISQ_VIS=1500ms", "REDISQ_HOLD=30ms")
		if p == 0 {
			victim = cmd
		}
		wg.Go(func() {
			for sc.Scan() {
				lines <- sc.Text()
			}
		})
	}
	seen := map[string]bool{}
	claims := 0
	timeout := time.After(2 * time.Minute)
	for len(seen) < len(items) {
		select {
		case l := <-lines:
			f := strings.Split(l, " ")
			require.Equal(t, "CLAIM", f[0], "helper: %q", l)
			key := strings.TrimRight(f[1], "0123456789")
			n, err := strconv.Atoi(f[len(f)-1])
			require.NoError(t, err, "helper: %q", l)
			if k, ok := limit[key]; ok {
				require.LessOrEqual(t, n, k, "%d items of key %q held at once", n, key)
			}
			seen[f[1]] = true
			if claims++; claims == 20 {
				require.NoError(t, victim.Process.Kill())
			}
		case <-timeout:
			t.Fatalf("claimed %d of %d items", len(seen), len(items))
		}
	}
	// The victim's items, claimed again, are done too.
	eventually(t, 30*time.Second, "every item done", func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Scheduled == 0 && st.InFlight == 0
	})
	for k := range limit {
		st, err := q.ConcurrencyLimitState(ctx, k)
		require.NoError(t, err)
		require.Equal(t, ConcurrencyState{Key: k, Limit: limit[k]}, st)
	}
	audit(t, q)
}

// A key whose places are all taken holds up no other key: a claim leases
// a due item of another key behind the key's due items, making them wait.
func TestConcurrencyLimitHoldsUpNoOtherKey(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	calls := func(q *Queue, busy int) int64 {
		require.NoError(t, q.SetConcurrencyLimit(ctx, "busy", 1))
		_, err := q.Add(ctx, EnqueueItem{ID: "b", At: time.Unix(1, 0), Job: Job{LimitKey: "busy"}})
		require.NoError(t, err)
		m, err := q.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, "b", m.ID)
		var items []EnqueueItem
		for i := range busy {
			items = append(items, EnqueueItem{ID: fmt.Sprintf("b%d", i), At: time.Unix(1, 0), Job: Job{LimitKey: "busy"}})
		}
		items = append(items, EnqueueItem{ID: "other", At: time.Unix(2, 0), Job: Job{LimitKey: "other"}})
		_, err = q.EnqueueMany(ctx, items)
		require.NoError(t, err)
		before := commandCalls(t, c, "evalsha")
		m, err = q.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, "other", m.ID)
		return commandCalls(t, c, "evalsha") - before
	}
	// The same Take with the other item alone costs as many scripts.
	require.Equal(t, calls(newQueue(t, c, "conc-hol-alone"), 0), calls(newQueue(t, c, "conc-hol"), 50),
		"the busy key's due items cost more claims")
}

// An expired lease frees its place when it is reclaimed, even when the
// item then dies (its last attempt) and no claim of the key would follow:
// the waiting item is made due, and taken, with no new item to wake it.
func TestConcurrencyLimitExpiredLease(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-expired", WithVisibilityTimeout(300*time.Millisecond))
	require.NoError(t, q.SetConcurrencyLimit(ctx, "k", 1))
	_, err := q.Add(ctx, EnqueueItem{ID: "a", At: time.Unix(1, 0), Job: Job{LimitKey: "k", MaxAttempts: 1}})
	require.NoError(t, err)
	_, err = q.Add(ctx, EnqueueItem{ID: "b", At: time.Unix(2, 0), Job: Job{LimitKey: "k"}})
	require.NoError(t, err)
	ids, _ := takeIDs(t, q, 10)
	require.Equal(t, []string{"a"}, ids) // and never acked
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := q.Take(tctx)
	require.NoError(t, err)
	require.Equal(t, "b", m.ID)
	it, err := q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, StateDead, it.State)
	require.NoError(t, m.Ack(ctx))
	audit(t, q)
}

// On a Cluster, through a move of the queue's slot: never more than K of
// a key leased at once, and every item goes.
func TestClusterConcurrencyLimit(t *testing.T) {
	noLeaks(t)
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "cconc")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "k", 2))
	const n = 12
	for i := range n {
		_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("i%d", i), At: time.Unix(1, 0), Job: Job{LimitKey: "k"}})
		require.NoError(t, err)
	}
	done := 0
	for done < n {
		ms, err := q.TakeBatch(ctx, 10)
		require.NoError(t, err)
		require.LessOrEqual(t, len(ms), 2, "over the limit")
		st, err := q.ConcurrencyLimitState(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, len(ms), st.Leased)
		require.Equal(t, n-done-len(ms), st.Waiting)
		require.Empty(t, errors.Join(q.AckMany(ctx, ms)...))
		done += len(ms)
		if done == 4 {
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
	audit(t, q)
}

// Audit checks the limits' indexes against the items: each index names
// items in the state it says, each limited item is in its index, and no
// item waits for a place that is free.
func TestAuditLimits(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-audit")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "k", 1))
	require.NoError(t, q.SetRateLimit(ctx, "r", RateLimit{N: 1, Per: time.Hour}))
	for _, it := range []EnqueueItem{{ID: "a", Job: Job{LimitKey: "k"}}, {ID: "b", Job: Job{LimitKey: "k"}},
		{ID: "c", Job: Job{LimitKey: "r"}}, {ID: "d", Job: Job{LimitKey: "r"}}} {
		it.At = time.Unix(1, 0)
		_, err := q.Add(ctx, it)
		require.NoError(t, err)
	}
	ids, _ := takeIDs(t, q, 10)
	require.Equal(t, []string{"a", "c"}, ids)
	audit(t, q) // a holds k's place, b waits for it; d waits for r's slot

	problems := func() []string {
		r, err := q.Audit(ctx)
		require.NoError(t, err)
		return r.Problems
	}
	member := func(id string) string {
		m, err := c.HGet(ctx, q.db.Keys.Item(id), "mem").Result()
		require.NoError(t, err)
		return m
	}
	_, _, cf, cq, _ := q.db.Keys.LimitIndexes("k")
	rwr, _, _, _, _ := q.db.Keys.LimitIndexes("r")
	// a's place lost: it is not in the index, and b waits for a free place.
	require.NoError(t, c.ZRem(ctx, cf, member("a")).Err())
	p := problems()
	require.Len(t, p, 2, "%q", p)
	require.Contains(t, p[0]+p[1], `item "a" holds a place of limit key "k" but is not in its index`)
	require.Contains(t, p[0]+p[1], `limit key "k": 1 items wait for a place while 1 of 1 places are free`)
	require.NoError(t, c.ZAdd(ctx, cf, redis.Z{Score: 1e15, Member: member("a")}).Err())
	// b no longer says it waits; d leaves r's index.
	require.NoError(t, c.HDel(ctx, q.db.Keys.Item("b"), "cq").Err())
	require.NoError(t, c.ZRem(ctx, rwr, member("d")).Err())
	p = problems()
	require.Len(t, p, 2, "%q", p)
	require.Contains(t, p[0]+p[1], `limit key "k": `+cq+` names "`+member("b")+`", which does not wait for a place of the key`)
	require.Contains(t, p[0]+p[1], `item "d" waits for a rate slot of limit key "r" but is not in its index`)
}

// parkAll enqueues n items of key due long ago, takes the first (held),
// and claims until the others all wait for a place.
func parkAll(t *testing.T, q *Queue, key string, n int) *Message {
	t.Helper()
	ctx := context.Background()
	var items []EnqueueItem
	for i := range n {
		items = append(items, EnqueueItem{ID: fmt.Sprintf("%s%04d", key, i), At: time.Unix(1, 0), Job: Job{LimitKey: key}})
	}
	for i := 0; i < n; i += 500 {
		_, err := q.EnqueueMany(ctx, items[i:min(i+500, n)])
		require.NoError(t, err)
	}
	ids, ms := takeIDs(t, q, 1)
	require.Equal(t, []string{key + "0000"}, ids)
	eventually(t, 20*time.Second, "the others wait", func() bool {
		takeIDs(t, q, 1)
		st, err := q.ConcurrencyLimitState(ctx, key)
		require.NoError(t, err)
		return st.Waiting == n-1
	})
	return ms[0]
}

// A removal cut short (its first round trip alone, as a cancelled context
// or a lost connection leaves it) shows: the key stays listed, Removing,
// and Audit says to call it again, which ends it. Meanwhile the key's
// items are leased as if it had no limit, and the waiting items leased
// then leave the waiting items whole.
func TestConcurrencyLimitRemovalInterrupted(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-remove")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 1))
	held := parkAll(t, q, "t", 251)
	_, err := q.db.RunScript(ctx, rdb.Named("conc_limit"), append([]string{q.db.Keys.Conc}, concIndexes(q, "t")...), "t", 0)
	require.NoError(t, err)
	st, err := q.ConcurrencyLimitState(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, ConcurrencyState{Key: "t", Removing: true, Leased: 1, Waiting: 150}, st)
	all, err := q.ConcurrencyLimits(ctx)
	require.NoError(t, err)
	require.Equal(t, []ConcurrencyState{st}, all, "listed while it is removed")
	r, err := q.Audit(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{`limit key "t": the removal of its concurrency limit did not end (150 items wait): call SetConcurrencyLimit(ctx, key, 0) again`}, r.Problems)
	// The 100 let go are leased with no place; the ack frees none.
	ids, ms := takeIDs(t, q, 100)
	require.Len(t, ids, 100)
	require.NoError(t, held.Ack(ctx))
	audit2 := func() []string {
		r, err := q.Audit(ctx)
		require.NoError(t, err)
		return r.Problems
	}
	require.Len(t, audit2(), 1)
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 0))
	st, err = q.ConcurrencyLimitState(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, ConcurrencyState{Key: "t"}, st)
	require.Empty(t, audit2())
	var got int
	for {
		ids, more := takeIDs(t, q, 100)
		if len(ids) == 0 {
			break
		}
		got += len(ids)
		require.Empty(t, errors.Join(q.AckMany(ctx, more)...))
	}
	require.Equal(t, 150, got, "every waiting item went")
	require.Empty(t, errors.Join(q.AckMany(ctx, ms)...))
	audit(t, q)
}

// concIndexes are the keys conc_limit.lua takes after the limits.
func concIndexes(q *Queue, key string) []string {
	_, _, cf, cq, cp := q.db.Keys.LimitIndexes(key)
	return []string{cf, cq, cp}
}

// The items a claim finds with every place taken wait in the order they
// came due, even when they were enqueued in another order.
func TestConcurrencyLimitFIFOInOneClaim(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-fifo")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 1))
	_, err := q.Add(ctx, EnqueueItem{ID: "first", At: time.Unix(1, 0), Job: Job{LimitKey: "t"}})
	require.NoError(t, err)
	_, held := takeIDs(t, q, 1)
	require.Len(t, held, 1)
	for _, it := range []EnqueueItem{{ID: "due-later", At: time.Unix(3, 0)}, {ID: "due-earlier", At: time.Unix(2, 0)}} {
		it.Job.LimitKey = "t"
		_, err = q.Add(ctx, it)
		require.NoError(t, err)
	}
	ids, _ := takeIDs(t, q, 10)
	require.Empty(t, ids)
	require.NoError(t, held[0].Ack(ctx))
	ids, held = takeIDs(t, q, 10)
	require.Equal(t, []string{"due-earlier"}, ids)
	require.NoError(t, held[0].Ack(ctx))
	ids, _ = takeIDs(t, q, 10)
	require.Equal(t, []string{"due-later"}, ids)
}

// An item given a place is due: it no longer says it waits, and RunNow
// leaves it as a due item; the state counts it as granted.
func TestConcurrencyLimitGrantedIsDue(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-granted")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 1))
	held := parkAll(t, q, "t", 3)
	it, err := q.Get(ctx, "t0001")
	require.NoError(t, err)
	require.True(t, it.WaitsForPlace)
	// Paused, so that the place given is not taken at once.
	require.NoError(t, q.Pause(ctx))
	require.NoError(t, held.Ack(ctx))
	it, err = q.Get(ctx, "t0001")
	require.NoError(t, err)
	require.False(t, it.WaitsForPlace, "given a place: due")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.DueBacklog)
	cs, err := q.ConcurrencyLimitState(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, ConcurrencyState{Key: "t", Limit: 1, Granted: 1, Waiting: 1}, cs)
	rn, err := q.RunNow(ctx, "t0001")
	require.NoError(t, err)
	require.Equal(t, RunNowAlreadyDue, rn.Outcome)
	audit(t, q)
	require.NoError(t, q.Resume(ctx))
	ids, ms := takeIDs(t, q, 10)
	require.Equal(t, []string{"t0001"}, ids)
	require.NoError(t, ms[0].Ack(ctx))
	ids, ms = takeIDs(t, q, 10)
	require.Equal(t, []string{"t0002"}, ids)
	require.NoError(t, ms[0].Ack(ctx))
	audit(t, q)
}

// An item that waited for a rate slot and then finds every place taken
// waits for a place alone: it leaves the rate limit's waiting items, so a
// change of the rate limit does not let it jump the items that waited for
// a place before it.
func TestConcurrencyLimitAfterRateSlot(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-rate")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "k", 2))
	require.NoError(t, q.SetRateLimit(ctx, "k", RateLimit{N: 1, Per: 400 * time.Millisecond}))
	_, err := q.Add(ctx, EnqueueItem{ID: "x", At: time.Unix(1, 0), Job: Job{LimitKey: "k"}})
	require.NoError(t, err)
	_, x := takeIDs(t, q, 1)
	require.Len(t, x, 1)
	_, err = q.Add(ctx, EnqueueItem{ID: "b", At: time.Unix(2, 0), Job: Job{LimitKey: "k"}})
	require.NoError(t, err)
	ids, _ := takeIDs(t, q, 1)
	require.Empty(t, ids, "b waits for its rate slot")
	require.NoError(t, q.SetConcurrencyLimit(ctx, "k", 1))
	_, err = q.Add(ctx, EnqueueItem{ID: "c", At: time.Unix(3, 0), Job: Job{LimitKey: "k"}})
	require.NoError(t, err)
	ids, _ = takeIDs(t, q, 1)
	require.Empty(t, ids, "c waits for a place")
	it, err := q.Get(ctx, "b")
	require.NoError(t, err)
	untilRedisTime(t, c, it.RateSlot.Add(time.Millisecond))
	ids, _ = takeIDs(t, q, 1)
	require.Empty(t, ids, "b, at its slot, waits for a place behind c")
	it, err = q.Get(ctx, "b")
	require.NoError(t, err)
	require.True(t, it.WaitsForPlace)
	require.True(t, it.RateSlot.IsZero(), "no rate slot any more: %v", it.RateSlot)
	ls, err := q.RateLimitState(ctx, "k")
	require.NoError(t, err)
	require.Zero(t, ls.Waiting)
	audit(t, q)
	require.NoError(t, q.SetRateLimit(ctx, "k", RateLimit{N: 5, Per: 400 * time.Millisecond}))
	require.NoError(t, x[0].Ack(ctx))
	ids, _ = takeIDs(t, q, 1)
	require.Equal(t, []string{"c"}, ids, "c waited for a place before b")
}

// An end of a lease costs a few commands whatever the number of items
// waiting or given a place: an AckMany of 99 items of a key with 200
// waiting runs no command per item given a place earlier.
func TestConcurrencyLimitAckCost(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "conc-cost", WithReclaimBatch(1))
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 1))
	held := parkAll(t, q, "t", 301)
	require.NoError(t, q.SetConcurrencyLimit(ctx, "t", 100))
	var ms []*Message
	for len(ms) < 99 { // and held
		_, more := takeIDs(t, q, 100)
		ms = append(ms, more...)
	}
	require.NoError(t, q.Pause(ctx)) // the places given stay given
	require.NoError(t, held.Ack(ctx))
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	require.Empty(t, errors.Join(q.AckMany(ctx, ms)...))
	var calls int64
	for _, name := range []string{"zscore", "zrange", "zadd", "zrem", "zcount", "zcard", "hset", "hdel", "hmget", "hget", "exists", "del", "set", "hincrby"} {
		calls += commandCalls(t, c, name)
	}
	t.Logf("AckMany(99) with 200 items waiting: %d commands", calls)
	require.Less(t, calls, int64(99*20), "a command per item waiting or given, per ack")
	cs, err := q.ConcurrencyLimitState(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, ConcurrencyState{Key: "t", Limit: 100, Granted: 100, Waiting: 101}, cs)
	require.NoError(t, q.Resume(ctx))
	audit(t, q)
}
