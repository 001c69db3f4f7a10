package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// PauseRecurring cancels the pending occurrence (not yet due) and keeps
// the registration; Register meanwhile leaves it paused (unchanged, or
// with its new definition); ResumeRecurring enqueues the schedule's first
// occurrence after now. Both report when there was nothing to do, and
// ErrNotFound for an unknown name.
func TestPauseRecurring(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "recp")
	ctx := context.Background()
	_, err := q.Register(ctx, "hourly", Every(time.Hour), []byte("h"))
	require.NoError(t, err)
	require.Len(t, scheduledOf(t, q, "hourly"), 1)

	cancelled, err := q.PauseRecurring(ctx, "hourly")
	require.NoError(t, err)
	require.True(t, cancelled)
	require.Empty(t, scheduledOf(t, q, "hourly"))
	reg, err := q.Registration(ctx, "hourly")
	require.NoError(t, err)
	require.False(t, reg.Paused.IsZero())
	require.True(t, reg.Next.IsZero(), "a paused registration has no next run: %v", reg.Next)
	cancelled, err = q.PauseRecurring(ctx, "hourly")
	require.NoError(t, err)
	require.False(t, cancelled, "already paused")

	out, err := q.Register(ctx, "hourly", Every(time.Hour), []byte("h"))
	require.NoError(t, err)
	require.Equal(t, RegistrationUnchanged, out)
	out, err = q.Register(ctx, "hourly", Every(2*time.Hour), []byte("h2"))
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out)
	require.Empty(t, scheduledOf(t, q, "hourly"), "an update while paused enqueues nothing")
	reg, err = q.Registration(ctx, "hourly")
	require.NoError(t, err)
	require.False(t, reg.Paused.IsZero(), "an update keeps the pause")
	require.Equal(t, "every 2h0m0s", reg.Spec)

	before := redisNow(t, c)
	resumed, err := q.ResumeRecurring(ctx, "hourly")
	require.NoError(t, err)
	require.True(t, resumed)
	items := scheduledOf(t, q, "hourly")
	require.Len(t, items, 1)
	require.True(t, items[0].Due.Equal(Every(2*time.Hour).Next(before)), "due %v, want the first occurrence after the resume", items[0].Due)
	require.Equal(t, "h2", string(items[0].Payload))
	reg, err = q.Registration(ctx, "hourly")
	require.NoError(t, err)
	require.True(t, reg.Paused.IsZero())
	require.True(t, reg.Next.Equal(items[0].Due))
	resumed, err = q.ResumeRecurring(ctx, "hourly")
	require.NoError(t, err)
	require.False(t, resumed, "not paused")

	_, err = q.PauseRecurring(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = q.ResumeRecurring(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	audit(t, q)
}

// While a registration is paused its keepers enqueue nothing; once
// resumed they go on, each occurrence once, from the first after the
// resume.
func TestPauseRecurringStopsKeepers(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "recpk")
	ctx := context.Background()
	for range 2 {
		keep(t, newQueue(t, s.client(t), "recpk"))
	}
	_, err := q.Register(ctx, "tick", Every(time.Second), nil)
	require.NoError(t, err)
	consume(t, q, "tick", 2, 30*time.Second)
	_, err = q.PauseRecurring(ctx, "tick")
	require.NoError(t, err)
	// An occurrence already due when it paused may still be taken.
	for {
		tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		m, err := q.Take(tctx)
		cancel()
		if err != nil {
			break
		}
		require.NoError(t, m.Ack(ctx))
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	time.Sleep(2500 * time.Millisecond) // two occurrences and a half
	st2, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, st.Enqueued, st2.Enqueued, "occurrences enqueued while paused")
	require.Zero(t, st2.Scheduled)

	resumedAt := redisNow(t, c)
	_, err = q.ResumeRecurring(ctx, "tick")
	require.NoError(t, err)
	got := consume(t, q, "tick", 3, 30*time.Second)
	require.True(t, got[0].at.After(resumedAt), "first after the resume: %v, resumed at %v", got[0].at, resumedAt)
	requireConsecutive(t, Every(time.Second), got)
}
