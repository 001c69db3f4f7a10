package redisq

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Shutdown whose ctx ends while redis-server does not answer gives up the
// settles still waiting for it together, 10 s (settleTimeout) after: the
// acks queued behind one in flight do not each get 10 s more.
func TestWorkerShutdownGivesUpSettlesTogether(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "settles", WithVisibilityTimeout(5*time.Second), WithWakeCap(200*time.Millisecond))
	const n = 3000
	seed(t, q, ids("i", n))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	var handled atomic.Int64
	w := NewWorker(q, func(context.Context, *Message) error {
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		handled.Add(1)
		return nil
	}, WorkerOptions{Concurrency: 16, NoRecurring: true, Heartbeat: -1})
	ran := make(chan error, 1)
	go func() { ran <- w.Run(context.Background()) }()

	eventually(t, time.Minute, "a sixth handled", func() bool { return handled.Load() >= n/6 })

	s.signal(syscall.SIGSTOP)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			s.signal(syscall.SIGCONT)
		}
	}
	defer resume()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	shut := make(chan error, 1)
	go func() { shut <- w.Shutdown(ctx) }()
	// Without the shared bound the second batch of acks waits until the
	// server answers again.
	const stopFor = 25 * time.Second
	var took time.Duration
	select {
	case err := <-shut:
		took = time.Since(start)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(stopFor):
		resume()
		<-shut
		took = time.Since(start)
	}
	resume()
	require.NoError(t, <-ran)
	t.Logf("Shutdown returned after %v", took)
	// 10 s, and a round trip under way then up to go-redis's ReadTimeout
	// (3 s) or, for a new connection's handshake, its DialTimeout (5 s);
	// one batch of acks after another would take 20 s.
	require.Less(t, took, 18500*time.Millisecond, "Shutdown's wait for the settles")

	// Nothing is lost: every item is acked, scheduled, or leased (a
	// claim whose reply the stop cut off leases its items to nobody until
	// the visibility timeout).
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, n, st.Acked+int64(st.Scheduled)+int64(st.InFlight))
}

// An AckTake whose claim acked done and then failed (here its ctx ended
// while it waited for work) leaves done acked: done.Ack returns nil without
// asking Redis, even once the ack's tombstone has expired.
func TestAckTakeFailingAfterItsAckLeavesDoneAcked(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "acktakefail")
	ctx := context.Background()
	seed(t, q, ids("i", 1))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	m, err := q.Take(ctx)
	require.NoError(t, err)

	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	next, err := q.AckTake(wctx, m)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Nil(t, next)
	_, err = q.Get(ctx, "i0")
	require.ErrorIs(t, err, ErrNotFound, "the claim acked i0")

	require.NoError(t, c.Del(ctx, q.db.Keys.Tomb(m.token)).Err()) // as 30 s later
	require.NoError(t, m.Ack(ctx))
}
