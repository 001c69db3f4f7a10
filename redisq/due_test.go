package redisq

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	// The documented bounds: the first whole millisecond at or after Redis
	// TIME at the call + delay, and TIME at the call is between the two reads.
	require.False(t, due.Before(before.Add(delay)), "due %v before redis %v+delay", fmtUS(due), fmtUS(before))
	require.False(t, due.After(ceilMS(after.Add(delay))), "due %v after redis %v+delay rounded up", fmtUS(due), fmtUS(after))

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

// fmtUS formats a time to the microsecond, the resolution of Redis TIME.
func fmtUS(t time.Time) string { return t.UTC().Format("15:04:05.000000") }

// Regression (issue 8, item 3): the scripts truncated Redis TIME and the
// delay to whole milliseconds, so due times were up to ~2ms before TIME at
// the call + delay and a third to a half of the items were delivered that
// early. Every relative due time and lease deadline is now rounded up: at or
// after the Redis TIME read just before the call, plus the delay. The delays
// are not whole milliseconds (nor whole microseconds), so a truncation
// anywhere shows.
func TestRelativeDueTimesNeverBeforeRedisTimePlusDelay(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	const backoff = 1700*time.Microsecond + 1
	const vis = 30*time.Second + 300*time.Microsecond + 1
	q := newQueue(t, c, "roundup", WithBackoff(backoff, backoff), WithMaxAttempts(NoAttemptLimit), WithVisibilityTimeout(vis))
	ctx := context.Background()
	delays := []time.Duration{1, 999, 300 * time.Microsecond, time.Millisecond + 1, 1500 * time.Microsecond, 2*time.Millisecond - 1}
	const n = 240
	notBefore := map[string]time.Time{} // Redis TIME before the call + delay
	check := func(what string, got, floor time.Time) {
		t.Helper()
		require.False(t, got.Before(floor), "%s: %s is before Redis TIME at the call + delay = %s", what, fmtUS(got), fmtUS(floor))
	}
	// take leases every item due so far and checks each delivery's Due, and
	// its lease deadline against TIME before the claim + visibility timeout.
	take := func(k int) []*Message {
		t.Helper()
		var all []*Message
		for len(all) < k {
			before := redisNow(t, c)
			ms, err := q.TakeBatch(ctx, k-len(all))
			require.NoError(t, err)
			for _, m := range ms {
				check("Message.Due of "+m.ID, m.Due, notBefore[m.ID])
				check("Message.ClaimedAt of "+m.ID, m.ClaimedAt, notBefore[m.ID])
				check("Message.Deadline of "+m.ID, m.Deadline, before.Add(vis))
			}
			all = append(all, ms...)
		}
		return all
	}

	for i := range n {
		d, id := delays[i%len(delays)], strconv.Itoa(i)
		before := redisNow(t, c)
		due, err := q.EnqueueAfter(ctx, id, nil, d)
		require.NoError(t, err)
		check(fmt.Sprintf("EnqueueAfter(%v)", d), due, before.Add(d))
		notBefore[id] = before.Add(d)
	}
	ms := take(n)

	// Settle each delivery with NackAfter, Nack (backoff) or Extend.
	for i, m := range ms {
		d := delays[i%len(delays)]
		before := redisNow(t, c)
		switch i % 3 {
		case 0:
			require.NoError(t, m.NackAfter(ctx, d))
			notBefore[m.ID] = before.Add(d)
		case 1:
			require.NoError(t, m.Nack(ctx))
			notBefore[m.ID] = before.Add(backoff)
		case 2:
			require.NoError(t, m.Extend(ctx, vis+d))
			check(fmt.Sprintf("Extend(%v)", vis+d), m.Deadline, before.Add(vis+d))
			require.NoError(t, m.Ack(ctx))
		}
	}
	ms = take(n - n/3)

	// RescheduleAfter of scheduled items.
	for _, m := range ms {
		require.NoError(t, m.NackAfter(ctx, time.Hour))
	}
	for i, m := range ms {
		d := delays[i%len(delays)]
		before := redisNow(t, c)
		due, err := q.RescheduleAfter(ctx, m.ID, d)
		require.NoError(t, err)
		check(fmt.Sprintf("RescheduleAfter(%v)", d), due, before.Add(d))
		notBefore[m.ID] = before.Add(d)
	}
	for _, m := range take(len(ms)) {
		require.NoError(t, m.Ack(ctx))
	}
	audit(t, q)
}

// Enqueue and Reschedule round an absolute time up to the millisecond
// (UnixMilli truncated it: up to 1ms early).
func TestAbsoluteDueTimesRoundUpToTheMillisecond(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	q := newQueue(t, c, "roundat")
	ctx := context.Background()
	at := redisNow(t, c).Add(20 * time.Millisecond).Truncate(time.Millisecond).Add(time.Microsecond)
	require.NoError(t, q.Enqueue(ctx, "a", nil, at))
	require.NoError(t, q.Enqueue(ctx, "b", nil, at.Add(time.Hour)))
	require.NoError(t, q.Reschedule(ctx, "b", at.Add(time.Nanosecond)))
	for range 2 {
		m, err := q.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, at.Truncate(time.Millisecond).Add(time.Millisecond), m.Due, "%s: at %s", m.ID, fmtUS(at))
		require.False(t, m.ClaimedAt.Before(at))
		require.NoError(t, m.Ack(ctx))
	}
}

// Regression (issue 8, item 5): a due time of 1e17 ms or more (year
// 3,200,000) made the claim script pass the wait until it to SET PX as a
// Lua number, which Redis received as "1e+17" and rejected: every idle Take
// returned "ERR value is not an integer or out of range" and consumers looped
// on errors. Scores are now clamped, and the wait is capped and formatted as
// an integer, so even a score written before the clamp is harmless.
func TestFarFutureDueKeepsClaimsWorking(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "farfar", WithWakeCap(time.Second))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, "far", nil, time.Date(3200000, 1, 1, 0, 0, 0, 0, time.UTC)))
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A score of 3e17 as an older version stored it.
	require.NoError(t, c.ZAdd(ctx, q.db.Keys.Sched, redis.Z{Score: 3e17, Member: member(t, q, "far")}).Err())
	tctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Items due now are still delivered, the far one stays scheduled.
	_, err = q.EnqueueAfter(ctx, "now", nil, 0)
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "now", m.ID)
	require.NoError(t, m.Ack(ctx))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Scheduled)
	audit(t, q)
}

// member returns the zset member of item id.
func member(t testing.TB, q *Queue, id string) string {
	t.Helper()
	mem, err := q.client.HGet(context.Background(), q.db.Keys.Items+id, "mem").Result()
	require.NoError(t, err)
	return mem
}

// score returns item id's score in sched.
func score(t testing.TB, q *Queue, id string) int64 {
	t.Helper()
	sc, err := q.client.ZScore(context.Background(), q.db.Keys.Sched, member(t, q, id)).Result()
	require.NoError(t, err)
	return int64(sc)
}

// Regression (issue 8, item 5): Enqueue(ctx, id, p, time.Unix(math.MaxInt64,
// 0)) overflowed UnixMilli: the item was stored due in 1969 and delivered at
// once. Absolute times outside the range the scripts compute exactly (2^53-1
// ms either side of 1970) are clamped to it: a far-future time stays in the
// future (about year 287,396), a far-past time stays in the past.
func TestExtremeAbsoluteTimesAreClampedNotWrapped(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "extreme")
	ctx := context.Background()
	future := map[string]time.Time{
		"maxint":  time.Unix(math.MaxInt64, 999_999_999),
		"maxsec":  time.Unix(math.MaxInt64/1000, 0),
		"edge":    time.UnixMilli(maxDueMS + 1),
		"y3.2e6":  time.Date(3200000, 1, 1, 0, 0, 0, 0, time.UTC),
		"y287396": time.UnixMilli(maxDueMS).Add(-time.Microsecond),
	}
	for id, at := range future {
		require.NoError(t, q.Enqueue(ctx, id, nil, at))
		require.EqualValues(t, maxDueMS, score(t, q, id), id)
	}
	past := map[string]time.Time{
		"minint": time.Unix(math.MinInt64, 0),
		"minsec": time.Unix(math.MinInt64/1000, 0),
		"zero":   {},
	}
	for id, at := range past {
		require.NoError(t, q.Enqueue(ctx, id, nil, at))
	}
	// Reschedule clamps the same way.
	require.NoError(t, q.Reschedule(ctx, "y3.2e6", time.Unix(math.MinInt64, 1)))
	past["y3.2e6"] = time.Unix(math.MinInt64, 1)
	delete(future, "y3.2e6")
	require.NoError(t, q.Reschedule(ctx, "minsec", time.Unix(math.MaxInt64, 0)))
	delete(past, "minsec")
	future["minsec"] = time.Unix(math.MaxInt64, 0)
	require.EqualValues(t, maxDueMS, score(t, q, "minsec"))

	got := map[string]time.Time{}
	for len(got) < len(past) {
		m, err := q.Take(ctx)
		require.NoError(t, err)
		require.Contains(t, past, m.ID, "a far-future item was delivered (Due %v)", m.Due)
		got[m.ID] = m.Due
		require.NoError(t, m.Ack(ctx))
	}
	require.Equal(t, time.UnixMilli(minDueMS), got["minint"])
	require.Equal(t, time.UnixMilli(minDueMS), got["y3.2e6"])
	require.True(t, got["zero"].Equal(time.Time{}), "zero time due %v", got["zero"])
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "far-future items must stay scheduled")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(future), st.Scheduled)
	audit(t, q)
}

func TestDueMSRoundsUpAndClamps(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{time.UnixMilli(5), 5},
		{time.UnixMilli(5).Add(1), 6},
		{time.UnixMilli(5).Add(-1), 5},
		{time.UnixMilli(-5).Add(1), -4},
		{time.UnixMilli(-5).Add(-1), -5},
		{time.Time{}, time.Time{}.UnixMilli()},
		{time.UnixMilli(maxDueMS - 1).Add(1), maxDueMS},
		{time.UnixMilli(maxDueMS), maxDueMS},
		{time.UnixMilli(maxDueMS).Add(1), maxDueMS},
		{time.Unix(math.MaxInt64, 999_999_999), maxDueMS},
		{time.UnixMilli(minDueMS), minDueMS},
		{time.UnixMilli(minDueMS).Add(-1), minDueMS},
		{time.Unix(math.MinInt64, 0), minDueMS},
	} {
		require.Equal(t, c.want, dueMS(c.at), "dueMS(%v)", c.at)
	}
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{{-time.Hour, 0}, {0, 0}, {1, 1}, {time.Microsecond, 1}, {time.Microsecond + 1, 2}, {math.MaxInt64, math.MaxInt64/1000 + 1}} {
		require.Equal(t, c.want, delayUS(c.d), "delayUS(%v)", c.d)
	}
}

// Regression: a TakeBatch of a dozen items clamped to the earliest due time
// failed with "ERR value is not an integer" after leasing them (the claim's
// lateness sum passed 1e17 and reached HINCRBY as "1.08e+17"), leaving them
// leased to nobody.
func TestRegressionFarPastBatchClaimFails(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "farpast")
	ctx := context.Background()
	for i := range scriptBatch {
		require.NoError(t, q.Enqueue(ctx, fmt.Sprintf("p%d", i), nil, time.Unix(math.MinInt64/2, 0)))
	}
	ms, err := q.TakeBatch(ctx, scriptBatch)
	require.NoError(t, err)
	require.Len(t, ms, scriptBatch)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, scriptBatch, st.Lateness.Counts[len(st.Lateness.Bounds)])
	audit(t, q)
}

// Regression: dueMS compared whole seconds against the clamp bounds, so a
// time within a second of maxDueMS or minDueMS (yet representable) was
// clamped to the bound instead of stored to the millisecond.
func TestRegressionDueMSBoundaries(t *testing.T) {
	for _, ms := range []int64{maxDueMS - 999, maxDueMS - 500, maxDueMS - 1, minDueMS + 500, minDueMS + 1, minDueMS + 999, -1, 0, 1} {
		at := time.UnixMilli(ms)
		require.Equal(t, ms, dueMS(at), "UnixMilli(%d)", ms)
		require.Equal(t, ms+1, dueMS(at.Add(time.Microsecond)), "UnixMilli(%d)+1us rounds up", ms)
	}
	for _, at := range []time.Time{time.UnixMilli(maxDueMS).Add(time.Microsecond), time.UnixMilli(maxDueMS + 1), time.UnixMilli(maxDueMS + 1000)} {
		require.Equal(t, int64(maxDueMS), dueMS(at), "%v", at)
	}
	for _, at := range []time.Time{time.UnixMilli(minDueMS - 1), time.UnixMilli(minDueMS).Add(-time.Microsecond), time.UnixMilli(minDueMS - 1000), time.UnixMilli(minDueMS - 2000)} {
		require.Equal(t, int64(minDueMS), dueMS(at), "%v", at)
	}
	require.Equal(t, int64(minDueMS), dueMS(time.UnixMilli(minDueMS)))
}

// ceilMS rounds t up to the whole millisecond, as the scripts round due
// times and lease deadlines.
func ceilMS(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		return r.Add(time.Millisecond)
	}
	return t
}
