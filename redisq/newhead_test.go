package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The queue-wide timer is owned by one Queue, which acts at its deadline:
// the earliest due item or lease deadline when its claim ran. Every call
// that makes the next event earlier than that deadline must make somebody
// act at the new time: a waiter woken through the marker, or the next Take
// of the owner claiming at once. These tests take the owner's Take away
// first (it gave up, leaving its Queue owning the timer for an item due in
// an hour) and give every consumer a wake cap of a minute, so a path that
// forgets the wake-up delivers a minute late instead of on time.

const newHeadCap = time.Minute

// ownFarTimer returns a queue whose Queue a owns the timer for an item due in
// an hour, after a Take of a that gave up.
func ownFarTimer(t *testing.T, name string, opts ...Option) (*server, *Queue) {
	t.Helper()
	s := startRedis(t)
	opts = append([]Option{WithWakeCap(newHeadCap), WithBackoff(time.Second, time.Second)}, opts...)
	a := newQueue(t, s.client(t), name, opts...)
	ctx := context.Background()
	_, err := a.EnqueueAfter(ctx, "far", nil, time.Hour)
	require.NoError(t, err)
	takeGivingUp(t, a, 300*time.Millisecond)
	return s, a
}

// takeWithin takes from q (with a generous timeout) and requires id, claimed
// less than slack after due by the Redis clock (a zero due: at any time).
func takeWithin(t *testing.T, q *Queue, id string, due time.Time, slack time.Duration) *Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), newHeadCap/2)
	defer cancel()
	m, err := q.Take(ctx)
	require.NoError(t, err, "no delivery of %s: the new head did not wake anybody", id)
	require.Equal(t, id, m.ID)
	if !due.IsZero() {
		require.False(t, m.ClaimedAt.Before(due), "early")
		require.Less(t, m.ClaimedAt.Sub(due), slack, "delivered late: the new head did not wake anybody")
	}
	return m
}

// The reproduction: a lease shortened by Extend expires before the
// owner's deadline; the item must come back after its backoff, not after a
// wake cap.
func TestRegressionShortenedLeaseWakesTimerOwner(t *testing.T) {
	for _, other := range []bool{false, true} {
		name := map[bool]string{false: "same Queue", true: "other Queue"}[other]
		t.Run(name, func(t *testing.T) {
			s, a := ownFarTimer(t, "shortlease")
			ctx := context.Background()
			_, err := a.EnqueueAfter(ctx, "x", nil, 0)
			require.NoError(t, err)
			m := takeWithin(t, a, "x", time.Time{}, 0)
			taker := a
			if other {
				taker = newQueue(t, s.client(t), "shortlease", WithWakeCap(newHeadCap))
			}
			require.NoError(t, m.Extend(ctx, 0))
			time.Sleep(20 * time.Millisecond)
			require.ErrorIs(t, m.Ack(ctx), ErrLeaseLost)
			// Expired now: back in the schedule after the 1s backoff.
			due := redisNow(t, s.client(t)).Add(time.Second)
			m = takeWithin(t, taker, "x", time.Time{}, 0)
			require.Less(t, m.ClaimedAt.Sub(due), 5*time.Second, "the expired lease waited for a wake cap")
			require.Equal(t, 2, m.Attempts)
			require.NoError(t, m.Ack(ctx))
			audit(t, a)
		})
	}
}

// A consumer already blocked on the marker (another process) when the lease
// is shortened must be woken for it too.
func TestRegressionShortenedLeaseWakesBlockedWaiter(t *testing.T) {
	s, a := ownFarTimer(t, "shortwait")
	ctx := context.Background()
	_, err := a.EnqueueAfter(ctx, "x", nil, 0)
	require.NoError(t, err)
	m := takeWithin(t, a, "x", time.Time{}, 0)
	b := newQueue(t, s.client(t), "shortwait", WithWakeCap(newHeadCap))
	got := takeAsync(func() (*Message, error) {
		c, cancel := context.WithTimeout(ctx, newHeadCap/2)
		defer cancel()
		return b.Take(c)
	})
	eventually(t, 5*time.Second, "b blocked", func() bool { return blockedClients(t, b) == 1 })
	start := redisNow(t, s.client(t))
	require.NoError(t, m.Extend(ctx, 0))
	r, ok := <-got
	require.True(t, ok, "b got nothing")
	require.Equal(t, "x", r.ID)
	require.Less(t, r.ClaimedAt.Sub(start), 6*time.Second, "the expired lease waited for a wake cap")
	require.NoError(t, r.Ack(ctx))
	audit(t, a)
}

// Every other call that can put an item before the owner's deadline.
func TestNewHeadWakesTimerOwner(t *testing.T) {
	const slack = 5 * time.Second
	ctx := context.Background()
	// dead makes x dead: taken once and dead-lettered.
	dead := func(t *testing.T, a *Queue) {
		_, err := a.EnqueueAfter(ctx, "x", []byte("p"), 0)
		require.NoError(t, err)
		m := takeWithin(t, a, "x", time.Time{}, 0)
		_, err = m.DeadLetter(ctx, "test")
		require.NoError(t, err)
	}
	// taken takes x and returns its message.
	taken := func(t *testing.T, a *Queue) *Message {
		_, err := a.EnqueueAfter(ctx, "x", []byte("p"), 0)
		require.NoError(t, err)
		return takeWithin(t, a, "x", time.Time{}, 0)
	}
	// scheduled enqueues x in ten minutes.
	scheduled := func(t *testing.T, a *Queue) {
		_, err := a.EnqueueAfter(ctx, "x", []byte("p"), 10*time.Minute)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		name string
		// act makes x due at the returned time, before the owner's deadline.
		act func(t *testing.T, a *Queue) time.Time
	}{
		{"EnqueueAfter", func(t *testing.T, a *Queue) time.Time {
			due, err := a.EnqueueAfter(ctx, "x", nil, time.Second)
			require.NoError(t, err)
			return due
		}},
		{"Nack", func(t *testing.T, a *Queue) time.Time {
			m := taken(t, a)
			require.NoError(t, m.Nack(ctx)) // 1s backoff
			it, err := a.Get(ctx, "x")
			require.NoError(t, err)
			return it.Due
		}},
		{"NackAfter", func(t *testing.T, a *Queue) time.Time {
			m := taken(t, a)
			require.NoError(t, m.NackAfter(ctx, 1500*time.Millisecond))
			it, err := a.Get(ctx, "x")
			require.NoError(t, err)
			return it.Due
		}},
		{"RescheduleAfter", func(t *testing.T, a *Queue) time.Time {
			scheduled(t, a)
			due, err := a.RescheduleAfter(ctx, "x", time.Second)
			require.NoError(t, err)
			return due
		}},
		{"Reschedule dead", func(t *testing.T, a *Queue) time.Time {
			dead(t, a)
			due, err := a.RescheduleAfter(ctx, "x", time.Second)
			require.NoError(t, err)
			return due
		}},
		{"ScheduleAfter new", func(t *testing.T, a *Queue) time.Time {
			r, err := a.ScheduleAfter(ctx, "x", nil, time.Second)
			require.NoError(t, err)
			return r.Due
		}},
		{"ScheduleAfter existing", func(t *testing.T, a *Queue) time.Time {
			scheduled(t, a)
			r, err := a.ScheduleAfter(ctx, "x", nil, time.Second)
			require.NoError(t, err)
			return r.Due
		}},
		{"RequeueDead", func(t *testing.T, a *Queue) time.Time {
			dead(t, a)
			require.NoError(t, a.RequeueDead(ctx, "x"))
			it, err := a.Get(ctx, "x")
			require.NoError(t, err)
			return it.Due
		}},
		{"RequeueAllDead", func(t *testing.T, a *Queue) time.Time {
			dead(t, a)
			n, err := a.RequeueAllDead(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			it, err := a.Get(ctx, "x")
			require.NoError(t, err)
			return it.Due
		}},
		{"EnqueueMany", func(t *testing.T, a *Queue) time.Time {
			r, err := a.EnqueueMany(ctx, []EnqueueItem{{ID: "x", After: time.Second}})
			require.NoError(t, err)
			require.NoError(t, r[0].Err)
			return r[0].Due
		}},
		{"Extend shorter", func(t *testing.T, a *Queue) time.Time {
			m := taken(t, a)
			require.NoError(t, m.Extend(ctx, 0))
			// Back in the schedule after the 1s backoff, once reclaimed.
			return redisNow(t, a.client).Add(time.Second)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, a := ownFarTimer(t, "newhead")
			due := c.act(t, a)
			m := takeWithin(t, a, "x", due.Add(-time.Second), slack)
			require.NoError(t, m.Ack(ctx))
			audit(t, a)
		})
	}
}
