package redisq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestEnqueueTakeAckDuplicate(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "basic")
	ctx := context.Background()

	_, err := q.EnqueueAfter(ctx, "a", []byte("payload-a"), 0)
	require.NoError(t, err)
	_, err = q.EnqueueAfter(ctx, "a", []byte("other"), 0)
	require.ErrorIs(t, err, ErrDuplicate)

	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", m.ID)
	require.Equal(t, []byte("payload-a"), m.Payload, "duplicate must not overwrite")
	require.Equal(t, 1, m.Attempts)
	// Duplicate while in flight.
	require.ErrorIs(t, q.Enqueue(ctx, "a", nil, time.Now()), ErrDuplicate)
	require.NoError(t, m.Ack(ctx))
	require.NoError(t, m.Ack(ctx), "a second ack of the same lease is idempotent")
	// After the ack the id is free again.
	require.NoError(t, q.Enqueue(ctx, "a", []byte("again"), time.Now()))
	_, err = q.Cancel(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, q.Reschedule(ctx, "nope", time.Now()), ErrNotFound)

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Scheduled)
	require.EqualValues(t, 0, st.InFlight)
	require.EqualValues(t, 2, st.Counters["enqueued"])
	require.EqualValues(t, 1, st.Counters["acked"])
	require.EqualValues(t, 1, st.Counters["delivered"])
	r := audit(t, q)
	require.Equal(t, 1, r.Items)
}

func TestFIFOAmongEqualDueTimes(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "fifo")
	ctx := context.Background()
	at := redisNow(t, q.client).Add(-time.Second).Truncate(time.Millisecond)
	// Ids chosen so that lexicographic order differs from enqueue order.
	const n = 300
	var ids []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("z%d", (i*7919)%n)
		ids = append(ids, id)
		require.NoError(t, q.Enqueue(ctx, id, nil, at))
	}
	var got []string
	for len(got) < n {
		ms, err := q.TakeBatch(ctx, 7)
		require.NoError(t, err)
		for _, m := range ms {
			require.Equal(t, at.UnixMilli(), m.Due.UnixMilli())
			got = append(got, m.ID)
			require.NoError(t, m.Ack(ctx))
		}
	}
	require.Equal(t, ids, got)
	audit(t, q)
}

// Due times come only from Redis TIME: the due time EnqueueAfter reports lies
// between Redis TIME read before and after the call plus the delay, and the
// claim happens no earlier than that by the Redis clock. The client clock is
// never consulted (there is no code path that reads it for scheduling).
func TestDueTimesFromRedisClock(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "clock")
	ctx := context.Background()
	const delay = 300 * time.Millisecond
	before := redisNow(t, c)
	due, err := q.EnqueueAfter(ctx, "x", nil, delay)
	require.NoError(t, err)
	after := redisNow(t, c)
	require.False(t, due.Before(before.Add(delay).Truncate(time.Millisecond)), "due %v before redis %v+delay", due, before)
	require.False(t, due.After(after.Add(delay)), "due %v after redis %v+delay", due, after)

	// An absolute time from a client whose clock is an hour ahead is honoured
	// as given: it is the caller's explicit choice, so it is not due now.
	skewed := redisNow(t, c).Add(time.Hour)
	require.NoError(t, q.Enqueue(ctx, "skewed", nil, skewed))

	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "x", m.ID)
	require.False(t, m.ClaimedAt.Before(m.Due), "claimed %v before due %v", m.ClaimedAt, m.Due)
	require.False(t, redisNow(t, c).Before(due), "delivered early by Redis clock")
	require.NoError(t, m.Ack(ctx))

	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "skewed item must not be due")

	// Rescheduling it relative to Redis TIME makes it due.
	_, err = q.RescheduleAfter(ctx, "skewed", 0)
	require.NoError(t, err)
	m, err = q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "skewed", m.ID)
	require.NoError(t, m.Ack(ctx))
	audit(t, q)
}

func TestWakeupIsPromptNotPolled(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "wake", WithWakeCap(10*time.Second))
	ctx := context.Background()
	got := make(chan time.Time, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m, err := q.Take(ctx)
		if err == nil {
			got <- time.Now()
			_ = m.Ack(ctx)
		}
		close(got)
	}()
	// Let the consumer block with nothing scheduled (its wait is the 10s cap).
	eventually(t, 5*time.Second, "consumer blocked", func() bool {
		return blockedClients(t, q) == 1
	})
	start := time.Now()
	_, err := q.EnqueueAfter(ctx, "now", nil, 0)
	require.NoError(t, err)
	at, ok := <-got
	require.True(t, ok)
	require.Less(t, at.Sub(start), time.Second, "wake-up must not wait for the cap")
	wg.Wait()

	// A delayed item is delivered at its due time, not at the cap.
	go func() {
		m, err := q.Take(ctx)
		if err == nil {
			_ = m.Ack(ctx)
		}
	}()
	eventually(t, 5*time.Second, "consumer blocked", func() bool { return blockedClients(t, q) == 1 })
	due, err := q.EnqueueAfter(ctx, "later", nil, 400*time.Millisecond)
	require.NoError(t, err)
	eventually(t, 3*time.Second, "delayed item acked", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Counters["acked"] == 2
	})
	require.Less(t, redisNow(t, q.client).Sub(due), 1500*time.Millisecond)
	audit(t, q)
}

func blockedClients(t testing.TB, q *Queue) int {
	info, err := q.client.Info(context.Background(), "clients").Result()
	require.NoError(t, err)
	var n int
	for _, line := range splitLines(info) {
		if _, err := fmt.Sscanf(line, "blocked_clients:%d", &n); err == nil {
			return n
		}
	}
	return -1
}

func TestNackBackoffAndDeadLetter(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "nack", WithMaxAttempts(3), WithBackoff(100*time.Millisecond, 150*time.Millisecond))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "j", []byte("p"), 0)
	require.NoError(t, err)

	var last time.Time
	for att := 1; att <= 3; att++ {
		m, err := q.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, att, m.Attempts)
		if att > 1 {
			// Backoff after attempt k-1 is min(150ms, 100ms·2^(k-2)), by Redis clock.
			want := 100 * time.Millisecond
			if att == 3 {
				want = 150 * time.Millisecond
			}
			require.GreaterOrEqual(t, m.Due.Sub(last), want)
			require.Less(t, m.Due.Sub(last), want+100*time.Millisecond)
		}
		last = m.ClaimedAt
		require.NoError(t, m.Nack(ctx))
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Dead)
	require.EqualValues(t, 0, st.Scheduled)
	ids, err := q.DeadIDs(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"j"}, ids)
	audit(t, q)

	// Reschedule revives a dead item with attempts reset.
	_, err = q.RescheduleAfter(ctx, "j", 0)
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, m.Attempts)
	require.NoError(t, m.NackAfter(ctx, time.Hour))
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Scheduled)
	require.EqualValues(t, 0, st.DueBacklog)
	// Cancel removes a scheduled item for good.
	out, err := q.Cancel(ctx, "j")
	require.NoError(t, err)
	require.Equal(t, CancelRemoved, out)
	_, err = q.Cancel(ctx, "j")
	require.ErrorIs(t, err, ErrNotFound)
	r := audit(t, q)
	require.Equal(t, 0, r.Items)
}

func TestLeaseExpiryExtendAndLateAck(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "lease", WithVisibilityTimeout(300*time.Millisecond),
		WithBackoff(0, 0), WithWakeCap(50*time.Millisecond))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "e", nil, 0)
	require.NoError(t, err)
	m1, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, m1.Extend(ctx, 600*time.Millisecond))
	require.Greater(t, m1.Deadline.Sub(m1.ClaimedAt), 500*time.Millisecond)

	// Not redelivered during the extended lease.
	tctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	m2, err := q.Take(ctx) // after the extended deadline
	require.NoError(t, err)
	require.Equal(t, "e", m2.ID)
	require.Equal(t, 2, m2.Attempts)
	require.False(t, m2.ClaimedAt.Before(m1.Deadline))
	require.ErrorIs(t, m1.Ack(ctx), ErrLeaseLost)
	require.ErrorIs(t, m1.Nack(ctx), ErrLeaseLost)
	require.ErrorIs(t, m1.Extend(ctx, time.Second), ErrLeaseLost)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.InFlight, "late settlement changed nothing")
	require.NoError(t, m2.Ack(ctx))
	audit(t, q)
}

func TestCancelInFlightIsNotRetried(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "cif", WithVisibilityTimeout(100*time.Millisecond),
		WithBackoff(0, 0), WithWakeCap(50*time.Millisecond))
	ctx := context.Background()
	ms := takeNow(t, q, "a", "b")
	for _, id := range []string{"a", "b"} {
		out, err := q.Cancel(ctx, id)
		require.NoError(t, err, "marking an in-flight item is a success")
		require.Equal(t, CancelMarked, out)
	}
	_, err := q.RescheduleAfter(ctx, "a", 0)
	require.ErrorIs(t, err, ErrInFlight)
	// b's holder nacks: cancelled, so deleted instead of rescheduled.
	require.NoError(t, ms[1].Nack(ctx))
	// a's lease expires: cancelled, so deleted instead of redelivered.
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.InFlight+st.Scheduled+st.Dead)
	require.EqualValues(t, 2, st.Counters["cancelled"])
	r := audit(t, q)
	require.Equal(t, 0, r.Items)
}

func TestCloseAndCancelUnblockTake(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q, err := New(context.Background(), c, "close", WithWakeCap(30*time.Second))
	require.NoError(t, err)

	// ctx cancellation ends a blocked wait promptly (the client does not
	// honour context deadlines by default, so this exercises the private wake key).
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := q.Take(ctx); errc <- err }()
	eventually(t, 5*time.Second, "blocked", func() bool { return blockedClients(t, q) == 1 })
	start := time.Now()
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Less(t, time.Since(start), 2*time.Second)

	go func() { _, err := q.Take(context.Background()); errc <- err }()
	eventually(t, 5*time.Second, "blocked", func() bool { return blockedClients(t, q) == 1 })
	start = time.Now()
	require.NoError(t, q.Close())
	require.ErrorIs(t, <-errc, ErrClosed)
	require.Less(t, time.Since(start), 2*time.Second)
	_, err = q.Take(context.Background())
	require.ErrorIs(t, err, ErrClosed)
	_, err = q.EnqueueAfter(context.Background(), "x", nil, 0)
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, q.Close())
}

func TestEvictionPolicyCheck(t *testing.T) {
	s := startRedis(t, "--maxmemory-policy", "allkeys-lru")
	c := s.client(t)
	_, err := New(context.Background(), c, "ev")
	require.ErrorIs(t, err, ErrEvictionPolicy)
	require.Contains(t, err.Error(), "allkeys-lru")
	q, err := New(context.Background(), c, "ev", WithEvictionCheck(EvictionWarn))
	require.NoError(t, err)
	require.NoError(t, q.Close())

	// CONFIG disabled (as on managed Redis): the check is skipped.
	s2 := startRedis(t, "--enable-debug-command", "no")
	c2 := s2.client(t)
	require.NoError(t, c2.Do(context.Background(), "CONFIG", "SET", "maxmemory-policy", "allkeys-lru").Err())
	c2.AddHook(denyConfig{})
	q2, err := New(context.Background(), c2, "ev")
	require.NoError(t, err, "CONFIG unavailable must not fail New")
	require.NoError(t, q2.Close())
	_, err = New(context.Background(), c2, "bad{name}")
	require.Error(t, err)
	_, err = New(context.Background(), c2, "x", WithVisibilityTimeout(0))
	require.Error(t, err)
}

func TestBadArgs(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "args")
	ctx := context.Background()
	_, err := q.TakeBatch(ctx, 0)
	require.Error(t, err)
	_, err = q.TakeBatch(ctx, MaxBatch+1)
	require.Error(t, err)
	_, err = q.EnqueueAfter(ctx, "", nil, 0)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrDuplicate))
}

// Regression: New treated an unreachable server as "CONFIG unavailable",
// logged that it skipped the eviction check, and returned a queue.
func TestNewFailsWhenServerUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	q, err := New(context.Background(), c, "unreachable")
	require.Error(t, err)
	require.Nil(t, q)
	require.NotErrorIs(t, err, ErrEvictionPolicy)
}
