package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ids returns the ids of the scheduled items, in due order.
func scheduledIDs(t testing.TB, q *Queue) []string {
	t.Helper()
	page, err := q.List(context.Background(), StateScheduled, ListOptions{Limit: MaxPage})
	require.NoError(t, err)
	var out []string
	for _, it := range page.Items {
		out = append(out, it.ID)
	}
	return out
}

// Regression (issue 24, items 11 and 14's "Run now"): the dashboard's Run
// now was RescheduleAfter(id, 0), which put an overdue item behind every
// item due after it (rank 3,271 of 3,272) while saying "due now". RunNow
// never delays an item: an overdue one keeps its place.
func TestRunNowNeverDelays(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "runnow")
	ctx := context.Background()
	now := redisNow(t, c)
	for i, id := range []string{"a", "b", "c"} {
		require.NoError(t, q.Enqueue(ctx, id, []byte(id), now.Add(time.Duration(i-3)*time.Second)))
	}
	require.NoError(t, q.Enqueue(ctx, "later", nil, now.Add(time.Hour)))
	before, err := q.Get(ctx, "a")
	require.NoError(t, err)

	res, err := q.RunNow(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, RunNowAlreadyDue, res.Outcome)
	require.Equal(t, "a", res.ID)
	require.True(t, res.Due.Equal(before.Due), "due %v, was %v", res.Due, before.Due)
	require.Equal(t, []string{"a", "b", "c", "later"}, scheduledIDs(t, q), "the overdue item keeps its place")

	// A future item becomes due now: behind the ones already due, ahead of
	// those due later.
	require.NoError(t, q.Enqueue(ctx, "tomorrow", nil, now.Add(24*time.Hour)))
	res, err = q.RunNow(ctx, "tomorrow")
	require.NoError(t, err)
	require.Equal(t, RunNowMoved, res.Outcome)
	after := redisNow(t, c)
	require.False(t, res.Due.After(after), "due %v, after Redis TIME %v", res.Due, after)
	require.Equal(t, []string{"a", "b", "c", "tomorrow", "later"}, scheduledIDs(t, q))

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Rescheduled, "only the move counts as a reschedule")
	require.EqualValues(t, 0, st.Requeued)
	audit(t, q)
}

func TestRunNowDeadInFlightUnknown(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "runnow")
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "x", []byte("p"), 0)
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := q.Take(tctx)
	require.NoError(t, err)

	_, err = q.RunNow(ctx, "x")
	require.ErrorIs(t, err, ErrInFlight, "a consumer holds it")
	_, err = m.DeadLetter(ctx, "broken")
	require.NoError(t, err)

	res, err := q.RunNow(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, RunNowRequeued, res.Outcome)
	it, err := q.Get(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State)
	require.Zero(t, it.Attempts)
	require.Empty(t, it.DeadReason)
	require.False(t, it.Due.After(redisNow(t, c)))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Requeued, "a dead item run now counts as a requeue")

	_, err = q.RunNow(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = q.RunNow(ctx, "")
	require.Error(t, err)
	// An id shaped like an occurrence with no registration behind it is an
	// ordinary item.
	occ := OccurrenceID("none", redisNow(t, c).Add(time.Hour))
	require.NoError(t, q.Enqueue(ctx, occ, nil, redisNow(t, c).Add(time.Hour)))
	res, err = q.RunNow(ctx, occ)
	require.NoError(t, err)
	require.Equal(t, RunNowMoved, res.Outcome)
	require.Equal(t, occ, res.ID)
	audit(t, q)
}

// Regression (issue 24, item 1): Run now on a recurring occurrence
// (RescheduleAfter(id, 0)) ran it at once and then nothing ran at its
// time, while the tools showed that very occurrence as next. RunNow
// enqueues an extra run and keeps the schedule's.
func TestRunNowRecurringKeepsTheScheduledRun(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	keep(t, q)
	every := Every(4 * time.Second)
	first := redisNow(t, c).Add(3 * time.Second).Truncate(time.Millisecond)
	_, err := q.Register(ctx, "digest", every, []byte("p"), FirstAt(first))
	require.NoError(t, err)
	occ := OccurrenceID("digest", first)

	res, err := q.RunNow(ctx, occ)
	require.NoError(t, err)
	require.Equal(t, RunNowExtra, res.Outcome)
	require.NotEqual(t, occ, res.ID)
	name, at, ok := Occurrence(res.ID)
	require.True(t, ok && name == "digest", "the extra run %q is an occurrence of the registration", res.ID)
	require.True(t, at.Equal(res.Due), "named after its time: %v, due %v", at, res.Due)
	pending, err := q.Get(ctx, occ)
	require.NoError(t, err)
	require.True(t, pending.Due.Equal(first), "the occurrence stays at its time: %v", pending.Due)

	reg, err := q.Registration(ctx, "digest")
	require.NoError(t, err)
	require.True(t, reg.Next.Equal(first), "next %v, want the occurrence still to come %v", reg.Next, first)
	require.True(t, reg.Last.Equal(res.Due), "last %v, want the extra run %v", reg.Last, res.Due)

	got := consume(t, q, "digest", 3, 20*time.Second)
	require.Equal(t, res.ID, got[0].id, "the extra run first, at once")
	require.Equal(t, occ, got[1].id, "then the schedule's run")
	require.False(t, got[1].claimed.Before(first), "at its time, not before: claimed %v", got[1].claimed)
	requireConsecutive(t, every, got[1:])
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.Rescheduled)
}

// Rescheduling, cancelling or deleting the pending occurrence leaves the
// series going, and Next says which run comes next.
func TestRecurringNextAfterOperatorChanges(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	every := Every(4 * time.Second)
	// Each first occurrence is 3-7 s away, in the middle of a period: the
	// schedule's next after it is 2 s later.
	register := func(name string) time.Time {
		first := every.Next(redisNow(t, c).Add(3 * time.Second)).Add(2 * time.Second)
		_, err := q.Register(ctx, name, every, nil, FirstAt(first))
		require.NoError(t, err)
		return first
	}
	next := func(name string) (time.Time, time.Time) {
		r, err := q.Registration(ctx, name)
		require.NoError(t, err)
		return r.Next, r.Last
	}

	cancelled := register("cancelled")
	_, err := q.Cancel(ctx, OccurrenceID("cancelled", cancelled))
	require.NoError(t, err)
	n, l := next("cancelled")
	require.True(t, n.Equal(every.Next(cancelled)), "next %v: the one after the cancelled %v", n, cancelled)
	require.True(t, l.IsZero())

	later := register("later")
	require.NoError(t, q.Reschedule(ctx, OccurrenceID("later", later), later.Add(time.Second)))
	n, _ = next("later")
	require.True(t, n.Equal(later.Add(time.Second)), "next %v: the moved run, before the schedule's next", n)
	require.NoError(t, q.Reschedule(ctx, OccurrenceID("later", later), later.Add(time.Hour)))
	n, _ = next("later")
	require.True(t, n.Equal(every.Next(later)), "next %v: the schedule's, before the run moved an hour away", n)

	early := register("early")
	moved, err := q.RescheduleAfter(ctx, OccurrenceID("early", early), 0)
	require.NoError(t, err)
	untilRedisTime(t, c, moved.Add(time.Millisecond)) // until then it is next
	n, l = next("early")
	require.True(t, n.Equal(every.Next(early)), "next %v: the run moved early is not next", n)
	require.True(t, l.Equal(moved), "last %v: the run moved early (%v)", l, moved)

	// The keepers go on at the watermark: the series continues.
	keep(t, q)
	got := consume(t, q, "cancelled", 1, 20*time.Second)
	require.Equal(t, OccurrenceID("cancelled", every.Next(cancelled)), got[0].id)
	require.False(t, got[0].claimed.Before(got[0].at))
}
