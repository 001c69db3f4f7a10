package delayqueue_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// When an item is due: past and zero deadlines at once, never before its
// deadline, on the monotonic clock; extreme deadlines (zero, year 1, year
// 9999) never overflow the leader's timer.

func TestPastAndZeroDeadlinesAreDueAtOnce(t *testing.T) {
	q := dq.New[string]()
	offer(t, q, "zero", time.Time{})
	offer(t, q, "past", time.Now().Add(-time.Nanosecond))
	offer(t, q, "ancient", time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC))
	offer(t, q, "unix0", time.Unix(0, 0))
	got := q.DrainExpired(nil, 0)
	assert.ElementsMatch(t, []string{"zero", "past", "ancient", "unix0"}, got)
	assert.Equal(t, "zero", got[0], "the zero time is the earliest deadline")
}

func TestFarFutureDeadlineNeverOverflows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		y9999 := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
		offer(t, q, "far", y9999)
		offer(t, q, "year3000", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)) // beyond 292 years too
		offer(t, q, "soon", time.Now().Add(time.Second))

		_, ok := q.Poll()
		assert.False(t, ok, "nothing is due yet")
		v, at, ok := q.Peek()
		require.True(t, ok)
		assert.Equal(t, "soon", v)
		assert.True(t, at.Equal(time.Now().Add(time.Second)))

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		res := goTake(ctx, q)
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, "soon", r.v)

		// A taker waits on the far deadline without firing or spinning.
		res = goTake(ctx, q)
		synctest.Wait()
		w := q.Stats().Wakeups
		time.Sleep(100 * 365 * 24 * time.Hour)
		synctest.Wait()
		_, done := ready(res)
		assert.False(t, done, "a year-9999 item must not be due after 100 years")
		assert.Equal(t, w, q.Stats().Wakeups, "no wake-ups while nothing is due")

		_, at, ok = q.Peek()
		require.True(t, ok)
		assert.True(t, at.After(time.Now().Add(150*365*24*time.Hour)), "Peek deadline %v", at)
		cancel()
		r = <-res
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.Len(t, q.Drain(), 2)
	})
}

// Regression (found in review): time.Unix(math.MaxInt64, 0), a common
// "never", overflows time.Time's seconds from year 1, so time.Time orders
// it before now and the queue handed it out at once. It is now placed by
// its Unix seconds: never due, like the other far-future extremes.
func TestTimesBeyondTimeRangeAreNeverDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		defer q.Close()
		for name, at := range map[string]time.Time{
			"unix-maxint64":      time.Unix(math.MaxInt64, 0),
			"unix-maxint64-nsec": time.Unix(0, math.MaxInt64),
			"now+maxduration":    time.Now().Add(math.MaxInt64),
			"year-1e9":           time.Date(1_000_000_000, 1, 1, 0, 0, 0, 0, time.UTC),
		} {
			offer(t, q, name, at)
		}
		time.Sleep(100 * 365 * 24 * time.Hour)
		if got := q.DrainExpired(nil, 0); len(got) > 0 {
			t.Errorf("due after 100 years: %v", got)
		}
		assert.Equal(t, 4, q.Len())
	})
}

func TestDueExactlyAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		offer(t, q, 1, time.Now().Add(10*time.Millisecond))
		time.Sleep(10*time.Millisecond - time.Nanosecond)
		_, ok := q.Poll()
		assert.False(t, ok, "1ns before the deadline the item is not due")
		time.Sleep(time.Nanosecond)
		v, ok := q.Poll()
		assert.True(t, ok, "at the deadline the item is due")
		assert.Equal(t, 1, v)
	})
}

// timeLayout mirrors time.Time's representation, to build a time whose
// wall reading and monotonic reading disagree, as after a wall-clock step.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

// stepWall returns t with its wall clock moved by d (whole seconds) and its
// monotonic reading unchanged, or false if that is not possible.
func stepWall(t time.Time, d time.Duration) (time.Time, bool) {
	if unsafe.Sizeof(t) != unsafe.Sizeof(timeLayout{}) {
		return t, false
	}
	s := t
	p := (*timeLayout)(unsafe.Pointer(&s))
	const hasMonotonic = 1 << 63
	if p.wall&hasMonotonic == 0 {
		return t, false
	}
	p.wall += uint64(d/time.Second) << 30 // wall seconds live above 30 bits of nanoseconds
	// Check that s is what we meant: same monotonic instant, shifted wall.
	if s.Sub(t) != 0 || s.Round(0).Sub(t.Round(0)) != d {
		return t, false
	}
	return s, true
}

// TestDeadlinesCompareOnMonotonicClock uses deadlines whose wall reading
// has been stepped by an hour while their monotonic reading has not: the
// queue must go by the monotonic reading.
func TestDeadlinesCompareOnMonotonicClock(t *testing.T) {
	q := dq.New[string]()
	now := time.Now()
	wallAhead, ok1 := stepWall(now, time.Hour)
	later, ok2 := stepWall(now.Add(time.Hour), -2*time.Hour) // wall says an hour ago
	if !ok1 || !ok2 {
		t.Skip("cannot build a time.Time with disagreeing wall and monotonic readings")
	}
	offer(t, q, "wall-ahead-but-due", wallAhead)
	offer(t, q, "wall-behind-but-not-due", later)
	v, ok := q.Poll()
	require.True(t, ok, "a deadline due on the monotonic clock is due whatever its wall reading")
	assert.Equal(t, "wall-ahead-but-due", v)
	_, ok = q.Poll()
	assert.False(t, ok, "a deadline an hour away on the monotonic clock is not due, though its wall reading is past")
	_, at, ok := q.Peek()
	require.True(t, ok)
	assert.Equal(t, time.Hour, at.Sub(now), "Peek returns the deadline on the monotonic clock")
	assert.Len(t, q.Drain(), 1)
}

// TestRegressionZeroTimeOfferWhileLeaderSleeps pins a bug: an Offer with the
// zero time (documented "due at once") made while a leader sleeps re-arms the leader's timer with head.at-now, which overflows
// (MinInt64 - now) to ~292 years: the blocked Take never wakes.
func TestRegressionZeroTimeOfferWhileLeaderSleeps(t *testing.T) {
	for _, precise := range []bool{false, true} {
		var opts []dq.Option
		if precise {
			opts = append(opts, dq.WithPreciseTimer())
		}
		q := dq.New[int](opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		res := make(chan error, 1)
		go func() { _, err := q.Take(ctx); res <- err }()
		for q.Stats().Waiting == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
		if _, err := q.Offer(1, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := <-res; err != nil {
			t.Errorf("precise=%v: Take of a zero-time item: %v (len=%d)", precise, err, q.Len())
		}
		cancel()
		q.Close()
	}
}

// takeAfterHeadChange blocks a Take as the sleeping leader (head an hour
// away, or none), lets change move the head to a far-past deadline, and
// reports whether the Take then got an item within a minute of fake time.
func takeAfterHeadChange(t *testing.T, q *dq.Queue[int], what string, change func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := q.Take(ctx); res <- err }()
	time.Sleep(time.Second)
	synctest.Wait()
	change()
	synctest.Wait()
	if err := <-res; err != nil {
		t.Errorf("Take after %s: %v (len=%d)", what, err, q.Len())
	}
}

// Same through Reschedule and through an Offer of a year-1 deadline.
func TestRegressionZeroTimeRescheduleWhileLeaderSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		h, _ := q.Offer(1, time.Now().Add(time.Hour))
		takeAfterHeadChange(t, q, "Reschedule to zero time", func() { q.Reschedule(h, time.Time{}) })
	})
}

func TestRegressionFarPastOfferAfterWhileLeaderSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		takeAfterHeadChange(t, q, "Offer of a year-1 item", func() {
			q.Offer(1, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
		})
	})
}

// On Go 1.25 a goroutine receiving from a time.Timer that another goroutine
// Reset(0) inside a testing/synctest bubble is never woken
// (golang/go#76052). The leader's timer was re-armed with 0 whenever a new
// head was already due, so a user's synctest test with a blocked Take hung
// on Go 1.25 when it offered an item due now. A due head now wakes the
// leader with a token instead.
func TestRegressionDueOfferWakesLeaderInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		takeAfterHeadChange(t, q, "Offer of an item due now", func() { q.Offer(1, time.Now()) })
		h, _ := q.OfferAfter(2, time.Hour)
		takeAfterHeadChange(t, q, "Reschedule to now", func() { q.Reschedule(h, time.Now()) })
	})
}

// TestRegressionOutsideBubbleFarFutureSpins pins a bug: a queue created
// outside a synctest bubble, used inside it: now is negative (wall
// clock fallback), a year-9999 head gives d = MaxInt64 - now -> overflow ->
// negative -> the leader's timer fires at once, forever: a spin.
func TestRegressionOutsideBubbleFarFutureSpins(t *testing.T) {
	q := dq.New[int]()
	ctx, cancel := context.WithCancel(context.Background())
	_ = ctx.Done()                               // create the channel outside the bubble
	time.AfterFunc(300*time.Millisecond, cancel) // real time, outside the bubble
	synctest.Test(t, func(t *testing.T) {
		q.Offer(1, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
		_, err := q.Take(ctx)
		if err == nil {
			t.Fatal("took a year-9999 item")
		}
		if w := q.Stats().Wakeups; w > 2 {
			t.Errorf("Wakeups = %d while nothing was due (spin)", w)
		}
	})
}
