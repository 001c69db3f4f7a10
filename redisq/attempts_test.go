package redisq

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Zero is "the default" for max attempts in both places, the queue's
// (DefaultMaxAttempts) and the job's (the queue's), and NoAttemptLimit is
// no limit in both: nacked at once every time, an item dies at its limit's
// delivery, or never, and each of its Messages says which
// (Message.AttemptLimit).
func TestMaxAttemptsZeroIsTheDefault(t *testing.T) {
	s := startRedis(t, "--appendfsync", "no")
	c := s.client(t)
	ctx := context.Background()
	// deliveries nacks id until it dies or has been delivered limit times.
	deliveries := func(q *Queue, id string, job Job, limit, want int) (n int, dead bool) {
		_, err := q.Add(ctx, EnqueueItem{ID: id, Job: job})
		require.NoError(t, err)
		for n < limit {
			m, err := q.Take(ctx)
			require.NoError(t, err)
			require.Equal(t, id, m.ID)
			require.Equal(t, want, m.AttemptLimit())
			n++
			r, err := m.NackWith(ctx)
			require.NoError(t, err)
			if r.Outcome == NackDeadLettered {
				return n, true
			}
		}
		return n, false
	}
	for _, tc := range []struct {
		queue, job int
		runs       int // deliveries before it dies; 0: it never does
	}{
		{0, 0, DefaultMaxAttempts},
		{3, 0, 3},
		{0, 2, 2},
		{NoAttemptLimit, 0, 0},
		{3, NoAttemptLimit, 0},
		{NoAttemptLimit, 4, 4},
	} {
		t.Run(fmt.Sprintf("queue%d/job%d", tc.queue, tc.job), func(t *testing.T) {
			q := newQueue(t, c, fmt.Sprintf("att-%d-%d", tc.queue, tc.job), WithMaxAttempts(tc.queue), WithBackoff(0, 0))
			limit, want := DefaultMaxAttempts+5, tc.runs
			if want == 0 {
				want = NoAttemptLimit
			}
			n, dead := deliveries(q, "x", Job{MaxAttempts: tc.job}, limit, want)
			if tc.runs == 0 {
				require.False(t, dead, "dead after %d deliveries", n)
				require.Equal(t, limit, n)
				return
			}
			require.True(t, dead, "alive after %d deliveries", n)
			require.Equal(t, tc.runs, n)
		})
	}
}
