package redisq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A handler's Snooze(d) brings the message back d later by the Redis
// clock (never sooner), with no attempt counted, so that MaxAttempts(1)
// does not dead-letter it for snoozing; it is no Nack in Stats (Snoozed
// counts it), Logging logs it at Info, and the dead-letter and failure
// records of the worker say nothing of it.
func TestWorkerSnooze(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "snooze", WithMaxAttempts(1), WithWakeCap(100*time.Millisecond))
	ctx := context.Background()
	_, err := q.Add(ctx, EnqueueItem{ID: "s", Payload: []byte("p"), Job: Job{Kind: "k"}})
	require.NoError(t, err)

	const d = 300 * time.Millisecond
	var mu sync.Mutex
	var runs []*Message
	snoozed := make(chan time.Time, 1)
	done := make(chan struct{})
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		runs = append(runs, m)
		n := len(runs)
		mu.Unlock()
		if n <= 2 {
			if n == 2 {
				snoozed <- redisNow(t, c) // a second snooze, one of 0
				return Snooze(0)
			}
			return Snooze(d)
		}
		close(done)
		return nil
	}
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	w := NewWorker(q, h, WorkerOptions{Concurrency: 2, Logger: log, Middleware: []Middleware{Logging(log)}})
	runWorker(t, w)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the snoozed message did not come back")
	}
	eventually(t, 10*time.Second, "acked", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Acked == 1
	})
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, runs, 3)
	for i, m := range runs {
		require.Equal(t, 1, m.Attempts, "run %d: a snooze counted an attempt", i)
		require.Equal(t, "k", m.Kind, "the job is unchanged")
	}
	require.False(t, runs[1].ClaimedAt.Before(runs[0].ClaimedAt.Add(d)), "back before the snooze's end: %v after", runs[1].ClaimedAt.Sub(runs[0].ClaimedAt))
	require.False(t, runs[1].Due.Before(runs[0].ClaimedAt.Add(d)), "due before the snooze's end")
	require.False(t, runs[2].ClaimedAt.Before(runs[1].ClaimedAt))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: 1, Delivered: 3, Acked: 1, Snoozed: 2}, st.StatsCounters)
	out := logs.String()
	require.Equal(t, 2, strings.Count(out, `"msg":"redisq: snoozed"`), out)
	require.NotContains(t, out, "WARN", "a snooze logged as a failure")
	audit(t, q)
}

// Message.Snooze takes the lease's claim out of its key's rate log: the
// key's budget is not spent on a run that did not happen. It frees a
// concurrency place as a release does, and a lost lease changes nothing.
func TestSnoozeRefundsTheRateLimit(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "snooze-rate")
	require.NoError(t, q.SetRateLimit(ctx, "api", RateLimit{N: 1, Per: time.Hour}))
	require.NoError(t, q.SetConcurrencyLimit(ctx, "api", 1))
	for _, id := range []string{"a", "b"} {
		_, err := q.Add(ctx, EnqueueItem{ID: id, Job: Job{LimitKey: "api"}})
		require.NoError(t, err)
	}
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	got, ms := takeIDs(t, q, 2)
	require.Equal(t, []string{"a"}, got, "one start an hour")
	st, err := q.RateLimitState(ctx, "api")
	require.NoError(t, err)
	require.Equal(t, 1, st.Used)

	before := redisNow(t, c)
	due, err := ms[0].Snooze(ctx, time.Hour)
	require.NoError(t, err)
	require.False(t, due.Before(before.Add(time.Hour)), "due %v, before an hour after %v", due, before)
	st, err = q.RateLimitState(ctx, "api")
	require.NoError(t, err)
	require.Zero(t, st.Used, "the snoozed claim still counts against the limit")
	cs, err := q.ConcurrencyLimitState(ctx, "api")
	require.NoError(t, err)
	require.Zero(t, cs.Leased, "the snoozed item still holds a place")

	// b, waiting for the slot or the place a's claim took, runs now.
	var again []string
	eventually(t, 10*time.Second, "b is claimed", func() bool {
		ids, ms := takeIDs(t, q, 2)
		again = append(again, ids...)
		require.Empty(t, errsOf(q.AckMany(ctx, ms)))
		return len(again) > 0
	})
	require.Equal(t, []string{"b"}, again)
	it, err := q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State)
	require.Zero(t, it.Attempts)
	require.True(t, it.Due.Equal(due))
	_, err = ms[0].Snooze(ctx, time.Second)
	require.ErrorIs(t, err, ErrLeaseLost, "a snoozed lease is gone")
	audit(t, q)
}

// The outcome of a snooze, for logs and metrics: no failure, and what
// wraps it decides.
func TestSnoozeOutcome(t *testing.T) {
	require.Equal(t, "snooze", Outcome(Snooze(time.Second)))
	require.Equal(t, "snooze", Outcome(fmt.Errorf("later: %w", Snooze(time.Second))))
	require.False(t, IsFailure(Snooze(time.Second)))
	require.False(t, IsFailure(nil))
	require.True(t, IsFailure(errors.New("x")))
	require.True(t, IsFailure(RetryAfter(nil, time.Second)), "RetryAfter is a failure")
	require.Equal(t, "skip_retry", Outcome(SkipRetry(Snooze(time.Second))))
	var se *SnoozeError
	require.ErrorAs(t, Snooze(-time.Second), &se)
	require.Zero(t, se.Delay)
}
