package redisq

import (
	"context"
	"errors"
	"fmt"
	"net"
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
