package redisq

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// killAll dead-letters n items "prefix0".. through the consumer API.
func killAll(t testing.TB, q *Queue, prefix string, n int) []string {
	t.Helper()
	return killAllWhy(t, q, prefix, n, "test")
}

// killAllWhy is killAll with reason as the items' cause of death.
func killAllWhy(t testing.TB, q interface {
	EnqueueAfter(context.Context, string, []byte, time.Duration) (time.Time, error)
	TakeBatch(context.Context, int) ([]*Message, error)
}, prefix string, n int, reason string) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s%04d", prefix, i)
		ids = append(ids, id)
		_, err := q.EnqueueAfter(ctx, id, []byte(id), 0)
		require.NoError(t, err)
	}
	for left := n; left > 0; {
		ms, err := q.TakeBatch(ctx, min(left, MaxBatch))
		require.NoError(t, err)
		for _, m := range ms {
			out, err := m.DeadLetter(ctx, reason)
			require.NoError(t, err)
			require.Equal(t, NackDeadLettered, out)
		}
		left -= len(ms)
	}
	return ids
}

func TestScheduleUpsert(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "upsert", WithMaxAttempts(1))
	ctx := context.Background()
	now := redisNow(t, c).Truncate(time.Millisecond)

	r, err := q.Schedule(ctx, "a", []byte("v1"), now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, ScheduleResult{Due: now.Add(time.Hour), Created: true}, r)
	it, err := q.Get(ctx, "a")
	require.NoError(t, err)
	enq := it.Enqueued

	// Replace payload and due time of the scheduled item.
	r, err = q.Schedule(ctx, "a", []byte("v2"), now.Add(2*time.Hour))
	require.NoError(t, err)
	require.False(t, r.Created)
	it, err = q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []byte("v2"), it.Payload)
	require.Equal(t, now.Add(2*time.Hour), it.Due)
	require.Equal(t, enq, it.Enqueued, "the first enqueue time is kept")
	audit(t, q)

	// Due now by the Redis clock, then in flight: Schedule refuses and
	// changes nothing.
	r, err = q.ScheduleAfter(ctx, "a", []byte("v3"), -time.Second)
	require.NoError(t, err)
	require.False(t, r.Created)
	require.False(t, r.Due.Before(now))
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, []byte("v3"), m.Payload)
	_, err = q.Schedule(ctx, "a", []byte("v4"), now)
	require.ErrorIs(t, err, ErrInFlight)
	it, err = q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, StateInFlight, it.State)
	require.Equal(t, []byte("v3"), it.Payload)

	// Dead (max attempts 1): Schedule revives it with attempts reset.
	res, err := m.NackWith(ctx)
	require.NoError(t, err)
	require.Equal(t, NackDeadLettered, res.Outcome)
	r, err = q.ScheduleAfter(ctx, "a", []byte("v5"), time.Minute)
	require.NoError(t, err)
	require.False(t, r.Created)
	it, err = q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State)
	require.Equal(t, 0, it.Attempts)
	require.Empty(t, it.DeadReason)
	require.Equal(t, r.Due, it.Due)
	require.Equal(t, []byte("v5"), it.Payload)

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: 1, Delivered: 1, Nacked: 1, DeadLettered: 1, Rescheduled: 3}, st.StatsCounters)
	_, err = q.Schedule(ctx, "", nil, now)
	require.Error(t, err)
	audit(t, q)
}

func TestRequeueAndDeleteDead(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "deadadm")
	ctx := context.Background()
	// More than two admin batches, so the batching is exercised.
	ids := killAll(t, q, "d", 2*adminBatch+7)
	require.ErrorIs(t, q.RequeueDead(ctx, "nope"), ErrNotFound)
	_, err := q.EnqueueAfter(ctx, "live", nil, time.Hour)
	require.NoError(t, err)
	require.ErrorIs(t, q.RequeueDead(ctx, "live"), ErrNotDead)
	require.ErrorIs(t, q.DeleteDead(ctx, "live"), ErrNotDead)

	require.NoError(t, q.RequeueDead(ctx, ids[5]))
	it, err := q.Get(ctx, ids[5])
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State)
	require.Equal(t, 0, it.Attempts)
	require.Empty(t, it.DeadReason)
	require.NoError(t, q.DeleteDead(ctx, ids[6]))
	_, err = q.Get(ctx, ids[6])
	require.ErrorIs(t, err, ErrNotFound)
	audit(t, q)

	n, err := q.RequeueAllDead(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(ids)-2, n)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Dead)
	require.EqualValues(t, len(ids)-1+1, st.Scheduled)
	require.EqualValues(t, len(ids)-1, st.Requeued)
	require.EqualValues(t, 1, st.Deleted)
	audit(t, q)

	// Requeued in order of death, behind the one requeued first.
	want := slices.Concat([]string{ids[5]}, ids[:5], ids[7:])
	var got []string
	for len(got) < len(want) {
		ms, err := q.TakeBatch(ctx, MaxBatch)
		require.NoError(t, err)
		for _, m := range ms {
			require.Equal(t, 1, m.Attempts, "attempts were reset")
			got = append(got, m.ID)
			_, err := m.DeadLetter(ctx, "again")
			require.NoError(t, err)
		}
	}
	require.Equal(t, want, got)
	n, err = q.DeleteAllDead(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(want), n)
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Dead)
	require.EqualValues(t, 1, st.Scheduled)
	require.Equal(t, st.Enqueued, st.Acked+st.Cancelled+st.Deleted+st.Scheduled+st.InFlight+st.Dead)
	r := audit(t, q)
	require.Equal(t, 1, r.Items)
}

func TestPurgeEveryState(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "purge", WithBackoff(0, 0))
	ctx := context.Background()
	killAll(t, q, "d", 3)
	for i := 0; i < adminBatch+3; i++ {
		_, err := q.EnqueueAfter(ctx, fmt.Sprint("s", i), nil, time.Duration(i)*time.Millisecond)
		require.NoError(t, err)
	}
	for _, id := range []string{"f1", "f2"} {
		require.NoError(t, q.Enqueue(ctx, id, nil, time.UnixMilli(1)))
	}
	ms, err := q.TakeBatch(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, "f1", ms[0].ID)
	_, err = q.Cancel(ctx, "f1") // already marked: Purge does not count it
	require.NoError(t, err)

	n, err := q.Purge(ctx, StateInFlight)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	for _, id := range []string{"f1", "f2"} {
		it, err := q.Get(ctx, id)
		require.NoError(t, err)
		require.True(t, it.Cancelled, id)
	}
	n, err = q.Purge(ctx, StateScheduled)
	require.NoError(t, err)
	require.EqualValues(t, adminBatch+3, n)
	n, err = q.Purge(ctx, StateDead)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	audit(t, q)
	// The marked items leave with their Nack (dropped), not retried.
	for _, m := range ms {
		r, err := m.NackWith(ctx)
		require.NoError(t, err)
		require.Equal(t, NackDropped, r.Outcome)
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Scheduled+st.InFlight+st.Dead)
	require.Equal(t, st.Enqueued, st.Acked+st.Cancelled+st.Deleted)
	r := audit(t, q)
	require.Equal(t, 0, r.Items)

	_, err = q.Purge(ctx, State(0))
	require.Error(t, err)
}

// keysOf returns every key on the server, sorted.
func keysOf(t testing.TB, c *redis.Client) []string {
	t.Helper()
	ks, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	slices.Sort(ks)
	return ks
}

// oddNames are queue names that are globs, prefixes of each other or
// separators in the key layout.
var oddNames = []string{"a", "a:b", "a*", "a?", "a[", "a[b]", `a\`, "a:m:", "*", "ü:x"}

// oddIDs are ids made of the same characters.
var oddIDs = []string{"*", "?", "[", "]", "{", "}", ":", "}:seq", "x:y", "{dq:a}", `\`, "\x1b[31m"}

func TestOddNamesStayApart(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	qs := map[string]*Queue{}
	for _, name := range oddNames {
		q := newQueue(t, c, name, WithMaxAttempts(1))
		qs[name] = q
		for _, id := range oddIDs {
			_, err := q.EnqueueAfter(ctx, id, []byte(name+"/"+id), time.Hour)
			require.NoError(t, err)
		}
		_, err := q.EnqueueAfter(ctx, "take", nil, 0)
		require.NoError(t, err)
		m, err := q.Take(ctx)
		require.NoError(t, err)
		require.NoError(t, m.Ack(ctx)) // leaves an ack tombstone
	}
	for _, name := range []string{"a{", "a}", "{a}", ""} {
		_, err := New(ctx, c, name)
		require.Error(t, err, name)
	}

	got, err := ListQueues(ctx, c)
	require.NoError(t, err)
	want := slices.Clone(oddNames)
	slices.Sort(want)
	require.Equal(t, want, got)

	for name, q := range qs {
		p, err := q.List(ctx, StateScheduled, ListOptions{Payloads: true, Limit: MaxPage})
		require.NoError(t, err)
		require.EqualValues(t, len(oddIDs), p.Total, name)
		for _, it := range p.Items {
			require.Equal(t, name+"/"+it.ID, string(it.Payload), "queue %q listed another queue's item", name)
		}
		audit(t, q)
	}

	// Destroying "a" and "*" removes their keys and no other.
	before := keysOf(t, c)
	for _, name := range []string{"a", "*"} {
		n, err := qs[name].Destroy(ctx)
		require.NoError(t, err)
		require.Positive(t, n)
		ok, err := qs[name].Exists(ctx)
		require.NoError(t, err)
		require.False(t, ok)
	}
	after := keysOf(t, c)
	var gone []string
	for _, k := range before {
		if !slices.Contains(after, k) {
			gone = append(gone, k)
		}
	}
	// The timer key is there too: the Take's claim left the hour-ahead items
	// to this Queue's timer.
	require.Len(t, gone, 2*(len(oddIDs)+7), "items, sched, stats, seq, late, wake, timer, ack tombstone: %q", gone)
	for _, k := range gone {
		require.True(t, hasPrefix(k, "{dq:a}:") || hasPrefix(k, "{dq:*}:"), "destroy removed %q", k)
	}
	for _, k := range after {
		require.False(t, hasPrefix(k, "{dq:a}:") || hasPrefix(k, "{dq:*}:"), "destroy left %q", k)
	}
	got, err = ListQueues(ctx, c)
	require.NoError(t, err)
	require.NotContains(t, got, "a")
	require.Contains(t, got, "a:b")

	// Admin calls on a queue with no data change nothing and say so.
	_, err = qs["a"].Destroy(ctx)
	require.ErrorIs(t, err, ErrNoQueue)
	ghost := newQueue(t, c, "a:")
	for _, f := range []func() (int64, error){
		func() (int64, error) { return ghost.Purge(ctx, StateScheduled) },
		func() (int64, error) { return ghost.RequeueAllDead(ctx) },
		func() (int64, error) { return ghost.DeleteAllDead(ctx) },
		func() (int64, error) { return ghost.Destroy(ctx) },
	} {
		_, err := f()
		require.ErrorIs(t, err, ErrNoQueue)
	}
	require.Equal(t, after, keysOf(t, c), "calls on a missing queue changed keys")
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// Destroy leaves nothing of a queue that consumers used: tombstones, the
// timer, the wake marker and private wake keys included.
func TestDestroyLeavesNothing(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "gone", WithWakeCap(time.Second))
	ctx := context.Background()
	killAll(t, q, "d", 2)
	_, err := q.EnqueueAfter(ctx, "later", nil, time.Hour)
	require.NoError(t, err)
	_, err = q.EnqueueAfter(ctx, "held", nil, 0)
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	// A Take blocked until the hour-ahead item (timer owner), then cancelled:
	// its private wake key stays behind for up to a minute.
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	before, err := c.Keys(ctx, "{dq:gone}:*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, before)

	n, err := q.Destroy(ctx)
	require.NoError(t, err)
	// Regression (issue 17, item 11): the zsets that the batches emptied
	// were deleted uncounted.
	require.EqualValues(t, len(before), n, "keys deleted: %q", before)
	require.Empty(t, keysOf(t, c))
	require.ErrorIs(t, m.Ack(ctx), ErrLeaseLost, "the held lease went with the queue")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{}, st.StatsCounters)
	r := audit(t, q)
	require.Zero(t, r.Items)
}

// Regression: lease tokens are sequence numbers and Destroy deleted the
// sequence, so numbers restarted at 1 and a consumer holding a lease from
// before Destroy could ack the lease of a new item with the same id. A new
// sequence now starts at Redis TIME in microseconds.
func TestRegressionTokenReuseAfterDestroy(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "tokd", WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	for _, round := range []string{"first", "second"} {
		_, err := q.EnqueueAfter(ctx, "x", []byte("old"), 0)
		require.NoError(t, err)
		old, err := q.Take(ctx)
		require.NoError(t, err)
		_, err = q.Destroy(ctx)
		require.NoError(t, err)

		res, err := q.EnqueueMany(ctx, []EnqueueItem{{ID: "x", Payload: []byte("new")}})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		cur, err := q.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, "new", string(cur.Payload))
		require.NotEqual(t, old.token, cur.token, round)
		require.ErrorIs(t, old.Ack(ctx), ErrLeaseLost, "%s: the pre-Destroy holder acked the new lease", round)
		require.ErrorIs(t, old.Extend(ctx, time.Minute), ErrLeaseLost, round)
		_, err = old.NackWith(ctx)
		require.ErrorIs(t, err, ErrLeaseLost, round)
		require.NoError(t, cur.Ack(ctx), round)
		_, err = q.Destroy(ctx)
		require.NoError(t, err)
	}
}

// Admin operations against consumers under load keep every invariant and
// lose nothing: Enqueued == Acked + Cancelled + Deleted + items left.
func TestAdminUnderTraffic(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	q := newQueue(t, c, "busy", WithMaxAttempts(2), WithBackoff(0, 0), WithVisibilityTimeout(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			if ctx.Err() != nil {
				return
			}
			m, err := q.Take(ctx)
			if err != nil {
				return
			}
			switch i % 3 {
			case 0:
				_ = m.Ack(ctx)
			case 1:
				_, _ = m.NackWith(ctx, NackReason("flaky"))
			default:
				_, _ = m.DeadLetter(ctx, "bad")
			}
		}
	}()
	for round := 0; round < 5; round++ {
		for i := 0; i < 200; i++ {
			_, err := q.ScheduleAfter(ctx, fmt.Sprint("i", i%150), []byte("x"), time.Duration(i%20)*time.Millisecond)
			if err != nil {
				require.ErrorIs(t, err, ErrInFlight)
			}
		}
		_, err := q.RequeueAllDead(ctx)
		require.NoError(t, err)
		_, err = q.Purge(ctx, StateInFlight)
		require.NoError(t, err)
		_, err = q.DeleteAllDead(ctx)
		require.NoError(t, err)
		p, err := q.List(ctx, StateScheduled, ListOptions{Limit: 50, Payloads: true})
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), 50)
	}
	_, err := q.Purge(ctx, StateScheduled)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "consumer drained the in-flight items", func() bool {
		st, err := q.Stats(context.Background())
		require.NoError(t, err)
		return st.InFlight == 0 && st.Scheduled == 0
	})
	cancel()
	<-done
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, st.Enqueued, st.Acked+st.Cancelled+st.Deleted+st.Scheduled+st.InFlight+st.Dead, "%+v", st.StatsCounters)
	require.Positive(t, st.Requeued)
	audit(t, q)
}

func TestClusterListQueuesAndDestroy(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.NewCluster(t, 3)})
	defer cc.Close()
	ctx := context.Background()
	names := []string{"a", "a:b", "b*", "c?", "d[x]"} // spread over slots
	qs := map[string]*Queue{}
	for _, name := range names {
		q := newQueue(t, cc, name)
		qs[name] = q
		killAll(t, q, "d", 2)
		_, err := q.EnqueueAfter(ctx, "s", nil, time.Hour)
		require.NoError(t, err)
	}
	// ForEachMaster runs the function on every master concurrently.
	var mu sync.Mutex
	masters := 0
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, "{dq:*}:seq").Result()
		mu.Lock()
		defer mu.Unlock()
		if len(ks) > 0 {
			masters++
		}
		return err
	}))
	got, err := ListQueues(ctx, cc)
	require.NoError(t, err)
	require.Equal(t, names, got)

	n, err := qs["a"].Destroy(ctx)
	require.NoError(t, err)
	require.Positive(t, n)
	_, err = qs["a"].Destroy(ctx)
	require.ErrorIs(t, err, ErrNoQueue)
	got, err = ListQueues(ctx, cc)
	require.NoError(t, err)
	require.Equal(t, names[1:], got)
	require.GreaterOrEqual(t, masters, 2, "the queues should live on several masters")
	var left []string
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, "{dq:a}:*").Result()
		mu.Lock()
		defer mu.Unlock()
		left = append(left, ks...)
		return err
	}))
	require.Empty(t, left)
	for _, name := range names[1:] {
		st, err := qs[name].Stats(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, st.Dead, name)
		r := audit(t, qs[name])
		require.Equal(t, 3, r.Items)
	}
}
