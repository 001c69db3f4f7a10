package delayqueue_test

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Recurring keys of Keyed (recurring.go) and the Every schedules
// (schedule.go).

// cronSchedule is github.com/robfig/cron/v3's Schedule, declared as it is
// there: its values are Schedules without an adapter.
type cronSchedule interface {
	// Next returns the next activation time, later than the given time.
	Next(time.Time) time.Time
}

var (
	_ dq.Schedule = cronSchedule(nil)
	_ dq.Schedule = dq.Every(time.Hour)
	_ dq.Schedule = dq.ScheduleFunc(nil)
)

// takeEntry takes one entry, failing the test on error.
func takeEntry[K comparable, V any](t testing.TB, k *dq.Keyed[K, V]) dq.KeyedEntry[K, V] {
	t.Helper()
	e, err := k.TakeEntry(t.Context())
	require.NoError(t, err)
	return e
}

// Every(time.Hour) fires on the hour, EveryPhase shifts it, and an
// occurrence is strictly after the time asked about, even on a boundary.
func TestEveryNext(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return tm
	}
	for _, c := range []struct {
		s    dq.Schedule
		t    string
		want string
	}{
		{dq.Every(time.Hour), "2026-03-05T14:20:00Z", "2026-03-05T15:00:00Z"},
		{dq.Every(time.Hour), "2026-03-05T14:00:00Z", "2026-03-05T15:00:00Z"}, // on a boundary: the next one
		{dq.Every(time.Hour), "2026-03-05T13:59:59.999999999Z", "2026-03-05T14:00:00Z"},
		{dq.Every(5 * time.Minute), "2026-03-05T14:21:30Z", "2026-03-05T14:25:00Z"},
		{dq.Every(24 * time.Hour), "2026-03-05T14:20:00+01:00", "2026-03-06T00:00:00Z"},
		{dq.EveryPhase(24*time.Hour, 9*time.Hour), "2026-03-05T08:00:00Z", "2026-03-05T09:00:00Z"},
		{dq.EveryPhase(24*time.Hour, 9*time.Hour), "2026-03-05T09:00:00Z", "2026-03-06T09:00:00Z"},
		{dq.EveryPhase(time.Hour, -15*time.Minute), "2026-03-05T14:50:00Z", "2026-03-05T15:45:00Z"},
		{dq.EveryPhase(time.Hour, 75*time.Minute), "2026-03-05T14:10:00Z", "2026-03-05T14:15:00Z"},
		// The Unix epoch is a Thursday: weeks run from Thursday 00:00 UTC,
		// and a phase of 4 days makes them run from Monday.
		{dq.Every(7 * 24 * time.Hour), "2026-03-05T14:00:00Z", "2026-03-12T00:00:00Z"},
		{dq.EveryPhase(7*24*time.Hour, 4*24*time.Hour), "2026-03-05T14:00:00Z", "2026-03-09T00:00:00Z"},
		// Before the epoch, and periods that do not divide a second.
		{dq.Every(time.Hour), "1969-12-31T22:30:00Z", "1969-12-31T23:00:00Z"},
		{dq.Every(1500 * time.Millisecond), "1970-01-01T00:00:01Z", "1970-01-01T00:00:01.5Z"},
		{dq.Every(1500 * time.Millisecond), "1969-12-31T23:59:58Z", "1969-12-31T23:59:58.5Z"},
		{dq.Every(1500 * time.Millisecond), "1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z"},
		{dq.Every(7), "1970-01-01T00:00:00.000000001Z", "1970-01-01T00:00:00.000000007Z"},
		// Far from the epoch (time.Time's nanoseconds overflow int64 there).
		{dq.Every(time.Hour), "0001-01-01T00:30:00Z", "0001-01-01T01:00:00Z"},
		{dq.Every(time.Hour), "9999-12-31T22:59:59Z", "9999-12-31T23:00:00Z"},
		{dq.Every(time.Duration(math.MaxInt64)), "2026-03-05T14:20:00Z", "2262-04-11T23:47:16.854775807Z"},
	} {
		got := c.s.Next(at(c.t))
		assert.True(t, got.Equal(at(c.want)), "%v.Next(%s) = %v, want %s", c.s, c.t, got, c.want)
	}

	// The result keeps the location of t, and t's monotonic reading moves
	// with it (so a queue compares it on the monotonic clock).
	inParis := at("2026-03-05T14:20:00Z").In(paris)
	next := dq.Every(time.Hour).Next(inParis)
	assert.Equal(t, paris, next.Location())
	now := time.Now()
	next = dq.Every(time.Second).Next(now)
	assert.Contains(t, next.String(), "m=+", "monotonic reading kept")
	assert.True(t, next.After(now) && next.Sub(now) <= time.Second)

	// The zero Interval, and a negative Period, never recur.
	assert.True(t, dq.Interval{}.Next(now).IsZero())
	assert.True(t, dq.Interval{Period: -time.Second}.Next(now).IsZero())
	assert.Equal(t, "every 1h0m0s", dq.Every(time.Hour).String())
	assert.Equal(t, "every 24h0m0s, phase 9h0m0s", dq.EveryPhase(24*time.Hour, 9*time.Hour).String())
	assert.PanicsWithValue(t, "delayqueue: Every with a non-positive period 0s", func() { dq.Every(0) })
	assert.PanicsWithValue(t, "delayqueue: Every with a non-positive period -1s", func() { dq.EveryPhase(-time.Second, 0) })

	// Next allocates nothing.
	iv := dq.EveryPhase(time.Minute, time.Second)
	assert.Zero(t, testing.AllocsPerRun(100, func() { now = iv.Next(now) }))
}

// Interval.Next against exact big-integer arithmetic, over the whole range
// of time.Time and of periods and phases.
func TestEveryNextExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sec := rapid.OneOf(
			rapid.Int64Range(-1e11, 1e11),                // years -1200..5100
			rapid.Int64Range(-62135596800, 253402300799), // years 1..9999
			rapid.Int64Range(-1<<40, 1<<40),              // far beyond
		).Draw(t, "sec")
		nsec := rapid.Int64Range(0, 999999999).Draw(t, "nsec")
		period := rapid.OneOf(
			rapid.Int64Range(1, 10),
			rapid.Int64Range(1, int64(48*time.Hour)),
			rapid.Int64Range(1, math.MaxInt64),
		).Draw(t, "period")
		phase := rapid.Int64().Draw(t, "phase")
		tm := time.Unix(sec, nsec).UTC()

		got := dq.EveryPhase(time.Duration(period), time.Duration(phase)).Next(tm)

		// want = n + (period - (n - phase) mod period), in nanoseconds
		// since the epoch.
		n := new(big.Int).Add(new(big.Int).Mul(big.NewInt(sec), big.NewInt(1e9)), big.NewInt(nsec))
		p := big.NewInt(period)
		r := new(big.Int).Sub(n, big.NewInt(phase))
		r.Mod(r, p) // Euclidean: in [0, p)
		want := new(big.Int).Add(n, new(big.Int).Sub(p, r))
		gotNs := new(big.Int).Add(new(big.Int).Mul(big.NewInt(got.Unix()), big.NewInt(1e9)), big.NewInt(int64(got.Nanosecond())))
		if gotNs.Cmp(want) != 0 {
			t.Fatalf("EveryPhase(%d, %d).Next(%v) = %v (%v ns), want %v ns", period, phase, tm, got, gotNs, want)
		}
	})
}

// The key is never absent between occurrences: right after an occurrence
// is handed out, Get shows the next one and Cancel stops the series.
func TestRecurringKeyNeverAbsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, string]()
		defer k.Close()
		start := time.Now() // 2000-01-01 00:00 UTC in the bubble: on the minute
		replaced, err := k.ScheduleRecurring("sweep", "retry failed payments", dq.Every(time.Minute))
		require.NoError(t, err)
		assert.False(t, replaced)
		_, at, ok := k.Get("sweep")
		require.True(t, ok)
		assert.Equal(t, time.Minute, at.Sub(start), "first occurrence: Next(now), strictly after now")

		for i := 1; i <= 3; i++ {
			e := takeEntry(t, k)
			assert.Equal(t, "sweep", e.Key)
			assert.Equal(t, "retry failed payments", e.Value)
			assert.Equal(t, time.Duration(i)*time.Minute, e.Deadline.Sub(start), "occurrence %d", i)
			assert.Equal(t, time.Duration(i)*time.Minute, time.Since(start), "handed out on time, never early")
			assert.Equal(t, dq.Every(time.Minute), e.Schedule)
			v, next, ok := k.Get("sweep")
			require.True(t, ok, "the key is queued again before Take returns")
			assert.Equal(t, "retry failed payments", v)
			assert.Equal(t, time.Duration(i+1)*time.Minute, next.Sub(start))
			assert.True(t, k.Contains("sweep"))
			assert.Equal(t, 1, k.Len())
		}

		// Cancel right after a Take stops the series.
		_, _, err = k.Take(t.Context())
		require.NoError(t, err)
		v, ok := k.Cancel("sweep")
		require.True(t, ok)
		assert.Equal(t, "retry failed payments", v)
		assert.False(t, k.Contains("sweep"))
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		_, _, err = k.Take(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "nothing recurs after Cancel")

		s := k.Stats()
		assert.Equal(t, uint64(5), s.Offered, "the insert and each next occurrence")
		assert.Equal(t, uint64(4), s.Taken)
		assert.Equal(t, uint64(1), s.Removed)
		assert.Equal(t, s.Offered, s.Taken+s.Removed+s.Drained+uint64(s.Len))
		assert.Equal(t, s.Taken, s.Lateness.Count)
		assert.Zero(t, s.Lateness.Max, "every occurrence handed out on time")
		assert.NoError(t, dq.CheckKeyed(k))
	})
}

// Regression guard for the contract "there is never a moment when the key
// is absent", on the real clock: while consumers take a recurring key's
// occurrences as fast as they come, a watcher calling Contains and Get
// never finds it missing, and no occurrence is handed out twice or early.
func TestRecurringKeyNeverAbsentConcurrently(t *testing.T) {
	k := dq.NewKeyed[string, int]()
	defer k.Close()
	_, err := k.ScheduleRecurring("tick", 0, dq.Every(50*time.Microsecond))
	require.NoError(t, err)
	_, err = k.ScheduleRecurring("tock", 1, dq.EveryPhase(70*time.Microsecond, 10*time.Microsecond), dq.CatchUp(3))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	var seen sync.Map // key and occurrence -> true
	var taken atomic.Int64
	var wg sync.WaitGroup
	note := func(e dq.KeyedEntry[string, int]) {
		if now := time.Now(); now.Before(e.Deadline) {
			t.Errorf("%s: occurrence %v handed out early, at %v", e.Key, e.Deadline, now)
		}
		if _, dup := seen.LoadOrStore(fmt.Sprint(e.Key, e.Deadline.UnixNano()), true); dup {
			t.Errorf("%s: occurrence %v handed out twice", e.Key, e.Deadline)
		}
		taken.Add(1)
	}
	for range 3 {
		wg.Go(func() {
			for {
				e, err := k.TakeEntry(ctx)
				if err != nil {
					return
				}
				note(e)
			}
		})
	}
	wg.Go(func() { // batches: the same key never twice for one occurrence
		buf := make([]dq.Item[string, int], 0, 4)
		for ctx.Err() == nil {
			buf = k.DrainExpired(buf[:0], 0)
			if n := len(buf); n > 0 {
				taken.Add(int64(n))
			}
			time.Sleep(30 * time.Microsecond)
		}
	})
	missing := 0
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		for _, key := range []string{"tick", "tock"} {
			if !k.Contains(key) {
				missing++
			}
			if _, _, ok := k.Get(key); !ok {
				missing++
			}
		}
	}
	cancel()
	wg.Wait()
	assert.Zero(t, missing, "a recurring key was absent between occurrences")
	assert.Positive(t, taken.Load())
	assert.Equal(t, 2, k.Len())
	assert.NoError(t, dq.CheckKeyed(k))
	s := k.Stats()
	assert.Equal(t, s.Offered, s.Taken+s.Removed+s.Drained+uint64(s.Len))
}

// A consumer busy for longer than the period gets one occurrence for
// everything it missed (coalescing, the default), then the first after
// now; with CatchUp(n), the missed ones one by one, up to n, then the
// same.
func TestRecurringMissedOccurrences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		defer k.Close()
		start := time.Now()
		since := func(e dq.KeyedEntry[string, int]) time.Duration { return e.Deadline.Sub(start) }
		_, err := k.ScheduleRecurring("coalesce", 1, dq.Every(time.Minute))
		require.NoError(t, err)
		_, err = k.ScheduleRecurring("catchup", 2, dq.EveryPhase(time.Minute, time.Second),
			dq.CatchUp(2), dq.FirstAt(start.Add(time.Minute+time.Second)))
		require.NoError(t, err)

		time.Sleep(5*time.Minute + 30*time.Second) // the consumer was busy
		e := takeEntry(t, k)
		assert.Equal(t, "coalesce", e.Key)
		assert.Equal(t, time.Minute, since(e), "the occurrence queued, for all of 1m..5m")
		_, next, _ := k.Get("coalesce")
		assert.Equal(t, 6*time.Minute, next.Sub(start), "the first occurrence after now")

		var got []time.Duration
		for range 3 {
			e := takeEntry(t, k)
			require.Equal(t, "catchup", e.Key)
			assert.Equal(t, 2, e.CatchUp)
			got = append(got, since(e))
		}
		assert.Equal(t, []time.Duration{
			time.Minute + time.Second, 2*time.Minute + time.Second, 3*time.Minute + time.Second,
		}, got, "the one queued, then two missed ones, oldest first")
		_, next, _ = k.Get("catchup")
		assert.Equal(t, 6*time.Minute+time.Second, next.Sub(start), "then 4m1s and 5m1s coalesced")
		_, _, ok := k.Poll()
		assert.False(t, ok, "nothing else due")

		// Back on time, CatchUp starts afresh for the next stall.
		time.Sleep(time.Minute)
		assert.Equal(t, "coalesce", takeEntry(t, k).Key)
		assert.Equal(t, 6*time.Minute+time.Second, since(takeEntry(t, k)))
		time.Sleep(10 * time.Minute)
		got = got[:0]
		for _, it := range k.DrainExpired(nil, 0) { // one batch: catch-up occurrences queued due come in it
			if it.Key == "catchup" {
				got = append(got, 0)
			}
		}
		assert.Len(t, got, 3, "one queued + CatchUp(2) in one DrainExpired")
		_, next, _ = k.Get("catchup")
		assert.Equal(t, 17*time.Minute+time.Second, next.Sub(start))
	})
}

// Replacing, rescheduling, cancelling and adding work on a recurring key
// as on any key.
func TestRecurringReplaceAndReschedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		defer k.Close()
		start := time.Now()
		_, err := k.ScheduleRecurring("a", 1, dq.Every(time.Minute))
		require.NoError(t, err)

		// Add and AddRecurring leave a queued key be.
		added, err := k.Add("a", 2, start)
		require.NoError(t, err)
		assert.False(t, added)
		added, err = k.AddRecurring("a", 3, dq.Every(time.Second))
		require.NoError(t, err)
		assert.False(t, added)
		v, at, _ := k.Get("a")
		assert.Equal(t, 1, v)
		assert.Equal(t, time.Minute, at.Sub(start))

		// Reschedule moves the occurrence queued; the series goes on from it.
		require.True(t, k.Reschedule("a", start.Add(90*time.Second)))
		e := takeEntry(t, k)
		assert.Equal(t, 90*time.Second, e.Deadline.Sub(start))
		_, at, _ = k.Get("a")
		assert.Equal(t, 2*time.Minute, at.Sub(start))

		// ScheduleRecurring replaces the series (value, schedule, occurrence).
		replaced, err := k.ScheduleRecurring("a", 4, dq.Every(10*time.Second), dq.CatchUp(1))
		require.NoError(t, err)
		assert.True(t, replaced)
		e = takeEntry(t, k)
		assert.Equal(t, 4, e.Value)
		assert.Equal(t, 100*time.Second, e.Deadline.Sub(start))
		assert.Equal(t, dq.Every(10*time.Second), e.Schedule)
		assert.Equal(t, 1, e.CatchUp)

		// Schedule replaces it with a one-shot item: the series ends.
		replaced, err = k.Schedule("a", 5, start.Add(2*time.Minute))
		require.NoError(t, err)
		assert.True(t, replaced)
		e = takeEntry(t, k)
		assert.Equal(t, 5, e.Value)
		assert.Nil(t, e.Schedule)
		assert.False(t, k.Contains("a"), "a one-shot item leaves for good")

		// A one-shot key becomes recurring.
		_, err = k.Schedule("b", 6, start.Add(time.Hour))
		require.NoError(t, err)
		replaced, err = k.ScheduleRecurring("b", 7, dq.Every(time.Minute))
		require.NoError(t, err)
		assert.True(t, replaced)
		_, at, _ = k.Get("b")
		assert.Equal(t, 3*time.Minute, at.Sub(start))
		takeEntry(t, k)
		assert.True(t, k.Contains("b"))

		// Put replaces too.
		replaced, err = k.Put(t.Context(), "b", 8, start)
		require.NoError(t, err)
		assert.True(t, replaced)
		assert.Equal(t, 8, takeEntry(t, k).Value)
		assert.False(t, k.Contains("b"))
		assert.Zero(t, k.Len())
		assert.NoError(t, dq.CheckKeyed(k))
	})
}

// A series ends when Next returns the zero time: the key leaves with its
// last occurrence. A schedule with no occurrence at all is refused.
func TestRecurringSeriesEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		defer k.Close()
		start := time.Now()
		// Three occurrences, a second apart.
		three := dq.ScheduleFunc(func(t time.Time) time.Time {
			next := start.Add(t.Sub(start).Truncate(time.Second) + time.Second)
			if next.Sub(start) > 3*time.Second {
				return time.Time{}
			}
			return next
		})
		_, err := k.ScheduleRecurring("three", 0, three)
		require.NoError(t, err)
		var got []time.Duration
		for range 3 {
			e := takeEntry(t, k)
			assert.NotNil(t, e.Schedule, "the last occurrence still names its schedule")
			got = append(got, e.Deadline.Sub(start))
		}
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, got)
		assert.False(t, k.Contains("three"))
		assert.Zero(t, k.Len())

		never := dq.ScheduleFunc(func(time.Time) time.Time { return time.Time{} })
		replaced, err := k.ScheduleRecurring("never", 0, never)
		assert.ErrorIs(t, err, dq.ErrNoOccurrence)
		assert.False(t, replaced)
		_, err = k.Schedule("x", 1, start.Add(time.Hour))
		require.NoError(t, err)
		_, err = k.ScheduleRecurring("x", 2, dq.Interval{})
		assert.ErrorIs(t, err, dq.ErrNoOccurrence)
		v, _, _ := k.Get("x")
		assert.Equal(t, 1, v, "nothing changes")

		// Errors and panics of ScheduleRecurring itself.
		assert.PanicsWithValue(t, "delayqueue: ScheduleRecurring with a nil Schedule", func() {
			k.ScheduleRecurring("y", 0, nil)
		})
		assert.PanicsWithValue(t, "delayqueue: CatchUp with a negative bound -1", func() { dq.CatchUp(-1) })
		stuck := dq.ScheduleFunc(func(t time.Time) time.Time { return t })
		assert.Panics(t, func() { k.ScheduleRecurring("y", 0, stuck) })
		assert.False(t, k.Contains("y"))

		full := dq.NewKeyed[string, int](dq.WithCapacity(1))
		defer full.Close()
		_, err = full.Schedule("a", 0, start.Add(time.Hour))
		require.NoError(t, err)
		_, err = full.ScheduleRecurring("b", 0, dq.Every(time.Second))
		assert.ErrorIs(t, err, dq.ErrFull)
		replaced, err = full.ScheduleRecurring("a", 0, dq.Every(time.Second))
		require.NoError(t, err, "replacing needs no room")
		assert.True(t, replaced)
		full.Close()
		_, err = full.ScheduleRecurring("a", 0, dq.Every(time.Second))
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = full.AddRecurring("c", 0, dq.Every(time.Second))
		assert.ErrorIs(t, err, dq.ErrClosed)
	})
}

// Snapshot, DrainEntries and Shutdown return recurring keys with their
// schedules, and Restore resumes each series: an occurrence missed while
// the process was down is handed out once, then the series goes on.
func TestRecurringSnapshotShutdownRestore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		k := dq.NewKeyed[string, string]()
		_, err := k.ScheduleRecurring("digest", "send", dq.EveryPhase(24*time.Hour, 9*time.Hour))
		require.NoError(t, err)
		_, err = k.ScheduleRecurring("sweep", "retry", dq.Every(5*time.Minute), dq.CatchUp(3))
		require.NoError(t, err)
		_, err = k.Schedule("once", "remind", start.Add(time.Hour))
		require.NoError(t, err)

		snap := k.Snapshot()
		require.Len(t, snap, 3)
		assert.Equal(t, dq.KeyedEntry[string, string]{Key: "sweep", Value: "retry", Deadline: start.Add(5 * time.Minute),
			Schedule: dq.Every(5 * time.Minute), CatchUp: 3}, snap[0])
		assert.Equal(t, dq.KeyedEntry[string, string]{Key: "once", Value: "remind", Deadline: start.Add(time.Hour)}, snap[1])
		assert.Equal(t, dq.KeyedEntry[string, string]{Key: "digest", Value: "send", Deadline: start.Add(9 * time.Hour),
			Schedule: dq.EveryPhase(24*time.Hour, 9*time.Hour)}, snap[2])

		// Shutdown with a worker: due occurrences are handed out (each
		// queuing the next) until nothing is due, then everything comes back.
		time.Sleep(12 * time.Minute)
		worker := make(chan []string)
		go func() {
			var got []string
			for key := range k.Consume(t.Context()) {
				got = append(got, key)
			}
			worker <- got
		}()
		synctest.Wait()
		rest, err := k.Shutdown(t.Context())
		require.NoError(t, err)
		assert.Equal(t, []string{"sweep", "sweep"}, <-worker, "5m and 10m, caught up")
		require.Len(t, rest, 3)
		assert.Equal(t, "sweep", rest[0].Key)
		assert.Equal(t, 15*time.Minute, rest[0].Deadline.Sub(start))
		assert.Equal(t, dq.Every(5*time.Minute), rest[0].Schedule)
		assert.Equal(t, 3, rest[0].CatchUp)
		assert.Equal(t, "digest", rest[2].Key)
		assert.NotNil(t, rest[2].Schedule)
		assert.Zero(t, dq.KeyedIndexLen(k))

		// Down for two hours, then restored: "sweep" missed 24 occurrences
		// and gets the one queued plus CatchUp(3); "once" is due.
		time.Sleep(2 * time.Hour)
		r := dq.NewKeyed[string, string]()
		defer r.Close()
		for _, e := range rest {
			replaced, err := r.Restore(e)
			require.NoError(t, err)
			assert.False(t, replaced)
		}
		sweeps := 0
		for _, it := range r.DrainExpired(nil, 0) {
			if it.Key == "sweep" {
				sweeps++
			}
		}
		assert.Equal(t, 4, sweeps)
		_, next, _ := r.Get("sweep")
		assert.Equal(t, 2*time.Hour+15*time.Minute, next.Sub(start), "the first occurrence after now")
		assert.False(t, r.Contains("once"), "the one-shot key was handed out")
		_, next, _ = r.Get("digest")
		assert.Equal(t, 9*time.Hour, next.Sub(start), "not due yet: where it was")

		// AddRecurring at start-up keeps a restored series as it is.
		added, err := r.AddRecurring("digest", "send", dq.EveryPhase(24*time.Hour, 9*time.Hour))
		require.NoError(t, err)
		assert.False(t, added)

		// DrainEntries returns the schedules too and ends the series.
		es := r.DrainEntries()
		require.Len(t, es, 2)
		assert.NotNil(t, es[0].Schedule)
		assert.NotNil(t, es[1].Schedule)
		assert.Zero(t, r.Len())
		_, err = r.Schedule("sweep", "once more", time.Now())
		require.NoError(t, err)
		e := takeEntry(t, r)
		assert.Nil(t, e.Schedule, "a key reusing a drained series' slot is one-shot")
		assert.False(t, r.Contains("sweep"))

		// A negative CatchUp from a decoded file is an error, not a panic.
		bad := rest[0]
		bad.CatchUp = -1
		_, err = r.Restore(bad)
		assert.ErrorContains(t, err, "negative CatchUp")
	})
}

// TakeBatch and DrainExpired hand out at most what is due when they start:
// a recurring key's next occurrence waits for the next call, so a batch
// ends however short the period, on the real clock too.
func TestRecurringBatchEnds(t *testing.T) {
	k := dq.NewKeyed[int, int]()
	for key := range 4 {
		_, err := k.ScheduleRecurring(key, key, dq.Every(1), dq.FirstAt(time.Now()))
		require.NoError(t, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			got := k.DrainExpired(nil, 0)
			seen := map[int]bool{}
			for _, it := range got {
				assert.False(t, seen[it.Key], "key %d twice in one batch", it.Key)
				seen[it.Key] = true
			}
			got, err := k.TakeBatch(t.Context(), nil, 0)
			assert.NoError(t, err)
			assert.LessOrEqual(t, len(got), 4)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		// Not Close: a batch that never ends holds the lock.
		t.Fatal("a batch over a 1 ns period did not end")
	}
	assert.Equal(t, 4, k.Len())
	k.Close()
}

// A Schedule whose Next panics (or returns a time not after its argument)
// while the queue holds its lock: the series ends, the occurrence stays
// queued as a one-shot item, the call handing it out panics with a
// delayqueue: message, and the queue goes on working.
func TestRecurringNextPanics(t *testing.T) {
	type keyed = dq.Keyed[string, int]
	for _, c := range []struct {
		name  string
		stuck bool // Next returns its argument instead of panicking
		take  func(ctx context.Context, k *keyed)
	}{
		{"Take", false, func(ctx context.Context, k *keyed) { k.Take(ctx) }},
		{"TakeEntry", true, func(ctx context.Context, k *keyed) { k.TakeEntry(ctx) }},
		{"Poll", false, func(_ context.Context, k *keyed) { k.Poll() }},
		{"TakeBatch", false, func(ctx context.Context, k *keyed) { k.TakeBatch(ctx, nil, 0) }},
		{"DrainExpired", true, func(_ context.Context, k *keyed) { k.DrainExpired(nil, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				bad := dq.ScheduleFunc(func(t time.Time) time.Time {
					if calls++; calls == 1 { // the first occurrence, from ScheduleRecurring
						return t.Add(time.Second)
					}
					if c.stuck {
						return t
					}
					panic("boom")
				})
				want := "panicked: boom"
				if c.stuck {
					want = "not after it"
				}
				k := dq.NewKeyed[string, int]()
				defer k.Close()
				_, err := k.ScheduleRecurring("k", 7, bad)
				require.NoError(t, err)
				time.Sleep(time.Second)
				requireRecurringPanic(t, want, func() { c.take(t.Context(), k) })
				assert.Equal(t, 2, calls)

				// Not locked; the occurrence is still there, one-shot now.
				_, at, ok := k.Get("k")
				require.True(t, ok, "the occurrence stays queued")
				assert.False(t, at.After(time.Now()))
				key, v, err := k.Take(t.Context())
				require.NoError(t, err)
				assert.Equal(t, "k", key)
				assert.Equal(t, 7, v)
				assert.False(t, k.Contains("k"), "the series ended")
				assert.Equal(t, 2, calls)
				s := k.Stats()
				assert.Equal(t, s.Offered, s.Taken+s.Removed+s.Drained+uint64(s.Len))
				assert.Equal(t, s.Taken, s.Lateness.Count)
				assert.NoError(t, dq.CheckKeyed(k))
			})
		})
	}

	// A batch already holding items returns them; the next call panics.
	t.Run("batch", func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		defer k.Close()
		boom := dq.ScheduleFunc(func(time.Time) time.Time { panic("boom") })
		_, err := k.ScheduleRecurring("bad", 1, boom, dq.FirstAt(time.Now())) // Next not called yet
		require.NoError(t, err)
		_, err = k.Schedule("good", 2, time.Now().Add(-time.Second))
		require.NoError(t, err)
		assert.Equal(t, []dq.Item[string, int]{{Key: "good", Value: 2}}, k.DrainExpired(nil, 0))
		assert.True(t, k.Contains("bad"))
		requireRecurringPanic(t, "panicked: boom", func() { k.DrainExpired(nil, 0) })
		assert.Equal(t, []dq.Item[string, int]{{Key: "bad", Value: 1}}, k.DrainExpired(nil, 0))
		assert.Zero(t, k.Len())
	})
}

// requireRecurringPanic fails unless f panics with the delayqueue: message
// of a failed Next, containing want.
func requireRecurringPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		msg, _ := recover().(string)
		assert.True(t, strings.HasPrefix(msg, "delayqueue: recurring key "), "panic %q", msg)
		assert.Contains(t, msg, want)
		assert.Contains(t, msg, "the series ends")
	}()
	f()
}

// A blocked taker (the leader, on the queue's timer) gets each occurrence
// exactly when it falls due; followers take turns; nothing is handed out
// twice.
func TestRecurringBlockedTakers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		defer k.Close()
		start := time.Now()
		type took struct {
			occurrence, at time.Duration
		}
		results := make(chan took, 100)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for {
					e, err := k.TakeEntry(ctx)
					if err != nil {
						return
					}
					results <- took{e.Deadline.Sub(start), time.Since(start)}
				}
			})
		}
		synctest.Wait()
		_, err := k.ScheduleRecurring("r", 0, dq.Every(time.Second))
		require.NoError(t, err)
		time.Sleep(10*time.Second + time.Millisecond)
		cancel()
		wg.Wait()
		close(results)
		var got []took
		for r := range results {
			got = append(got, r)
		}
		require.Len(t, got, 10)
		for i, r := range got {
			assert.Equal(t, took{time.Duration(i+1) * time.Second, time.Duration(i+1) * time.Second}, r)
		}
		s := k.Stats()
		assert.LessOrEqual(t, s.Wakeups, uint64(2*10+2+3), "one wake-up per occurrence, plus hand-offs")
	})
}

// Recurring hand-outs, TakeEntry included, allocate nothing.
func TestRecurringAllocatesNothing(t *testing.T) {
	k := dq.NewKeyed[int, int]()
	defer k.Close()
	past := time.Now().Add(-time.Hour)
	for key := range 8 {
		_, err := k.ScheduleRecurring(key, key, dq.Every(time.Hour), dq.FirstAt(past))
		require.NoError(t, err)
	}
	_, err := k.Schedule(100, 0, past)
	require.NoError(t, err)
	ctx := context.Background()
	key := 0
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := k.Schedule(100, 0, past); err != nil {
			panic(err)
		}
		e, err := k.TakeEntry(ctx)
		if err != nil {
			panic(err)
		}
		k.Reschedule(key%8, past) // due again
		key++
		_ = e
		k.Poll()
	})
	assert.Zero(t, allocs)
}

// Regression: the first occurrence came from Next(time.Now()), whose wall
// and monotonic readings are taken apart, and landed nanoseconds off an
// Interval's grid on the queue's clock (and off the next occurrence by
// other than the period). Every occurrence is now exactly on the grid.
func TestRecurringOccurrencesOnTheGrid(t *testing.T) {
	k := dq.NewKeyed[int, int]()
	defer k.Close()
	for i, p := range []time.Duration{time.Hour, 24 * time.Hour, 7 * time.Millisecond, time.Millisecond} {
		_, err := k.ScheduleRecurring(i, 0, dq.Every(p))
		require.NoError(t, err)
		_, at, _ := k.Get(i)
		assert.Zero(t, at.UnixNano()%int64(p), "Every(%v): first occurrence %v", p, at)
	}
	for range 20 {
		e := takeEntry(t, k)
		_, next, _ := k.Get(e.Key)
		p := e.Schedule.(dq.Interval).Period
		assert.Zero(t, e.Deadline.UnixNano()%int64(p), "occurrence %v", e.Deadline)
		assert.Zero(t, next.UnixNano()%int64(p), "next occurrence %v", next)
	}
}

// BenchmarkRecurringPoll: the cost of a recurring hand-out (the hook, one
// Next and moving the node) against the one-shot equivalent, a Schedule of
// the key again plus a Poll. 1,000 keys, all due: the recurring ones are
// Every(1ns) series far behind with an unbounded CatchUp, so each hand-out
// queues the next occurrence due at once.
//
//	go test -run '^$' -bench BenchmarkRecurringPoll -count 6 .
func BenchmarkRecurringPoll(b *testing.B) {
	const n = 1000
	past := time.Now().Add(-time.Hour)
	b.Run("op=recurring", func(b *testing.B) {
		k := dq.NewKeyed[int, int64]()
		defer k.Close()
		for i := range n {
			_, err := k.ScheduleRecurring(i, 0, dq.Every(1), dq.FirstAt(past.Add(time.Duration(i))), dq.CatchUp(math.MaxInt))
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok := k.Poll(); !ok {
				b.Fatal("Poll found nothing due")
			}
		}
	})
	b.Run("op=oneshot", func(b *testing.B) {
		k := dq.NewKeyed[int, int64]()
		defer k.Close()
		for i := range n {
			if _, err := k.Schedule(i, 0, past.Add(time.Duration(i))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		at := past.Add(n)
		for b.Loop() {
			key, _, ok := k.Poll()
			if !ok {
				b.Fatal("Poll found nothing due")
			}
			at = at.Add(1)
			if _, err := k.Schedule(key, 0, at); err != nil {
				b.Fatal(err)
			}
		}
	})
}
