package redisq

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// missed registers name hourly with its first occurrence hours ago (its
// item due at once), and lets a keeper enqueue the missed ones after it
// (CatchUp(hours), so all of them) and the first after now; it returns the
// ids of the scheduled occurrences, oldest first.
func missed(t *testing.T, q *Queue, name string, hours int, opts ...RegisterOption) []string {
	t.Helper()
	ctx := context.Background()
	first := redisNow(t, q.client).Truncate(time.Hour).Add(-time.Duration(hours) * time.Hour)
	_, err := q.Register(ctx, name, Every(time.Hour), []byte(name), append([]RegisterOption{FirstAt(first), CatchUp(hours)}, opts...)...)
	require.NoError(t, err)
	stop := keep(t, q)
	eventually(t, 10*time.Second, "the keeper catches up", func() bool { return len(scheduledOf(t, q, name)) >= hours+2 })
	stop()
	var ids []string
	for _, it := range scheduledOf(t, q, name) {
		ids = append(ids, it.ID)
	}
	return ids
}

// Under OverlapSkip, an occurrence claimed while an earlier one of the
// same registration is leased is deleted unstarted and counted, in the
// same claim as the earlier one's or a later one; once the earlier one is
// acked, the next runs. A registration without the policy runs them all.
func TestOverlapSkip(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "overlap")

	ids := missed(t, q, "allow", 2)
	got, ms := takeIDs(t, q, 10)
	require.Equal(t, ids[:3], got, "without the policy, every due occurrence runs")
	require.Empty(t, errsOf(q.AckMany(ctx, ms)))

	ids = missed(t, q, "skip", 3, Overlap(OverlapSkip))
	r, err := q.Registration(ctx, "skip")
	require.NoError(t, err)
	require.Equal(t, OverlapSkip, r.Overlap)
	got, ms = takeIDs(t, q, 10)
	require.Equal(t, ids[:1], got, "the first runs; those due with it are skipped in the same claim")
	r, err = q.Registration(ctx, "skip")
	require.NoError(t, err)
	require.EqualValues(t, 3, r.Skipped)
	require.Equal(t, ids[3], r.LastSkipped)
	require.Equal(t, SkipOverlap, r.LastSkipReason)
	for _, id := range ids[1:4] {
		_, err := q.Get(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, "%s skipped, deleted", id)
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, st.Counters["skipped"])

	// An occurrence due while the first still runs is skipped by a claim
	// of its own; once the first is acked, the next one runs.
	pend := occurrenceAt(t, q, "skip", -30*time.Minute)
	got, _ = takeIDs(t, q, 10)
	require.Empty(t, got, "%s overlaps the running one", pend)
	r, err = q.Registration(ctx, "skip")
	require.NoError(t, err)
	require.EqualValues(t, 4, r.Skipped)
	require.Equal(t, pend, r.LastSkipped)
	require.NoError(t, ms[0].Ack(ctx))
	pend = occurrenceAt(t, q, "skip", -20*time.Minute)
	got, ms = takeIDs(t, q, 10)
	require.Equal(t, []string{pend}, got, "nothing runs any more")
	require.NoError(t, ms[0].Ack(ctx))
	audit(t, q)
}

// occurrenceAt adds the item of registration name's occurrence at now+d,
// due then and carrying the registration's occurrence policy, as a keeper
// would have (it computes the id from an hourly schedule's first
// occurrence after now+d-1h, so that ids stay those of the schedule).
func occurrenceAt(t *testing.T, q *Queue, name string, d time.Duration) string {
	t.Helper()
	ctx := context.Background()
	r, err := q.Registration(ctx, name)
	require.NoError(t, err)
	at := redisNow(t, q.client).Add(d)
	id := OccurrenceID(name, at)
	_, err = q.Add(ctx, EnqueueItem{ID: id, At: at, Job: r.Job})
	require.NoError(t, err)
	op := occPolicy{overlap: r.Overlap, window: r.CatchUpWindow}.text()
	require.NoError(t, q.client.HSet(ctx, q.db.Keys.Item(id), "op", op).Err())
	return id
}

func errsOf(errs []error) []error {
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// A lease that expired does not count as running: the occurrence after
// it runs (and the expired one is retried, not skipped).
func TestOverlapSkipExpiredLease(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "overlap-exp", WithVisibilityTimeout(200*time.Millisecond), WithBackoff(time.Millisecond, time.Millisecond))
	ids := missed(t, q, "skip", 1, Overlap(OverlapSkip))
	got, ms := takeIDs(t, q, 1)
	require.Equal(t, ids[:1], got)
	untilRedisTime(t, c, ms[0].Deadline.Add(time.Millisecond))
	var all []string
	eventually(t, 10*time.Second, "both run", func() bool {
		got, ms := takeIDs(t, q, 10)
		all = append(all, got...)
		require.Empty(t, errsOf(q.AckMany(ctx, ms)))
		return len(all) >= 2
	})
	require.ElementsMatch(t, ids[:2], all)
	r, err := q.Registration(ctx, "skip")
	require.NoError(t, err)
	require.Zero(t, r.Skipped)
	audit(t, q)
}

// Under CatchUpWindow, an occurrence claimed more than the window after it
// became due is deleted unstarted and counted; the keeper's catch-up
// enqueues only the missed occurrences within the window.
func TestCatchUpWindow(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "window")
	before := redisNow(t, c)
	first := before.Truncate(time.Hour).Add(-10 * time.Hour)
	window := 150 * time.Minute
	_, err := q.Register(ctx, "w", Every(time.Hour), nil, FirstAt(first), CatchUpWindow(window))
	require.NoError(t, err)
	r, err := q.Registration(ctx, "w")
	require.NoError(t, err)
	require.Equal(t, window, r.CatchUpWindow)
	require.Equal(t, MaxCatchUp, r.CatchUp, "the window bounds the catch-up")
	stop := keep(t, q)
	eventually(t, 10*time.Second, "the keeper catches up", func() bool { return len(scheduledOf(t, q, "w")) > 1 })
	stop()
	after := redisNow(t, c)
	items := scheduledOf(t, q, "w")
	require.Equal(t, OccurrenceID("w", first), items[0].ID, "the first, 10 h late, waits for its claim")
	// Then the missed ones within the window of the keeper's clock, which
	// read between before and after.
	var want [][]string
	for _, now := range []time.Time{before, after} {
		var ids []string
		for o := Every(time.Hour).Next(now.Add(-window - time.Millisecond)); !o.After(now); o = o.Add(time.Hour) {
			ids = append(ids, OccurrenceID("w", o))
		}
		want = append(want, append(ids, OccurrenceID("w", Every(time.Hour).Next(now))))
	}
	var got []string
	for _, it := range items[1:] {
		got = append(got, it.ID)
	}
	require.Contains(t, want, got)

	// The first is claimed 10 h late: skipped. The others are within it.
	ids, ms := takeIDs(t, q, 10)
	require.Equal(t, got[:len(got)-1], ids)
	require.Empty(t, errsOf(q.AckMany(ctx, ms)))
	r, err = q.Registration(ctx, "w")
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Skipped)
	require.Equal(t, OccurrenceID("w", first), r.LastSkipped)
	require.Equal(t, SkipLate, r.LastSkipReason)
	audit(t, q)
}

// The window is measured at the claim: an occurrence claimed within it
// runs, and a retry runs whenever it comes.
func TestCatchUpWindowRetry(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "window-retry", WithBackoff(time.Millisecond, time.Millisecond))
	ids := missed(t, q, "w", 0, CatchUpWindow(2*time.Hour), FirstAt(redisNow(t, c).Add(-time.Hour)))
	got, ms := takeIDs(t, q, 10)
	require.Equal(t, ids[:1], got, "an hour late, within the window of 2")
	require.NoError(t, ms[0].NackAfter(ctx, 0))
	got, ms = takeIDs(t, q, 10)
	require.Equal(t, ids[:1], got, "its retry")
	require.NoError(t, ms[0].Ack(ctx))
	audit(t, q)
}

// The policies are part of the registration: a change is an update, the
// same ones unchanged, and an operator's RunNow of an occurrence runs it
// whatever they say.
func TestOccurrencePolicyRegisterAndRunNow(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "policy-reg")
	out, err := q.Register(ctx, "r", Every(time.Hour), nil)
	require.NoError(t, err)
	require.Equal(t, RegistrationCreated, out)
	out, err = q.Register(ctx, "r", Every(time.Hour), nil, Overlap(OverlapSkip))
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out)
	out, err = q.Register(ctx, "r", Every(time.Hour), nil, Overlap(OverlapSkip))
	require.NoError(t, err)
	require.Equal(t, RegistrationUnchanged, out)
	out, err = q.Register(ctx, "r", Every(time.Hour), nil, Overlap(OverlapSkip), CatchUpWindow(time.Minute))
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out)
	out, err = q.Register(ctx, "r", Every(time.Hour), nil)
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out)
	r, err := q.Registration(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, OverlapAllow, r.Overlap)
	require.Zero(t, r.CatchUpWindow)

	// Two occurrences due, the first running: the operator runs the
	// second now, and it runs beside the first.
	// The first is up to 2 h late, over the window.
	ids := missed(t, q, "s", 1, Overlap(OverlapSkip), CatchUpWindow(90*time.Minute))
	require.Len(t, ids, 3)
	_, err = q.RunNow(ctx, ids[0])
	require.NoError(t, err)
	_, err = q.RunNow(ctx, ids[1])
	require.NoError(t, err)
	got, ms := takeIDs(t, q, 10)
	require.Equal(t, ids[:2], got, "moved by the operator: neither late nor skipped")
	require.Empty(t, errsOf(q.AckMany(ctx, ms)))
	audit(t, q)
}

func TestOccurrencePolicyText(t *testing.T) {
	for _, p := range []occPolicy{{}, {overlap: OverlapSkip}, {window: time.Minute}, {overlap: OverlapSkip, window: 1500 * time.Microsecond}} {
		back := parseOccPolicy(p.text())
		want := p
		want.window = (p.window + time.Millisecond - 1).Truncate(time.Millisecond)
		require.Equal(t, want, back, "%q", p.text())
	}
	require.Equal(t, "", occPolicy{}.text())
	require.Equal(t, "1,60000", occPolicy{overlap: OverlapSkip, window: time.Minute}.text())
	require.Panics(t, func() { Overlap(OverlapPolicy(7)) })
	require.Panics(t, func() { CatchUpWindow(-time.Second) })
	require.Equal(t, "skip", OverlapSkip.String())
}

// Backfill enqueues the past occurrences of a range, before the
// watermark, due now in their order, with the registration's payload and
// job but none of its occurrence policy; those whose item exists are left.
func TestBackfill(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "backfill")
	_, err := q.Register(ctx, "b", Every(time.Hour), []byte("payload"), RegisterJob(Job{Kind: "report"}),
		Overlap(OverlapSkip), CatchUpWindow(time.Minute))
	require.NoError(t, err)
	r, err := q.Registration(ctx, "b")
	require.NoError(t, err)
	from, to := redisNow(t, c).Add(-5*time.Hour), r.Enqueued.Add(5*time.Hour)
	var want []string
	for o := Every(time.Hour).Next(from.Add(-time.Millisecond)); o.Before(r.Enqueued); o = o.Add(time.Hour) {
		want = append(want, OccurrenceID("b", o))
	}
	require.Len(t, want, 5)
	res, err := q.Backfill(ctx, "b", from, to)
	require.NoError(t, err)
	require.Equal(t, 5, res.Enqueued)
	require.Zero(t, res.Existing)
	res2, err := q.Backfill(ctx, "b", from, to)
	require.NoError(t, err)
	require.Equal(t, BackfillResult{Existing: 5, First: res.First, Last: res.Last}, res2, "called again: left as they are")

	// All run at once, in order, none skipped by the registration's
	// policy; the pending occurrence is not among them.
	got, ms := takeIDs(t, q, 10)
	require.Equal(t, want, got)
	for _, m := range ms {
		require.Equal(t, "payload", string(m.Payload))
		require.Equal(t, "report", m.Kind)
	}
	require.Empty(t, errsOf(q.AckMany(ctx, ms)))
	r, err = q.Registration(ctx, "b")
	require.NoError(t, err)
	require.Zero(t, r.Skipped)

	_, err = q.Backfill(ctx, "nope", from, to)
	require.ErrorIs(t, err, ErrNotFound)
	res, err = q.Backfill(ctx, "b", to, from)
	require.NoError(t, err)
	require.Equal(t, BackfillResult{}, res)
	_, err = q.Register(ctx, "fast", Every(time.Millisecond), nil)
	require.NoError(t, err)
	_, err = q.Backfill(ctx, "fast", from, to)
	require.ErrorContains(t, err, "more than MaxBackfill")
	require.Len(t, scheduledOf(t, q, "fast"), 1, "nothing enqueued")
	audit(t, q)
}

// A backfill of more than a script's batch goes in several scripts.
func TestBackfillPages(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "backfill-pages")
	_, err := q.Register(ctx, "m", Every(time.Minute), nil)
	require.NoError(t, err)
	r, err := q.Registration(ctx, "m")
	require.NoError(t, err)
	from := r.Enqueued.Add(-250 * time.Minute)
	res, err := q.Backfill(ctx, "m", from, r.Enqueued)
	require.NoError(t, err)
	require.Equal(t, 250, res.Enqueued)
	require.True(t, res.First.Equal(from))
	require.True(t, res.Last.Equal(r.Enqueued.Add(-time.Minute)))
	items := scheduledOf(t, q, "m")
	require.Len(t, items, 251)
	for i, it := range items[:250] {
		require.Equal(t, OccurrenceID("m", from.Add(time.Duration(i)*time.Minute)), it.ID, fmt.Sprint(i))
	}
	audit(t, q)
}

// Under OverlapSkip a retry counts as running: an occurrence due while
// an earlier one's retry is leased is skipped, even after a later
// occurrence that started meanwhile was acked.
func TestOverlapSkipRunningRetry(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "overlap-retry")
	ids := missed(t, q, "r", 1, Overlap(OverlapSkip))
	got, ms := takeIDs(t, q, 1)
	require.Equal(t, ids[:1], got)
	require.NoError(t, ms[0].NackAfter(ctx, 0)) // A waits for its retry: not running
	got, ms = takeIDs(t, q, 1)
	require.Equal(t, ids[1:2], got, "B runs while A waits for its retry")
	b := ms[0]
	got, ms = takeIDs(t, q, 1)
	require.Equal(t, ids[:1], got, "A's retry starts: retries are never skipped")
	retry := ms[0]
	require.NoError(t, b.Ack(ctx))
	pend := occurrenceAt(t, q, "r", -time.Minute)
	got, _ = takeIDs(t, q, 10)
	require.Empty(t, got, "%s overlaps A's retry", pend)
	r, err := q.Registration(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, pend, r.LastSkipped)
	require.NoError(t, retry.Ack(ctx))
	audit(t, q)
}

// The largest window is stored as it is (no overflow that would drop the
// policy), so Overlap still holds.
func TestCatchUpWindowHuge(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "window-huge")
	ids := missed(t, q, "h", 1, Overlap(OverlapSkip), CatchUpWindow(time.Duration(math.MaxInt64)))
	r, err := q.Registration(ctx, "h")
	require.NoError(t, err)
	require.Equal(t, time.Duration(math.MaxInt64).Truncate(time.Millisecond)+time.Millisecond, r.CatchUpWindow)
	got, ms := takeIDs(t, q, 10)
	require.Equal(t, ids[:1], got, "under OverlapSkip only the first of the due occurrences runs")
	require.Empty(t, errsOf(q.AckMany(ctx, ms)))
}

// The keeper's catch-up window is measured from when an occurrence is
// due, its jitter included: one whose jittered item is not even due yet
// is not dropped.
func TestKeeperPlanWindowJitter(t *testing.T) {
	sched := Jitter(Every(time.Hour), 50*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	occ1 := t0 + time.Hour.Milliseconds()
	now := t0 + 90*time.Minute.Milliseconds()
	name := ""
	for i := 0; name == ""; i++ {
		if n := "j" + strconv.Itoa(i); occurrenceDue(sched, n, occ1) > now {
			name = n
		}
	}
	k := &keeper{}
	occ, _, _, _, err := k.plan(&keptReg{name: name, sched: sched, catchUp: MaxCatchUp, window: (10 * time.Minute).Milliseconds(), at: t0}, now)
	require.NoError(t, err)
	require.Contains(t, occ, occ1, "due after now, within any window")
	// One due long before the window is dropped.
	occ, skip, hasSkip, _, err := k.plan(&keptReg{name: name, sched: sched, catchUp: MaxCatchUp, window: (10 * time.Minute).Milliseconds(), at: t0 - 10*time.Hour.Milliseconds()}, now)
	require.NoError(t, err)
	require.True(t, hasSkip)
	require.Less(t, skip, occ[0])
	for _, o := range occ[:len(occ)-1] {
		require.GreaterOrEqual(t, occurrenceDue(sched, name, o), now-(10*time.Minute).Milliseconds(), "%v kept", msTime(o))
	}
	// An occurrence after the window's start whose jittered item was due
	// before it is dropped too: only the first after now is enqueued.
	early := ""
	for i := 0; early == ""; i++ {
		if n := "e" + strconv.Itoa(i); occurrenceDue(sched, n, occ1) < now-(10*time.Minute).Milliseconds() {
			early = n
		}
	}
	occ, _, hasSkip, _, err = k.plan(&keptReg{name: early, sched: sched, catchUp: MaxCatchUp, window: (10 * time.Minute).Milliseconds(), at: t0 - 10*time.Hour.Milliseconds()}, now)
	require.NoError(t, err)
	require.True(t, hasSkip)
	require.Equal(t, []int64{t0 + 2*time.Hour.Milliseconds()}, occ)
}

// Backfill enqueues no occurrence that has not come, even when the
// watermark is ahead (FirstAt), and starts from 1970 at the earliest, so
// a zero from is a range too large, not an empty one.
func TestBackfillBounds(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "backfill-bounds")
	now := redisNow(t, c)
	_, err := q.Register(ctx, "f", Every(time.Hour), nil, FirstAt(now.Truncate(time.Hour).Add(5*time.Hour)))
	require.NoError(t, err)
	res, err := q.Backfill(ctx, "f", now.Add(-90*time.Minute), now.Add(10*time.Hour))
	require.NoError(t, err)
	want := 0
	for o := Every(time.Hour).Next(now.Add(-90*time.Minute - time.Millisecond)); !o.After(now); o = o.Add(time.Hour) {
		want++
	}
	require.Equal(t, want, res.Enqueued, "the occurrences of the last 90 minutes alone: %+v", res)
	require.False(t, res.Last.After(redisNow(t, c)))
	_, err = q.Backfill(ctx, "f", time.Time{}, now)
	require.ErrorContains(t, err, "more than MaxBackfill")
}

// The skipped occurrences are a counter of Stats, and the counters still
// add up: Enqueued == Acked + Cancelled + Deleted + Skipped + the items.
func TestSkippedCounter(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "skipped-counter")
	missed(t, q, "s", 2, Overlap(OverlapSkip))
	_, ms := takeIDs(t, q, 10)
	require.Len(t, ms, 1)
	require.NoError(t, ms[0].Ack(ctx))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Skipped)
	require.Equal(t, st.Enqueued, st.Acked+st.Cancelled+st.Deleted+st.Skipped+st.Scheduled+st.InFlight+st.Dead)
}

// A Backfill that re-creates the item of an occurrence which ran under
// OverlapSkip (its id still listed as running, its lease settled) does
// not make the next regular occurrence skip as overlapping: a backfilled
// run does not count, even under the id of one that did.
func TestOverlapSkipIgnoresBackfillUnderRunID(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "overlap-bf")
	ids := missed(t, q, "bf", 1, Overlap(OverlapSkip))
	for _, id := range ids[:2] { // the two past occurrences run one after the other
		got, ms := takeIDs(t, q, 1)
		require.Equal(t, []string{id}, got)
		require.NoError(t, ms[0].Ack(ctx))
	}
	r, err := q.Registration(ctx, "bf")
	require.NoError(t, err)
	_, first, ok := Occurrence(ids[0])
	require.True(t, ok)
	res, err := q.Backfill(ctx, "bf", first, r.Enqueued)
	require.NoError(t, err)
	require.Equal(t, 2, res.Enqueued, "both past occurrences again")
	got, backfilled := takeIDs(t, q, 2)
	require.Equal(t, ids[:2], got, "the backfilled runs")

	// The next regular occurrence comes due while both backfilled ones run.
	next := occurrenceAt(t, q, "bf", -time.Millisecond)
	got, ms := takeIDs(t, q, 1)
	require.Equal(t, []string{next}, got, "the regular occurrence runs beside the backfilled ones")
	r, err = q.Registration(ctx, "bf")
	require.NoError(t, err)
	require.Zero(t, r.Skipped, "skipped as %q", r.LastSkipReason)

	// And a regular occurrence that runs still makes the one after it skip.
	skipped := occurrenceAt(t, q, "bf", -time.Microsecond)
	got, _ = takeIDs(t, q, 1)
	require.Empty(t, got)
	r, err = q.Registration(ctx, "bf")
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Skipped)
	require.Equal(t, skipped, r.LastSkipped)
	require.Empty(t, errsOf(q.AckMany(ctx, append(backfilled, ms...))))
	audit(t, q)
}

// Across processes: two Workers keep and run a registration every 2 s
// under OverlapSkip; the regular runs return at once, and a Backfill of
// the occurrences that ran makes long runs (3 s each) under their ids,
// interleaved with the regular ones that come due meanwhile. No regular
// occurrence is skipped, and each runs once.
func TestOverlapSkipBackfillAcrossProcesses(t *testing.T) {
	s := startRedis(t, "--appendfsync", "no")
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "overlap-bfx")
	const period = 2 * time.Second
	_, err := q.Register(ctx, "bfx", Every(period), nil, Overlap(OverlapSkip))
	require.NoError(t, err)

	type run struct {
		id      string
		at, due time.Time
	}
	var mu sync.Mutex
	var runs []run
	for me := range 2 {
		_, sc := helperProcess(t, "recworker", "REDISQ_ADDR="+s.addr(), "REDISQ_QUEUE=overlap-bfx",
			"REDISQ_VIS=30s", "REDISQ_HOLD=3s", fmt.Sprintf("REDISQ_ME=%d", me))
		go func() {
			for sc.Scan() {
				f := fields(sc.Text())
				if len(f) == 4 && f[0] == "RAN" {
					at, _ := strconv.ParseInt(f[2], 10, 64)
					due, _ := strconv.ParseInt(f[3], 10, 64)
					mu.Lock()
					runs = append(runs, run{f[1], time.UnixMilli(at), time.UnixMilli(due)})
					mu.Unlock()
				}
			}
		}()
	}
	snapshot := func() []run {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(runs)
	}
	regular := func(rs []run) (out []run) {
		for _, r := range rs {
			if r.due.Sub(r.at) <= time.Second {
				out = append(out, r)
			}
		}
		return out
	}
	eventually(t, 30*time.Second, "three regular runs", func() bool { return len(regular(snapshot())) >= 3 })
	rs := regular(snapshot())
	slices.SortFunc(rs, func(a, b run) int { return a.at.Compare(b.at) })
	// The last two again, the one that ran last among them, whose id the
	// registration lists as running until a start drops it: their
	// backfilled runs are due over a second after their occurrences, so
	// they are told from regular ones.
	untilRedisTime(t, c, rs[2].at.Add(1100*time.Millisecond))
	bf, err := q.Backfill(ctx, "bfx", rs[1].at, rs[2].at.Add(time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, 2, bf.Enqueued)
	backfilledAt := redisNow(t, c)
	// The regular occurrences due while the backfilled runs last.
	eventually(t, 60*time.Second, "three regular runs after the backfill", func() bool {
		n := 0
		for _, r := range regular(snapshot()) {
			if r.at.After(backfilledAt) {
				n++
			}
		}
		return n >= 3
	})
	reg, err := q.Registration(ctx, "bfx")
	require.NoError(t, err)
	require.Zero(t, reg.Skipped, "a regular occurrence was skipped (%s, %q)", reg.LastSkipped, reg.LastSkipReason)
	seen := map[string]int{}
	longs := 0
	for _, r := range snapshot() {
		if r.due.Sub(r.at) > time.Second {
			longs++
			continue
		}
		seen[r.id]++
	}
	require.Equal(t, bf.Enqueued, longs, "every backfilled occurrence ran once")
	var prev time.Time
	rs = regular(snapshot())
	slices.SortFunc(rs, func(a, b run) int { return a.at.Compare(b.at) })
	for _, r := range rs {
		require.Equal(t, 1, seen[r.id], "%s ran %d times", r.id, seen[r.id])
		if !prev.IsZero() {
			require.Equal(t, period, r.at.Sub(prev), "a regular occurrence is missing before %s", r.id)
		}
		prev = r.at
	}
}
