package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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

// A due time more than ~292 years ahead (e.g. a "never" sentinel such as
// year 9999) overflows time.Duration in claim (ms * time.Millisecond), next
// becomes negative, and Take spins: claim scripts back to back, no blocking.
func TestRegressionFarFutureDueSpins(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	h := &countHook{}
	c.AddHook(h)
	q := newQueue(t, c, "far", WithWakeCap(time.Second))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, "never", nil, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)))
	ev0 := h.eval.Load()
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	n := h.eval.Load() - ev0
	t.Logf("%d claim scripts in 500ms, %d bzpopmin, %d total", n, h.bzpopmin.Load(), h.total.Load())
	require.LessOrEqual(t, n, int64(20), "Take busy-looped on claim")
}
