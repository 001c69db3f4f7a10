package redisq

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// takeNow enqueues ids due now and takes them all in one batch.
func takeNow(t testing.TB, q *Queue, ids ...string) []*Message {
	t.Helper()
	var due time.Time
	for _, id := range ids {
		var err error
		due, err = q.EnqueueAfter(context.Background(), id, nil, 0)
		require.NoError(t, err)
	}
	// Due now means due at the first whole ms at or after Redis TIME: wait
	// for the last to be due, so that one claim takes them all.
	untilRedisTime(t, q.client, due)
	ms, err := q.TakeBatch(context.Background(), len(ids))
	require.NoError(t, err)
	require.Len(t, ms, len(ids))
	return ms
}

// listAll pages through state with pages of size limit and returns the ids.
func listAll(t testing.TB, q *Queue, state State, limit int, reverse bool) []string {
	t.Helper()
	var ids []string
	opt := ListOptions{Limit: limit, Reverse: reverse}
	for {
		p, err := q.List(context.Background(), state, opt)
		require.NoError(t, err)
		for _, it := range p.Items {
			require.Equal(t, state, it.State, it.ID)
			ids = append(ids, it.ID)
		}
		if p.Next < 0 {
			return ids
		}
		require.Equal(t, opt.Offset+int64(len(p.Items)), p.Next)
		opt.Offset = p.Next
	}
}

func TestListAndGetEveryState(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "insp", WithMaxAttempts(1), WithVisibilityTimeout(time.Minute))
	ctx := context.Background()
	now := redisNow(t, c).Truncate(time.Millisecond)

	// Seven scheduled items, due in reverse order of their ids.
	var sched []string
	for i := 6; i >= 0; i-- {
		id := fmt.Sprintf("s%d", i)
		require.NoError(t, q.Enqueue(ctx, id, []byte("payload-"+id), now.Add(time.Hour+time.Duration(i)*time.Minute)))
	}
	for i := 0; i <= 6; i++ {
		sched = append(sched, fmt.Sprintf("s%d", i))
	}
	// Three due items: one stays in flight, two die (max attempts 1).
	for _, id := range []string{"f", "d1", "d2"} {
		require.NoError(t, q.Enqueue(ctx, id, []byte(id+"!"), now.Add(-time.Second)))
	}
	ms, err := q.TakeBatch(ctx, 3)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	res, err := ms[1].NackWith(ctx, NackReason("bad input"))
	require.NoError(t, err)
	require.Equal(t, NackDeadLettered, res.Outcome)
	out, err := ms[2].DeadLetter(ctx, "poison")
	require.NoError(t, err)
	require.Equal(t, NackDeadLettered, out)
	audit(t, q)

	require.Equal(t, sched, listAll(t, q, StateScheduled, 3, false))
	rev := listAll(t, q, StateScheduled, 2, true)
	require.Equal(t, []string{"s6", "s5", "s4", "s3", "s2", "s1", "s0"}, rev)
	require.Equal(t, []string{"f"}, listAll(t, q, StateInFlight, 10, false))
	require.Equal(t, []string{"d1", "d2"}, listAll(t, q, StateDead, 10, false))

	p, err := q.List(ctx, StateScheduled, ListOptions{Offset: 5, Limit: 10})
	require.NoError(t, err)
	require.EqualValues(t, 7, p.Total)
	require.EqualValues(t, -1, p.Next)
	require.Len(t, p.Items, 2)
	require.False(t, p.Now.Before(now))
	it := p.Items[0]
	require.Equal(t, "s5", it.ID)
	require.Equal(t, now.Add(time.Hour+5*time.Minute), it.Due)
	require.Equal(t, 0, it.Attempts)
	require.Equal(t, len("payload-s5"), it.PayloadSize)
	require.Nil(t, it.Payload, "payload only on request")
	require.True(t, it.LeaseDeadline.IsZero())
	require.True(t, it.DiedAt.IsZero())
	require.False(t, it.Enqueued.Before(now))

	p, err = q.List(ctx, StateInFlight, ListOptions{Payloads: true})
	require.NoError(t, err)
	f := p.Items[0]
	require.Equal(t, []byte("f!"), f.Payload)
	require.Equal(t, 1, f.Attempts)
	require.Equal(t, ms[0].Deadline, f.LeaseDeadline)
	require.Equal(t, ms[0].Due, f.Due)
	require.False(t, f.Cancelled)

	p, err = q.List(ctx, StateDead, ListOptions{})
	require.NoError(t, err)
	require.Equal(t, "max attempts: bad input", p.Items[0].DeadReason)
	require.Equal(t, "poison", p.Items[1].DeadReason)
	require.False(t, p.Items[0].DiedAt.Before(ms[0].ClaimedAt))

	got, err := q.Get(ctx, "d2")
	require.NoError(t, err)
	require.Equal(t, p.Items[1].DiedAt, got.DiedAt)
	require.Equal(t, []byte("d2!"), got.Payload, "Get always has the payload")
	require.Equal(t, StateDead, got.State)
	_, err = q.Get(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)

	// Cancel marks the in-flight item; List shows it.
	co, err := q.Cancel(ctx, "f")
	require.NoError(t, err)
	require.Equal(t, CancelMarked, co)
	got, err = q.Get(ctx, "f")
	require.NoError(t, err)
	require.True(t, got.Cancelled)

	// Bad pages and states are refused before any command.
	for _, o := range []ListOptions{{Limit: -1}, {Limit: MaxPage + 1}, {Offset: -1}} {
		_, err = q.List(ctx, StateDead, o)
		require.Error(t, err, "%+v", o)
	}
	_, err = q.List(ctx, State(9), ListOptions{})
	require.Error(t, err)
	_, err = q.Get(ctx, "")
	require.Error(t, err)
	audit(t, q)
}

// Regression: List computed off + limit - 1 in Lua, and an offset of 1e17
// or more reached ZRANGE as "1e+17", a Redis error. Any offset >= 0 is a
// valid page: past the end it is empty with Next == -1.
func TestRegressionListHugeOffset(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "page")
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "x", nil, 0)
	require.NoError(t, err)
	for _, off := range []int64{1, 1e15, 1e17, math.MaxInt64 - 1000, math.MaxInt64} {
		for _, rev := range []bool{false, true} {
			p, err := q.List(ctx, StateScheduled, ListOptions{Offset: off, Limit: MaxPage, Reverse: rev})
			require.NoError(t, err, "offset %d is >= 0, so a valid page", off)
			require.Empty(t, p.Items)
			require.EqualValues(t, 1, p.Total)
			require.EqualValues(t, -1, p.Next)
		}
	}
	p, err := q.List(ctx, StateScheduled, ListOptions{Limit: MaxPage})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
}

func TestNackWithOutcomes(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "nackw", WithMaxAttempts(2), WithBackoff(time.Hour, time.Hour))
	ctx := context.Background()
	ms := takeNow(t, q, "a", "b")

	// First attempt: retried after the backoff, or after an explicit delay.
	r, err := ms[0].NackWith(ctx)
	require.NoError(t, err)
	require.Equal(t, NackRetried, r.Outcome)
	// Due an hour after the nack, which came after the claim (Redis TIME).
	require.False(t, r.Due.Before(ms[0].ClaimedAt.Add(time.Hour)), "due %v, claimed %v", r.Due, ms[0].ClaimedAt)
	require.Less(t, r.Due.Sub(ms[0].ClaimedAt), time.Hour+10*time.Second)
	r, err = ms[1].NackWith(ctx, NackDelay(0), NackReason("ignored: not dead"))
	require.NoError(t, err)
	require.Equal(t, NackRetried, r.Outcome)
	_, err = ms[1].NackWith(ctx)
	require.ErrorIs(t, err, ErrLeaseLost)

	// b again: second attempt of two, so the nack dead-letters it.
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "b", m.ID)
	r, err = m.NackWith(ctx)
	require.NoError(t, err)
	require.Equal(t, NackResult{Outcome: NackDeadLettered}, r)
	it, err := q.Get(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, "max attempts: nacked", it.DeadReason)

	// A cancelled in-flight item is dropped by Nack and by DeadLetter.
	ms = takeNow(t, q, "x", "y")
	for _, m := range ms {
		_, err = q.Cancel(ctx, m.ID)
		require.NoError(t, err)
	}
	r, err = ms[0].NackWith(ctx)
	require.NoError(t, err)
	require.Equal(t, NackDropped, r.Outcome)
	out, err := ms[1].DeadLetter(ctx, "")
	require.NoError(t, err)
	require.Equal(t, NackDropped, out)
	_, err = ms[1].DeadLetter(ctx, "")
	require.ErrorIs(t, err, ErrLeaseLost)

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: 4, Delivered: 5, Nacked: 4, DeadLettered: 1, Cancelled: 2}, st.StatsCounters)
	audit(t, q)
}

func TestStatsFieldsAndLateness(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "late")
	ctx := context.Background()

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{}, st.StatsCounters, "every counter is zero before anything happens")
	require.Zero(t, st.Lateness.Count())
	require.Len(t, st.Lateness.Counts, len(st.Lateness.Bounds)+1)
	require.Equal(t, time.Duration(0), st.Lateness.Quantile(0.99))

	// Due 3s and 2h ago by the Redis clock: lateness at least that.
	now := redisNow(t, c)
	require.NoError(t, q.Enqueue(ctx, "3s", nil, now.Add(-3*time.Second)))
	require.NoError(t, q.Enqueue(ctx, "2h", nil, now.Add(-2*time.Hour)))
	require.NoError(t, q.Enqueue(ctx, "now", nil, now))
	// "now" is due at now rounded up to the ms: wait for it, so that one
	// claim takes all three.
	untilRedisTime(t, c, ceilMS(now))
	ms, err := q.TakeBatch(ctx, 3)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	var sum time.Duration
	for _, m := range ms {
		sum += m.ClaimedAt.Sub(m.Due)
		require.NoError(t, m.Ack(ctx))
	}

	st, err = q.Stats(ctx)
	require.NoError(t, err)
	l := st.Lateness
	require.EqualValues(t, 3, l.Count())
	require.Equal(t, sum, l.Sum, "sum of claim time - due")
	bucket := func(d time.Duration) int {
		for i, b := range l.Bounds {
			if d <= b {
				return i
			}
		}
		return len(l.Bounds)
	}
	want := make([]int64, len(l.Counts))
	for _, m := range ms {
		want[bucket(m.ClaimedAt.Sub(m.Due))]++
	}
	require.Equal(t, want, l.Counts)
	require.EqualValues(t, 1, l.Counts[len(l.Bounds)], "2h late is above the last bound (1h)")
	require.Equal(t, time.Duration(-1), l.Quantile(1))
	require.Equal(t, l.Bounds[bucket(ms[1].ClaimedAt.Sub(ms[1].Due))], l.Quantile(0.5)) // the median is the item 3s late
	require.Equal(t, StatsCounters{Enqueued: 3, Delivered: 3, Acked: 3}, st.StatsCounters)
	require.EqualValues(t, 3, st.Counters["acked"], "the deprecated map still works")
}

// Regression: the lateness sum was an unbounded HINCRBY. Once it neared the
// int64 limit (about 144,000 deliveries of items due at time.Time{}), every
// claim that delivered something failed, after leasing the items. Now the
// lateness is recorded before any write and the sum saturates.
func TestRegressionLatenessSumOverflowWedgesClaims(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "latesum", WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	// The history of many very late deliveries: the sum is near the limit.
	require.NoError(t, c.HSet(ctx, q.db.Keys.Late, "sum", int64(math.MaxInt64-1e12)).Err())
	for _, id := range []string{"zero", "again"} {
		require.NoError(t, q.Enqueue(ctx, id, []byte("x"), time.Time{}))
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := q.Take(tctx)
		cancel()
		require.NoError(t, err, "Take of an item due at time.Time{}")
		require.NoError(t, m.Ack(ctx))
	}
	raw, err := c.HGet(ctx, q.db.Keys.Late, "sum").Int64()
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), raw, "the sum saturates")
	audit(t, q)
}

// Regression: Stats.OldestOverdue was 0 for any head due before 1970 (the
// script's "no head" sentinel was -1 and only scores >= 0 counted), and
// wrapped for a head due more than 292 years ago.
func TestRegressionOldestOverduePre1970AndOverflow(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "overdue")
	ctx := context.Background()
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.OldestOverdue, "no head")
	require.NoError(t, q.Enqueue(ctx, "1969", nil, time.Unix(-1, 0)))
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, st.Now.Sub(time.Unix(-1, 0)), st.OldestOverdue)
	require.NoError(t, q.Enqueue(ctx, "zero", nil, time.Time{}))
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Duration(math.MaxInt64), st.OldestOverdue, "saturated, not wrapped")
}

// Regression: Stats.Lateness.Sum was the stored millisecond sum times
// time.Millisecond, which wrapped for one delivery of an item due at
// time.Time{} (about 2025 years late). It saturates now.
func TestRegressionLatenessSumDurationOverflow(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "latedur")
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, "zero", []byte("x"), time.Time{}))
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Ack(ctx))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	raw, err := c.HGet(ctx, q.db.Keys.Late, "sum").Int64()
	require.NoError(t, err)
	require.Greater(t, raw, int64(math.MaxInt64/int64(time.Millisecond)))
	require.Equal(t, time.Duration(math.MaxInt64), st.Lateness.Sum)
	require.EqualValues(t, 1, st.Lateness.Count())
}

func TestDueHistogram(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "dueh")
	ctx := context.Background()
	now := redisNow(t, c)
	at := map[string]time.Duration{"o1": -time.Minute, "o2": 0, "a": 30 * time.Second, "b": 90 * time.Second,
		"c": 100 * time.Second, "d": 5 * time.Minute, "e": time.Hour}
	for id, d := range at {
		require.NoError(t, q.Enqueue(ctx, id, nil, now.Add(d)))
	}
	// o2 is due at now rounded up to the ms: overdue once Redis TIME is
	// there.
	untilRedisTime(t, c, ceilMS(now))
	h, err := q.DueHistogram(ctx, time.Minute, 3)
	require.NoError(t, err)
	require.Equal(t, time.Minute, h.Width)
	require.EqualValues(t, 2, h.Overdue)
	require.Equal(t, []int64{1, 2, 0}, h.Counts)
	require.EqualValues(t, 2, h.Later)
	for _, bad := range []struct {
		w time.Duration
		n int
	}{{0, 1}, {time.Second, 0}, {time.Second, MaxDueBuckets + 1}} {
		_, err = q.DueHistogram(ctx, bad.w, bad.n)
		require.Error(t, err)
	}
}

// Enqueued is derived from the member sequence (numbers taken minus those
// requeues took) and Delivered from the lateness histogram, so the hot
// paths write no counter of their own. Pin both across every path that
// takes a sequence number for an item already counted: Nack, lease expiry,
// Reschedule, Schedule replacing, RequeueDead; and across Destroy.
func TestStatsEnqueuedAndDeliveredAreDerivedExactly(t *testing.T) {
	ctx := context.Background()
	c := startRedis(t).client(t)
	q := newQueue(t, c, "derived", WithVisibilityTimeout(200*time.Millisecond), WithBackoff(0, 0))
	take2 := func() []*Message {
		t.Helper()
		var ms []*Message
		for len(ms) < 2 {
			got, err := q.TakeBatch(ctx, 2-len(ms))
			require.NoError(t, err)
			ms = append(ms, got...)
		}
		return ms
	}
	counters := func() StatsCounters {
		t.Helper()
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.StatsCounters
	}
	require.Equal(t, StatsCounters{}, counters(), "a queue never used")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Empty(t, st.Counters, "the deprecated map holds non-zero counters only")

	res, err := q.EnqueueMany(ctx, []EnqueueItem{{ID: "a"}, {ID: "b"}, {ID: "b"}, {ID: "c", After: time.Hour}})
	require.NoError(t, err)
	require.Len(t, res, 4)
	_, err = q.Schedule(ctx, "d", nil, time.Now().Add(time.Hour)) // new
	require.NoError(t, err)
	_, err = q.Schedule(ctx, "d", nil, time.Now().Add(2*time.Hour)) // replaces
	require.NoError(t, err)
	_, err = q.RescheduleAfter(ctx, "c", 3*time.Hour)
	require.NoError(t, err)
	require.ErrorIs(t, q.Enqueue(ctx, "a", nil, time.Now()), ErrDuplicate, "a duplicate is not counted")
	require.Equal(t, StatsCounters{Enqueued: 4, Rescheduled: 2}, counters())

	ms := take2()                               // a and b, due now
	require.NoError(t, ms[0].NackAfter(ctx, 0)) // a again
	out, err := ms[1].DeadLetter(ctx, "")       // b dead
	require.NoError(t, err)
	require.Equal(t, NackDeadLettered, out)
	require.NoError(t, q.RequeueDead(ctx, "b"))
	ms = take2() // a and b again
	// Let both leases expire: the next claim requeues and redelivers them.
	untilRedisTime(t, c, ms[1].Deadline.Add(time.Millisecond))
	ms = take2()
	for _, m := range ms {
		require.NoError(t, m.Ack(ctx))
	}
	require.Equal(t, StatsCounters{Enqueued: 4, Delivered: 6, Acked: 2, Nacked: 1, Expired: 2,
		DeadLettered: 1, Rescheduled: 2, Requeued: 1}, counters())
	audit(t, q)

	_, err = q.Destroy(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{}, counters(), "Destroy resets the counters")
	_, err = q.EnqueueAfter(ctx, "e", nil, time.Hour)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: 1}, counters())
}

// Regression: the sequence key was a string before Enqueued was derived
// from it; New upgrades such a queue so that nothing fails with WRONGTYPE
// and the counters carry on.
func TestRegressionNewUpgradesAStringSequence(t *testing.T) {
	c := startRedis(t).client(t)
	ctx := context.Background()
	p := "{dq:legacy}"
	// As the earlier version left it: 5 items enqueued, 2 of them left.
	require.NoError(t, c.Set(ctx, p+":seq", "1700000000000007", 0).Err())
	require.NoError(t, c.HSet(ctx, p+":stats", "enqueued", 5, "delivered", 3, "acked", 3).Err())
	q := newQueue(t, c, "legacy")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: 5, Acked: 3}, st.StatsCounters)
	_, err = q.EnqueueAfter(ctx, "a", nil, 0)
	require.NoError(t, err)
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, st.Enqueued)
	newQueue(t, c, "legacy") // nothing left to upgrade
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, st.Enqueued)
}
