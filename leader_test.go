package delayqueue_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ---------------------------------------------------------------------------
// helpers

func offer[T any](t testing.TB, q *dq.Queue[T], v T, at time.Time) dq.Handle {
	t.Helper()
	h, err := q.Offer(v, at)
	require.NoError(t, err)
	return h
}

func pollAll[T any](q *dq.Queue[T]) []T {
	var out []T
	for {
		v, ok := q.Poll()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

type result[T any] struct {
	v   T
	err error
	at  time.Time // when the call returned
}

// goTake runs q.Take(ctx) in a new goroutine and delivers its result.
func goTake[T any](ctx context.Context, q *dq.Queue[T]) <-chan result[T] {
	ch := make(chan result[T], 1)
	go func() {
		v, err := q.Take(ctx)
		ch <- result[T]{v, err, time.Now()}
	}()
	return ch
}

func goTakeBatch[T any](ctx context.Context, q *dq.Queue[T], max int) <-chan result[[]T] {
	ch := make(chan result[[]T], 1)
	go func() {
		v, err := q.TakeBatch(ctx, nil, max)
		ch <- result[[]T]{v, err, time.Now()}
	}()
	return ch
}

func goPut[T any](ctx context.Context, q *dq.Queue[T], v T, at time.Time) <-chan result[dq.Handle] {
	ch := make(chan result[dq.Handle], 1)
	go func() {
		h, err := q.Put(ctx, v, at)
		ch <- result[dq.Handle]{h, err, time.Now()}
	}()
	return ch
}

// ready reports whether ch has a value, without blocking. Call it after
// synctest.Wait.
func ready[T any](ch <-chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

func checkAccounting[T any](t testing.TB, q *dq.Queue[T]) {
	t.Helper()
	s := q.Stats()
	assert.Equal(t, s.Offered, s.Taken+s.Removed+s.Drained+uint64(s.Len),
		"Offered == Taken + Removed + Drained + Len: %+v", s)
	assert.NoError(t, dq.CheckQueue(q))
}

// ---------------------------------------------------------------------------
// API basics

func TestNewNegativeCapacityPanics(t *testing.T) {
	defer func() {
		r := recover()
		require.NotNil(t, r, "New(WithCapacity(-1)) must panic")
		msg := fmt.Sprint(r)
		assert.True(t, strings.HasPrefix(msg, "delayqueue:"), "panic message %q", msg)
	}()
	dq.New[int](dq.WithCapacity(-1))
}

func TestZeroCapacityIsUnbounded(t *testing.T) {
	q := dq.New[int](dq.WithCapacity(0))
	for i := range 1000 {
		_, err := q.Offer(i, time.Time{})
		require.NoError(t, err)
	}
	assert.Equal(t, 1000, q.Len())
	_, err := q.Put(context.Background(), 1, time.Time{})
	assert.NoError(t, err)
}

func TestZeroHandleRefersToNothing(t *testing.T) {
	q := dq.New[string]()
	h := offer(t, q, "a", time.Time{})
	assert.NotEqual(t, dq.Handle{}, h)

	_, ok := q.Remove(dq.Handle{})
	assert.False(t, ok)
	assert.False(t, q.Reschedule(dq.Handle{}, time.Now()))
	assert.Equal(t, 1, q.Len())

	// Handles are comparable: usable as map keys, equal only to themselves.
	h2 := offer(t, q, "b", time.Time{})
	m := map[dq.Handle]string{h: "a", h2: "b"}
	assert.Len(t, m, 2)
	assert.Equal(t, "a", m[h])
}

func TestHandleFromAnotherQueueRejected(t *testing.T) {
	q1 := dq.New[string]()
	q2 := dq.New[string]()
	h1 := offer(t, q1, "one", time.Time{})
	h2 := offer(t, q2, "two", time.Time{})
	// Both items sit in the first slot of their queue's table; only the
	// queue identity tells the handles apart.
	assert.NotEqual(t, h1, h2)

	_, ok := q2.Remove(h1)
	assert.False(t, ok, "q2 must reject a handle issued by q1")
	assert.False(t, q2.Reschedule(h1, time.Now().Add(time.Hour)))
	v, ok := q2.Poll()
	assert.True(t, ok, "q2's own item must still be there and due")
	assert.Equal(t, "two", v)

	v, ok = q1.Remove(h1)
	assert.True(t, ok)
	assert.Equal(t, "one", v)
}

func TestStaleHandleAfterSlotReuse(t *testing.T) {
	far := time.Now().Add(time.Hour)
	for _, leave := range []string{"Remove", "Poll", "Take", "TakeBatch", "DrainExpired", "Drain"} {
		t.Run(leave, func(t *testing.T) {
			q := dq.New[string]()
			old := offer(t, q, "old", time.Time{})
			switch leave {
			case "Remove":
				_, ok := q.Remove(old)
				require.True(t, ok)
			case "Poll":
				_, ok := q.Poll()
				require.True(t, ok)
			case "Take":
				_, err := q.Take(context.Background())
				require.NoError(t, err)
			case "TakeBatch":
				_, err := q.TakeBatch(context.Background(), nil, 0)
				require.NoError(t, err)
			case "DrainExpired":
				require.Len(t, q.DrainExpired(nil, 0), 1)
			case "Drain":
				require.Len(t, q.Drain(), 1)
			}
			// The new item reuses the freed slot.
			nw := offer(t, q, "new", far)
			assert.NotEqual(t, old, nw)

			_, ok := q.Remove(old)
			assert.False(t, ok, "stale handle must not remove the item now in its slot")
			assert.False(t, q.Reschedule(old, time.Time{}), "stale handle must not reschedule")
			_, ok = q.Poll()
			assert.False(t, ok, "the new item must keep its own deadline")
			assert.Equal(t, 1, q.Len())

			v, ok := q.Remove(nw)
			assert.True(t, ok)
			assert.Equal(t, "new", v)
			_, ok = q.Remove(nw)
			assert.False(t, ok, "a handle works once")
			checkAccounting(t, q)
		})
	}
}

func TestStaleHandleManyReuses(t *testing.T) {
	q := dq.New[int]()
	var stale []dq.Handle
	for i := range 100 {
		h := offer(t, q, i, time.Time{})
		live := offer(t, q, -i, time.Now().Add(time.Hour))
		for _, s := range stale {
			_, ok := q.Remove(s)
			require.False(t, ok)
		}
		_, ok := q.Remove(h)
		require.True(t, ok)
		stale = append(stale, h)
		_, ok = q.Remove(live)
		require.True(t, ok)
		stale = append(stale, live)
	}
	assert.Equal(t, 0, q.Len())
	checkAccounting(t, q)
}

// ---------------------------------------------------------------------------
// Order

// JSR-166 TCK: populatedQueue / testPoll / testTake in order.
func TestPopulatedQueueLeavesInDeadlineOrder(t *testing.T) {
	q := dq.New[int]()
	base := time.Now().Add(-time.Hour)
	perm := rand.Perm(200)
	for _, i := range perm {
		offer(t, q, i, base.Add(time.Duration(i)*time.Millisecond))
	}
	assert.Equal(t, 200, q.Len())
	got := pollAll(q)
	want := make([]int, 200)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, got)
	_, ok := q.Poll()
	assert.False(t, ok)
	checkAccounting(t, q)
}

func TestEqualDeadlinesLeaveFIFO(t *testing.T) {
	q := dq.New[string]()
	at := time.Now().Add(-time.Second)
	earlier := at.Add(-time.Millisecond)
	var want []string
	for i := range 50 {
		offer(t, q, fmt.Sprint("t", i), at)
	}
	for i := range 50 {
		offer(t, q, fmt.Sprint("e", i), earlier)
		want = append(want, fmt.Sprint("e", i))
	}
	for i := range 50 {
		want = append(want, fmt.Sprint("t", i))
	}
	assert.Equal(t, want, pollAll(q))
}

func TestEqualDeadlinesFIFOThroughEveryExit(t *testing.T) {
	at := time.Now().Add(-time.Second)
	mk := func() *dq.Queue[int] {
		q := dq.New[int]()
		for i := range 20 {
			offer(t, q, i, at)
		}
		return q
	}
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, mk().Drain(), "Drain")
	assert.Equal(t, want, mk().DrainExpired(nil, 0), "DrainExpired")
	b, err := mk().TakeBatch(context.Background(), nil, 0)
	require.NoError(t, err)
	assert.Equal(t, want, b, "TakeBatch")
	q := mk()
	var took []int
	for range 20 {
		v, err := q.Take(context.Background())
		require.NoError(t, err)
		took = append(took, v)
	}
	assert.Equal(t, want, took, "Take")
}

func TestRescheduleCountsAsNewlyOfferedForTies(t *testing.T) {
	q := dq.New[string]()
	at := time.Now().Add(-time.Second)
	ha := offer(t, q, "a", at)
	offer(t, q, "b", at)
	offer(t, q, "c", at)
	require.True(t, q.Reschedule(ha, at)) // same deadline: goes behind b and c
	assert.Equal(t, []string{"b", "c", "a"}, pollAll(q))

	// Rescheduling onto another item's deadline puts it behind that item.
	hx := offer(t, q, "x", at.Add(-time.Millisecond))
	offer(t, q, "y", at)
	require.True(t, q.Reschedule(hx, at))
	assert.Equal(t, []string{"y", "x"}, pollAll(q))

	// Rescheduling earlier moves it to the front; later moves it back.
	h1 := offer(t, q, "1", at)
	h2 := offer(t, q, "2", at)
	offer(t, q, "3", at)
	require.True(t, q.Reschedule(h2, at.Add(-time.Millisecond)))
	require.True(t, q.Reschedule(h1, at.Add(time.Millisecond)))
	assert.Equal(t, []string{"2", "3", "1"}, pollAll(q))
}

func TestDrainReturnsEverythingInDeliveryOrder(t *testing.T) {
	q := dq.New[int]()
	now := time.Now()
	offer(t, q, 3, now.Add(time.Hour))
	offer(t, q, 1, now.Add(-time.Hour))
	offer(t, q, 4, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	offer(t, q, 0, time.Time{})
	offer(t, q, 2, now.Add(time.Minute))
	assert.Equal(t, []int{0, 1, 2, 3, 4}, q.Drain())
	assert.Nil(t, q.Drain(), "Drain of an empty queue is nil")
	assert.Equal(t, uint64(5), q.Stats().Drained)
	checkAccounting(t, q)
}

// TestSeqWrapKeepsOrder sets the heap's offer counter next to 2^32 so that
// it wraps (and the heap renumbers) in the middle of the test.
func TestSeqWrapKeepsOrder(t *testing.T) {
	q := dq.New[int]()
	at := time.Now().Add(-time.Second)
	for i := range 10 {
		offer(t, q, i, at)
	}
	dq.SetNextSeq(q, math.MaxUint32-5)
	for i := 10; i < 30; i++ {
		offer(t, q, i, at)
	}
	assert.Less(t, dq.NextSeq(q), uint32(1000), "the counter must have been renumbered")
	// Interleave a few earlier and later deadlines.
	offer(t, q, -1, at.Add(-time.Millisecond))
	offer(t, q, 100, at.Add(time.Millisecond))
	want := []int{-1}
	for i := range 30 {
		want = append(want, i)
	}
	want = append(want, 100)
	assert.Equal(t, want, pollAll(q))
	checkAccounting(t, q)
}

// TestRescheduleDuringSeqRenumber pins a bug: when Reschedule's fresh
// sequence number triggered the renumbering, heap.fix wrote the new number
// to whichever node the renumbering's sort had moved into the rescheduled
// node's old index: the rescheduled item kept its old tie position and an
// unrelated item was sent to the back of its ties.
func TestRescheduleDuringSeqRenumber(t *testing.T) {
	q := dq.New[string]()
	at := time.Now().Add(-time.Second)
	hc := offer(t, q, "c", at.Add(time.Millisecond)) // index 0
	offer(t, q, "a", at)                             // becomes the root; c moves to index 1
	offer(t, q, "b", at)
	dq.SetNextSeq(q, math.MaxUint32) // the next seq renumbers
	require.True(t, q.Reschedule(hc, at))
	// c counts as newly offered: behind a and b.
	assert.Equal(t, []string{"a", "b", "c"}, pollAll(q))
	checkAccounting(t, q)
}

func TestRescheduleAcrossSeqWrapManyTimes(t *testing.T) {
	q := dq.New[int]()
	at := time.Now().Add(-time.Second)
	hs := make([]dq.Handle, 40)
	order := make([]int, 0, 40)
	for i := range hs {
		hs[i] = offer(t, q, i, at.Add(time.Duration(i%3)*time.Millisecond))
	}
	// Every item gets rescheduled onto the same deadline in a random
	// order, with the counter wrapping every few reschedules.
	for k, i := range rand.Perm(len(hs)) {
		if k%7 == 0 {
			dq.SetNextSeq(q, math.MaxUint32-uint32(k%3))
		}
		require.True(t, q.Reschedule(hs[i], at))
		order = append(order, i)
		require.NoError(t, dq.CheckQueue(q))
	}
	assert.Equal(t, order, pollAll(q))
}

// ---------------------------------------------------------------------------
// Due

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

// ---------------------------------------------------------------------------
// Take, TakeBatch, Poll, Peek, DrainExpired (JSR-166 TCK DelayQueueTest)

// TCK testTake_delay: a take never returns before the item's delay.
func TestTakeNeverEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		delays := []time.Duration{7 * time.Millisecond, time.Millisecond, 3 * time.Second, 1, 50 * time.Microsecond}
		for i, d := range delays {
			_, err := q.OfferAfter(i, d)
			require.NoError(t, err)
		}
		sorted := slices.Clone(delays)
		slices.Sort(sorted)
		for _, d := range sorted {
			v, err := q.Take(t.Context())
			require.NoError(t, err)
			assert.Equal(t, d, delays[v])
			assert.Equal(t, d, time.Since(start), "taken exactly at its deadline, never early")
		}
	})
}

// TCK testTakeFromEmptyBlocksInterruptibly / a blocked take receives a
// later offer.
func TestBlockedTakeReceivesLaterOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		res := goTake(t.Context(), q)
		synctest.Wait()
		_, done := ready(res)
		require.False(t, done, "Take on an empty queue blocks")
		assert.Equal(t, 1, q.Stats().Waiting)

		time.Sleep(time.Second)
		start := time.Now()
		_, err := q.OfferAfter("x", 5*time.Millisecond)
		require.NoError(t, err)
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, "x", r.v)
		assert.Equal(t, 5*time.Millisecond, r.at.Sub(start))
		assert.Equal(t, 0, q.Stats().Waiting)
	})
}

func TestEarlierOfferPreemptsLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		start := time.Now()
		offer(t, q, "late", start.Add(time.Hour))
		res := goTake(t.Context(), q)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		offer(t, q, "early", start.Add(10*time.Millisecond))
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, "early", r.v)
		assert.Equal(t, 10*time.Millisecond, r.at.Sub(start))
		assert.Equal(t, 1, q.Len())
		q.Drain()
	})
}

func TestTakeBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		dst := []int{-1}

		// Blocks until at least one item is due.
		for i := range 5 {
			offer(t, q, i, start.Add(10*time.Millisecond))
		}
		offer(t, q, 99, start.Add(time.Hour))
		got, err := q.TakeBatch(t.Context(), dst, 3)
		require.NoError(t, err)
		assert.Equal(t, 10*time.Millisecond, time.Since(start))
		assert.Equal(t, []int{-1, 0, 1, 2}, got, "appends up to max due items to dst in order")

		// max <= 0: all due items, and never the item that is not due.
		got, err = q.TakeBatch(t.Context(), nil, 0)
		require.NoError(t, err)
		assert.Equal(t, []int{3, 4}, got)
		assert.Equal(t, 1, q.Len())

		for i := 10; i < 14; i++ {
			offer(t, q, i, time.Time{})
		}
		got, err = q.TakeBatch(t.Context(), nil, -1)
		require.NoError(t, err)
		assert.Equal(t, []int{10, 11, 12, 13}, got)

		// A blocked TakeBatch gets everything due at the moment it wakes.
		res := goTakeBatch(t.Context(), q, 0)
		synctest.Wait()
		at := time.Now().Add(time.Second)
		for i := 20; i < 23; i++ {
			offer(t, q, i, at)
		}
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, []int{20, 21, 22}, r.v)

		// On error dst comes back unchanged.
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		got, err = q.TakeBatch(ctx, dst, 0)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, []int{-1}, got)
		assert.Equal(t, uint64(3+2+4+3), q.Stats().Taken)
		q.Drain()
		checkAccounting(t, q)
	})
}

// TCK testPoll / testPeek / testPeekEmpty / testPollEmpty.
func TestPollAndPeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		_, ok := q.Poll()
		assert.False(t, ok, "poll of an empty queue")
		_, _, ok = q.Peek()
		assert.False(t, ok, "peek of an empty queue")

		at := time.Now().Add(time.Minute)
		offer(t, q, 2, at.Add(time.Second))
		offer(t, q, 1, at)
		v, pat, ok := q.Peek()
		require.True(t, ok)
		assert.Equal(t, 1, v, "peek returns the head, due or not")
		assert.True(t, pat.Equal(at))
		_, ok = q.Poll()
		assert.False(t, ok, "poll returns nothing that is not due")
		assert.Equal(t, 2, q.Len(), "peek and a failed poll remove nothing")

		time.Sleep(time.Minute)
		v, ok = q.Poll()
		assert.True(t, ok)
		assert.Equal(t, 1, v)
		v, _, ok = q.Peek()
		assert.True(t, ok)
		assert.Equal(t, 2, v)
		_, ok = q.Poll()
		assert.False(t, ok)
		time.Sleep(time.Second)
		v, ok = q.Poll()
		assert.True(t, ok)
		assert.Equal(t, 2, v)
		_, _, ok = q.Peek()
		assert.False(t, ok)
	})
}

// TCK testDrainToN / testDrainTo.
func TestDrainExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		past := time.Now().Add(-time.Second)
		for i := range 5 {
			offer(t, q, i, past.Add(time.Duration(i)))
		}
		offer(t, q, 100, time.Now().Add(time.Second))

		dst := []int{-1}
		dst = q.DrainExpired(dst, 2)
		assert.Equal(t, []int{-1, 0, 1}, dst)
		assert.Equal(t, 4, q.Len())
		assert.Empty(t, q.DrainExpired(nil, 0)[3:], "max <= 0 drains all due items")
		assert.Equal(t, 1, q.Len())
		assert.Empty(t, q.DrainExpired(nil, 10), "items not yet due stay")
		time.Sleep(time.Second)
		assert.Equal(t, []int{100}, q.DrainExpired(nil, -5))
		assert.Nil(t, q.DrainExpired(nil, 0))
		assert.Equal(t, uint64(6), q.Stats().Taken)
		checkAccounting(t, q)
	})
}

// TCK testDrainToWithActivePut: Drain while another goroutine offers.
func TestDrainDuringConcurrentOffers(t *testing.T) {
	q := dq.New[int]()
	const n = 2000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if _, err := q.Offer(i, time.Now().Add(time.Duration(i%3)*time.Hour)); err != nil {
				panic(err)
			}
		}
	}()
	seen := make(map[int]int)
	for range 10 {
		for _, v := range q.Drain() {
			seen[v]++
		}
		runtime.Gosched()
	}
	wg.Wait()
	for _, v := range q.Drain() {
		seen[v]++
	}
	assert.Len(t, seen, n)
	for v, c := range seen {
		require.Equal(t, 1, c, "item %d drained %d times", v, c)
	}
	s := q.Stats()
	assert.Equal(t, uint64(n), s.Drained)
	checkAccounting(t, q)
}

func TestConsume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		for i := range 5 {
			_, err := q.OfferAfter(i, time.Duration(5-i)*time.Millisecond)
			require.NoError(t, err)
		}
		var got []int
		for v := range q.Consume(t.Context()) {
			got = append(got, v)
			if len(got) == 3 {
				break
			}
		}
		assert.Equal(t, []int{4, 3, 2}, got)
		assert.Equal(t, 2, q.Len(), "breaking out of the loop takes nothing more")

		// The loop ends when the queue is closed.
		done := make(chan []int)
		go func() {
			var got []int
			for v := range q.Consume(context.Background()) {
				got = append(got, v)
			}
			done <- got
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		q.Close()
		assert.Equal(t, []int{1, 0}, <-done)

		// ...and when ctx ends.
		q2 := dq.New[int]()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		n := 0
		for range q2.Consume(ctx) {
			n++
		}
		assert.Zero(t, n)
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	})
}

// ---------------------------------------------------------------------------
// Context

func TestDoneContextChangesNothing(t *testing.T) {
	for _, mk := range []func() (context.Context, error){
		func() (context.Context, error) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, context.Canceled
		},
		func() (context.Context, error) {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			_ = cancel
			return ctx, context.DeadlineExceeded
		},
	} {
		ctx, want := mk()
		q := dq.New[int](dq.WithCapacity(2))
		offer(t, q, 1, time.Time{}) // due
		before := q.Stats()

		_, err := q.Take(ctx)
		assert.ErrorIs(t, err, want, "Take")
		dst, err := q.TakeBatch(ctx, []int{7}, 0)
		assert.ErrorIs(t, err, want, "TakeBatch")
		assert.Equal(t, []int{7}, dst)
		h, err := q.Put(ctx, 2, time.Time{})
		assert.ErrorIs(t, err, want, "Put with space")
		assert.Equal(t, dq.Handle{}, h)

		assert.Equal(t, before, q.Stats(), "a call with a done ctx changes nothing")
		q.Close()
		_, err = q.Take(ctx)
		assert.ErrorIs(t, err, want, "ctx is checked first, even when closed")
		assert.Equal(t, []int{1}, q.Drain())
	}
}

// TCK testTimedPoll / interrupted take: a Take whose ctx ends while it
// waits returns ctx.Err() and leaves the item queued.
func TestTakeCtxEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		offer(t, q, 1, start.Add(10*time.Millisecond))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
		defer cancel()
		_, err := q.Take(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 5*time.Millisecond, time.Since(start))
		assert.Equal(t, 1, q.Len())
		assert.Equal(t, 0, q.Stats().Waiting)

		// A cancelled TakeBatch, likewise.
		ctx2, cancel2 := context.WithCancel(t.Context())
		res := goTakeBatch(ctx2, q, 0)
		synctest.Wait()
		cancel2()
		r := <-res
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.Nil(t, r.v)

		v, err := q.Take(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		assert.Equal(t, 10*time.Millisecond, time.Since(start))
		checkAccounting(t, q)
	})
}

func TestLeaderHandOffOnCtxCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		start := time.Now()
		offer(t, q, "x", start.Add(10*time.Millisecond))

		leaderCtx, cancelLeader := context.WithCancel(t.Context())
		leader := goTake(leaderCtx, q)
		synctest.Wait()
		follower := goTake(t.Context(), q)
		synctest.Wait()
		hasLeader, followers, _ := dq.WaitState(q)
		require.True(t, hasLeader)
		require.Equal(t, 1, followers)

		time.Sleep(5 * time.Millisecond)
		cancelLeader()
		r := <-leader
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, 5*time.Millisecond, r.at.Sub(start))

		r = <-follower
		require.NoError(t, r.err, "the promoted follower must deliver the item")
		assert.Equal(t, "x", r.v)
		assert.Equal(t, 10*time.Millisecond, r.at.Sub(start), "on time")
	})
}

func TestFollowerCancelLeavesLeaderInCharge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		offer(t, q, 1, start.Add(10*time.Millisecond))
		offer(t, q, 2, start.Add(20*time.Millisecond))
		leader := goTake(t.Context(), q)
		synctest.Wait()
		fctx, fcancel := context.WithCancel(t.Context())
		f1 := goTake(fctx, q)
		synctest.Wait()
		f2 := goTake(t.Context(), q)
		synctest.Wait()
		w := q.Stats().Wakeups
		fcancel()
		r := <-f1
		assert.ErrorIs(t, r.err, context.Canceled)
		synctest.Wait()
		assert.Equal(t, w+1, q.Stats().Wakeups, "only the cancelled follower woke")
		_, followers, _ := dq.WaitState(q)
		assert.Equal(t, 1, followers)

		r = <-leader
		require.NoError(t, r.err)
		assert.Equal(t, 1, r.v)
		assert.Equal(t, 10*time.Millisecond, r.at.Sub(start))
		r = <-f2
		require.NoError(t, r.err)
		assert.Equal(t, 2, r.v)
		assert.Equal(t, 20*time.Millisecond, r.at.Sub(start))
	})
}

// The leader's ctx ends at the very instant its item falls due: either it
// returns the item with a nil error, or the item stays for the follower.
func TestTakeCtxCancelAtDueInstant(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			q := dq.New[int]()
			start := time.Now()
			offer(t, q, 1, start.Add(10*time.Millisecond))
			ctx, cancel := context.WithDeadline(t.Context(), start.Add(10*time.Millisecond))
			defer cancel()
			leader := goTake(ctx, q)
			synctest.Wait()
			fctx, fcancel := context.WithCancel(t.Context())
			follower := goTake(fctx, q)
			synctest.Wait()
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
			fcancel()
			r1, r2 := <-leader, <-follower
			got := 0
			for _, r := range []result[int]{r1, r2} {
				if r.err == nil {
					assert.Equal(t, 1, r.v)
					got++
				}
			}
			assert.Equal(t, 1, got+q.Len(), "the item is delivered once or stays queued")
			assert.Equal(t, 1, got, "a due item with a live taker is delivered")
			checkAccounting(t, q)
		})
	}
}

// Real clock, -race: Take's ctx times out around the item's deadline.
// No timing assertions: only exactly-once accounting.
func TestCtxCancelVsDueRace(t *testing.T) {
	q := dq.New[int]()
	const rounds = 1000
	taken := make([]atomic.Int32, rounds)
	var wg sync.WaitGroup
	for i := range rounds {
		_, err := q.OfferAfter(i, time.Duration(rand.IntN(200))*time.Microsecond)
		require.NoError(t, err)
		wg.Add(2)
		for range 2 {
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(200))*time.Microsecond)
				defer cancel()
				v, err := q.Take(ctx)
				if err == nil {
					taken[v].Add(1)
				} else if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Take: %v", err)
				}
			}()
		}
		if i%20 == 19 {
			wg.Wait()
		}
	}
	wg.Wait()
	for _, v := range q.Drain() {
		taken[v].Add(1)
	}
	for i := range taken {
		require.Equal(t, int32(1), taken[i].Load(), "item %d", i)
	}
	s := q.Stats()
	assert.Equal(t, uint64(rounds), s.Taken+s.Drained)
	assert.Zero(t, s.Waiting)
	checkAccounting(t, q)
}

// ---------------------------------------------------------------------------
// Leader-Follower

// startTakers starts n blocked takers and waits until all are parked.
func startTakers[T any](t *testing.T, ctx context.Context, q *dq.Queue[T], n int) <-chan result[T] {
	ch := make(chan result[T], n)
	for range n {
		go func() {
			v, err := q.Take(ctx)
			ch <- result[T]{v, err, time.Now()}
		}()
	}
	synctest.Wait()
	require.Equal(t, n, q.Stats().Waiting)
	return ch
}

func TestAtMostOneTimerWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		offer(t, q, 1, time.Now().Add(time.Hour))
		res := startTakers(t, ctx, q, 50)
		hasLeader, followers, _ := dq.WaitState(q)
		assert.True(t, hasLeader)
		assert.Equal(t, 49, followers, "every taker but the leader waits with no timer")
		cancel()
		for range 50 {
			assert.ErrorIs(t, (<-res).err, context.Canceled)
		}
		q.Drain()
	})
}

func TestHerdBoundWakeups(t *testing.T) {
	for _, before := range []bool{false, true} {
		for _, k := range []int{1, 5, 20} {
			t.Run(fmt.Sprintf("K=%d/offeredBeforeTakers=%v", k, before), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					q := dq.New[int]()
					start := time.Now()
					offerAll := func() {
						for i := range k {
							offer(t, q, i, start.Add(time.Duration(i+1)*time.Second))
						}
					}
					if before {
						offerAll()
					}
					ctx, cancel := context.WithCancel(t.Context())
					res := startTakers(t, ctx, q, 50)
					w0 := q.Stats().Wakeups
					if !before {
						offerAll()
					}
					got := make([]int, 0, k)
					for range k {
						r := <-res
						require.NoError(t, r.err)
						got = append(got, r.v)
						assert.Equal(t, time.Duration(r.v+1)*time.Second, r.at.Sub(start))
					}
					synctest.Wait()
					w := q.Stats().Wakeups - w0
					assert.LessOrEqual(t, w, uint64(2*k+2), "K=%d items cost %d wake-ups", k, w)
					assert.True(t, slices.IsSorted(got))

					// Nothing spins while nothing is due.
					time.Sleep(time.Hour)
					synctest.Wait()
					assert.Equal(t, w0+w, q.Stats().Wakeups, "wake-ups with nothing due")

					cancel()
					for range 50 - k {
						assert.ErrorIs(t, (<-res).err, context.Canceled)
					}
				})
			})
		}
	}
}

func TestEachItemFallingDueWakesAtMostOnePlusHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		for i := range 5 {
			offer(t, q, i, start.Add(time.Duration(i+1)*time.Second))
		}
		res := startTakers(t, ctx, q, 50)
		for i := range 5 {
			w := q.Stats().Wakeups
			r := <-res
			require.NoError(t, r.err)
			assert.Equal(t, i, r.v)
			synctest.Wait()
			// The leader wakes, and it wakes one follower to take over.
			assert.LessOrEqual(t, q.Stats().Wakeups-w, uint64(2), "item %d", i)
		}
		cancel()
		for range 45 {
			<-res
		}
	})
}

func TestOneOfferWakesAtMostOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		res := startTakers(t, ctx, q, 50) // empty queue: all followers

		step := func(name string, max uint64, f func()) {
			t.Helper()
			w := q.Stats().Wakeups
			f()
			synctest.Wait()
			assert.LessOrEqual(t, q.Stats().Wakeups-w, max, name)
		}
		step("first offer", 1, func() { offer(t, q, 1, start.Add(time.Hour)) })
		step("earlier head", 1, func() { offer(t, q, 2, start.Add(time.Minute)) })
		step("later item", 0, func() { offer(t, q, 3, start.Add(2*time.Hour)) })
		step("later item equal to head", 0, func() { offer(t, q, 4, start.Add(time.Minute)) })
		hasLeader, followers, _ := dq.WaitState(q)
		assert.True(t, hasLeader)
		assert.Equal(t, 49, followers)

		cancel()
		for range 50 {
			assert.ErrorIs(t, (<-res).err, context.Canceled)
		}
		assert.Len(t, q.Drain(), 4)
	})
}

func TestRemoveRescheduleNonHeadWakesNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		offer(t, q, 0, start.Add(time.Minute)) // head
		h1 := offer(t, q, 1, start.Add(2*time.Minute))
		h2 := offer(t, q, 2, start.Add(3*time.Minute))
		h3 := offer(t, q, 3, start.Add(4*time.Minute))
		res := startTakers(t, ctx, q, 50)

		w := q.Stats().Wakeups
		_, ok := q.Remove(h1)
		require.True(t, ok)
		require.True(t, q.Reschedule(h2, start.Add(time.Hour)))               // later
		require.True(t, q.Reschedule(h3, start.Add(time.Minute+time.Second))) // earlier, not head
		require.True(t, q.Reschedule(h2, start.Add(time.Minute)))             // ties the head: behind it
		synctest.Wait()
		assert.Equal(t, w, q.Stats().Wakeups, "Remove/Reschedule of non-head items wake nobody")
		v, _, _ := q.Peek()
		assert.Equal(t, 0, v)

		// Rescheduling a non-head item ahead of the head wakes one taker, and
		// the taker takes it on time.
		start2 := time.Now()
		require.True(t, q.Reschedule(h3, start2.Add(time.Second)))
		synctest.Wait()
		assert.LessOrEqual(t, q.Stats().Wakeups-w, uint64(1))
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 3, r.v)
		assert.Equal(t, time.Second, r.at.Sub(start2))

		cancel()
		for range 49 {
			<-res
		}
		assert.Equal(t, []int{0, 2}, q.Drain())
	})
}

func TestRemoveHeadWhileLeaderWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		h := offer(t, q, 0, start.Add(time.Second))
		offer(t, q, 1, start.Add(2*time.Second))
		res := goTake(t.Context(), q)
		synctest.Wait()
		_, ok := q.Remove(h)
		require.True(t, ok)
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 1, r.v)
		assert.Equal(t, 2*time.Second, r.at.Sub(start))

		// Remove the only item: the taker waits with no timer, then gets
		// a later offer.
		h = offer(t, q, 2, start.Add(time.Hour))
		res = goTake(t.Context(), q)
		synctest.Wait()
		_, ok = q.Remove(h)
		require.True(t, ok)
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		_, done := ready(res)
		require.False(t, done)
		offer(t, q, 3, time.Now().Add(time.Second))
		r = <-res
		require.NoError(t, r.err)
		assert.Equal(t, 3, r.v)
	})
}

func TestRescheduleHeadLaterAndEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		h := offer(t, q, 0, start.Add(time.Second))
		res := goTake(t.Context(), q)
		synctest.Wait()
		require.True(t, q.Reschedule(h, start.Add(3*time.Second)))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		_, done := ready(res)
		require.False(t, done, "moved later: not taken at the old deadline")
		require.True(t, q.Reschedule(h, start.Add(2500*time.Millisecond)))
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 2500*time.Millisecond, r.at.Sub(start))
	})
}

// ---------------------------------------------------------------------------
// Close

func TestCloseWakesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int](dq.WithCapacity(1))
		offer(t, q, 0, time.Now().Add(time.Hour)) // full, and not due
		leader := goTake(t.Context(), q)
		synctest.Wait()
		var takes []<-chan result[int]
		for range 3 {
			takes = append(takes, goTake(t.Context(), q))
		}
		var batches []<-chan result[[]int]
		for range 2 {
			batches = append(batches, goTakeBatch(t.Context(), q, 0))
		}
		var puts []<-chan result[dq.Handle]
		for i := range 2 {
			puts = append(puts, goPut(t.Context(), q, i+1, time.Time{}))
		}
		synctest.Wait()
		s := q.Stats()
		require.Equal(t, 6, s.Waiting)
		hasLeader, followers, putters := dq.WaitState(q)
		require.True(t, hasLeader)
		require.Equal(t, 5, followers)
		require.Equal(t, 2, putters)

		var wg sync.WaitGroup
		for range 4 { // idempotent, from any goroutine
			wg.Go(q.Close)
		}
		wg.Wait()
		assert.ErrorIs(t, (<-leader).err, dq.ErrClosed, "leader")
		for _, c := range takes {
			assert.ErrorIs(t, (<-c).err, dq.ErrClosed, "follower Take")
		}
		for _, c := range batches {
			r := <-c
			assert.ErrorIs(t, r.err, dq.ErrClosed, "TakeBatch")
			assert.Nil(t, r.v)
		}
		for _, c := range puts {
			assert.ErrorIs(t, (<-c).err, dq.ErrClosed, "Put")
		}
		s = q.Stats()
		assert.Zero(t, s.Waiting)
		assert.Equal(t, uint64(1), s.Offered)
		assert.Equal(t, []int{0}, q.Drain(), "items left stay for Drain")
	})
}

func TestAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		h0 := offer(t, q, 0, start.Add(time.Second))
		h1 := offer(t, q, 1, start.Add(2*time.Second))
		offer(t, q, 2, start.Add(3*time.Second))
		offer(t, q, 3, start.Add(4*time.Second))
		q.Close()
		q.Close()

		_, err := q.Offer(9, time.Time{})
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = q.OfferAfter(9, 0)
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = q.Put(t.Context(), 9, time.Time{})
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = q.Take(t.Context())
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = q.TakeBatch(t.Context(), nil, 0)
		assert.ErrorIs(t, err, dq.ErrClosed)
		assert.Equal(t, 4, q.Len())

		// Everything else keeps working.
		v, _, ok := q.Peek()
		assert.True(t, ok)
		assert.Equal(t, 0, v)
		assert.True(t, q.Reschedule(h0, start.Add(5*time.Second)))
		v, ok = q.Remove(h1)
		assert.True(t, ok)
		assert.Equal(t, 1, v)
		time.Sleep(3 * time.Second)
		v, ok = q.Poll()
		assert.True(t, ok)
		assert.Equal(t, 2, v)
		time.Sleep(2 * time.Second)
		assert.Equal(t, []int{3}, q.DrainExpired(nil, 1))
		s := q.Stats()
		assert.Equal(t, 1, s.Len)
		assert.Equal(t, []int{0}, q.Drain())
		checkAccounting(t, q)
	})
}

// TestTakeAfterCloseReturnsErrClosedEvenIfDue pins a bug: Take and
// TakeBatch looked for a due item before checking for Close, so after
// Close they kept handing out due items (and a taker woken by Close at the
// instant an item fell due took it) instead of returning ErrClosed.
func TestTakeAfterCloseReturnsErrClosedEvenIfDue(t *testing.T) {
	q := dq.New[int]()
	offer(t, q, 1, time.Time{})
	offer(t, q, 2, time.Time{})
	q.Close()
	_, err := q.Take(context.Background())
	assert.ErrorIs(t, err, dq.ErrClosed)
	got, err := q.TakeBatch(context.Background(), nil, 0)
	assert.ErrorIs(t, err, dq.ErrClosed)
	assert.Nil(t, got)
	n := 0
	for range q.Consume(context.Background()) {
		n++
	}
	assert.Zero(t, n, "Consume ends at Close")
	assert.Equal(t, []int{1, 2}, q.Drain())
}

// ---------------------------------------------------------------------------
// Bounded queues

func TestOfferFull(t *testing.T) {
	q := dq.New[int](dq.WithCapacity(2))
	h := offer(t, q, 1, time.Time{})
	offer(t, q, 2, time.Now().Add(time.Hour))
	before := q.Stats()
	hf, err := q.Offer(3, time.Time{})
	assert.ErrorIs(t, err, dq.ErrFull)
	assert.Equal(t, dq.Handle{}, hf)
	_, err = q.OfferAfter(3, 0)
	assert.ErrorIs(t, err, dq.ErrFull)
	assert.Equal(t, before, q.Stats(), "a refused offer counts nothing")

	_, ok := q.Remove(h)
	require.True(t, ok)
	offer(t, q, 3, time.Time{})
	_, err = q.Offer(4, time.Time{})
	assert.ErrorIs(t, err, dq.ErrFull)
	q.Close()
	_, err = q.Offer(4, time.Time{})
	assert.ErrorIs(t, err, dq.ErrClosed, "closed wins over full")
}

func TestPutBlocksWhileFull(t *testing.T) {
	frees := map[string]func(*testing.T, *dq.Queue[int], dq.Handle){
		"Poll": func(t *testing.T, q *dq.Queue[int], _ dq.Handle) {
			_, ok := q.Poll()
			require.True(t, ok)
		},
		"Take": func(t *testing.T, q *dq.Queue[int], _ dq.Handle) {
			_, err := q.Take(t.Context())
			require.NoError(t, err)
		},
		"TakeBatch": func(t *testing.T, q *dq.Queue[int], _ dq.Handle) {
			_, err := q.TakeBatch(t.Context(), nil, 1)
			require.NoError(t, err)
		},
		"DrainExpired": func(t *testing.T, q *dq.Queue[int], _ dq.Handle) {
			require.Len(t, q.DrainExpired(nil, 1), 1)
		},
		"Remove": func(t *testing.T, q *dq.Queue[int], h dq.Handle) {
			_, ok := q.Remove(h)
			require.True(t, ok)
		},
		"Drain": func(t *testing.T, q *dq.Queue[int], _ dq.Handle) {
			require.Len(t, q.Drain(), 2)
		},
	}
	for name, free := range frees {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := dq.New[int](dq.WithCapacity(2))
				h := offer(t, q, 1, time.Time{})
				offer(t, q, 2, time.Time{})
				put := goPut(t.Context(), q, 3, time.Time{})
				synctest.Wait()
				_, done := ready(put)
				require.False(t, done, "Put blocks while the queue is full")
				_, _, putters := dq.WaitState(q)
				require.Equal(t, 1, putters)

				free(t, q, h)
				r := <-put
				require.NoError(t, r.err, "Put unblocks when space frees")
				assert.NotEqual(t, dq.Handle{}, r.v)
				_, ok := q.Remove(r.v)
				assert.True(t, ok, "Put's handle refers to its item")
				checkAccounting(t, q)
				q.Drain()
			})
		})
	}
}

func TestPutCtxEndsWhileBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int](dq.WithCapacity(1))
		offer(t, q, 1, time.Time{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := q.Put(ctx, 2, time.Time{})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, uint64(1), q.Stats().Offered)
		_, _, putters := dq.WaitState(q)
		assert.Zero(t, putters)
	})
}

// A Put woken for freed space whose ctx ends at the same moment passes the
// wake-up on to the next blocked Put.
func TestPutCtxCancelPassesWakeUpOn(t *testing.T) {
	passed := 0
	for i := range 40 {
		synctest.Test(t, func(t *testing.T) {
			q := dq.New[int](dq.WithCapacity(1))
			h := offer(t, q, 0, time.Time{})
			ctx1, cancel1 := context.WithCancel(t.Context())
			p1 := goPut(ctx1, q, 1, time.Time{})
			synctest.Wait()
			p2 := goPut(t.Context(), q, 2, time.Time{})
			synctest.Wait()

			// Free a slot, which wakes p1 (first in line), and end p1's ctx,
			// both before p1 runs again. In one order p1's select usually
			// sees the wake-up; in the other it usually wakes for ctx but
			// finds itself already chosen for the space.
			if i%2 == 0 {
				_, ok := q.Remove(h)
				require.True(t, ok)
				cancel1()
			} else {
				cancel1()
				_, ok := q.Remove(h)
				require.True(t, ok)
			}
			synctest.Wait()

			r1, ok1 := ready(p1)
			require.True(t, ok1, "p1 returns either way")
			if r1.err == nil {
				// p1 used the space; p2 still waits for more.
				_, ok2 := ready(p2)
				assert.False(t, ok2)
				assert.Equal(t, []int{1}, q.Drain())
				r2 := <-p2
				require.NoError(t, r2.err)
				assert.Equal(t, []int{2}, q.Drain())
				return
			}
			passed++
			assert.ErrorIs(t, r1.err, context.Canceled)
			r2, ok2 := ready(p2)
			require.True(t, ok2, "p2 must be woken for the space p1 did not use")
			require.NoError(t, r2.err)
			assert.Equal(t, []int{2}, q.Drain())
		})
	}
	t.Logf("wake-up passed on in %d of 40 runs", passed)
}

func TestPutUnbounded(t *testing.T) {
	q := dq.New[int]()
	h, err := q.Put(context.Background(), 1, time.Time{})
	require.NoError(t, err)
	v, ok := q.Remove(h)
	assert.True(t, ok)
	assert.Equal(t, 1, v)
}

func TestPutFIFOWhenSpaceFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int](dq.WithCapacity(1))
		offer(t, q, 0, time.Time{})
		var puts []<-chan result[dq.Handle]
		for i := 1; i <= 3; i++ {
			puts = append(puts, goPut(t.Context(), q, i, time.Time{}))
			synctest.Wait()
		}
		for i := 1; i <= 3; i++ {
			v, ok := q.Poll()
			require.True(t, ok)
			require.Equal(t, i-1, v)
			r := <-puts[i-1]
			require.NoError(t, r.err)
		}
		assert.Equal(t, []int{3}, q.Drain())
	})
}

// ---------------------------------------------------------------------------
// Exactly once, stats

func TestStatsCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		for i := range 10 {
			offer(t, q, i, time.Time{})
		}
		h := offer(t, q, 10, time.Now().Add(time.Hour))
		offer(t, q, 11, time.Now().Add(time.Hour))
		_, _ = q.Poll()
		_, _ = q.Take(t.Context())
		_, _ = q.TakeBatch(t.Context(), nil, 3)
		q.DrainExpired(nil, 2)
		q.DrainExpired(nil, 0)
		q.Remove(h)
		res := goTake(t.Context(), q)
		synctest.Wait()
		s := q.Stats()
		assert.Equal(t, s.Taken, s.Lateness.Count)
		s.Lateness = dq.Histogram{} // checked in lateness_test.go
		assert.Equal(t, dq.Stats{Len: 1, Waiting: 1, Offered: 12, Taken: 10, Removed: 1, Drained: 0, Wakeups: 0}, s)
		q.Close()
		assert.ErrorIs(t, (<-res).err, dq.ErrClosed)
		q.Drain()
		s = q.Stats()
		s.Lateness = dq.Histogram{}
		assert.Equal(t, dq.Stats{Len: 0, Waiting: 0, Offered: 12, Taken: 10, Removed: 1, Drained: 1, Wakeups: 1}, s)
	})
}

// Real clock, -race: producers, consumers of every kind and a remover; every
// item is accounted for exactly once.
func TestStressExactlyOnce(t *testing.T) {
	q := dq.New[int](dq.WithCapacity(256))
	const producers, perProducer = 4, 3000
	const total = producers * perProducer
	seen := make([]atomic.Int32, total)
	var removedN, takenN atomic.Int64
	handles := make(chan dq.Handle, total)

	var prodWG, consWG sync.WaitGroup
	for p := range producers {
		prodWG.Go(func() {
			for i := range perProducer {
				id := p*perProducer + i
				d := time.Duration(rand.IntN(2000)) * time.Microsecond
				var h dq.Handle
				var err error
				if i%2 == 0 {
					h, err = q.Put(context.Background(), id, time.Now().Add(d))
				} else {
					for {
						h, err = q.OfferAfter(id, d)
						if !errors.Is(err, dq.ErrFull) {
							break
						}
						runtime.Gosched()
					}
				}
				if err != nil {
					t.Errorf("offer %d: %v", id, err)
					return
				}
				if id%5 == 0 {
					handles <- h
				}
			}
		})
	}
	mark := func(v int) {
		seen[v].Add(1)
		takenN.Add(1)
	}
	for c := range 4 {
		consWG.Go(func() {
			var buf []int
			for {
				switch c {
				case 0, 1:
					v, err := q.Take(context.Background())
					if err != nil {
						return
					}
					mark(v)
				case 2:
					var err error
					buf, err = q.TakeBatch(context.Background(), buf[:0], 7)
					if err != nil {
						return
					}
					for _, v := range buf {
						mark(v)
					}
				case 3:
					v, ok := q.Poll()
					if ok {
						mark(v)
						continue
					}
					if q.Stats().Offered == total && q.Len() == 0 {
						return
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	remDone := make(chan struct{})
	go func() {
		defer close(remDone)
		for h := range handles {
			if v, ok := q.Remove(h); ok {
				seen[v].Add(1)
				removedN.Add(1)
			}
			if _, ok := q.Remove(h); ok {
				t.Errorf("a handle removed twice")
			}
		}
	}()
	prodWG.Wait()
	close(handles)
	<-remDone
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	q.Close()
	consWG.Wait()
	drained := q.Drain()
	for _, v := range drained {
		seen[v].Add(1)
	}
	for i := range seen {
		require.Equal(t, int32(1), seen[i].Load(), "item %d", i)
	}
	s := q.Stats()
	assert.Equal(t, uint64(total), s.Offered)
	assert.Equal(t, uint64(takenN.Load()), s.Taken)
	assert.Equal(t, uint64(removedN.Load()), s.Removed)
	assert.Equal(t, uint64(len(drained)), s.Drained)
	assert.Zero(t, s.Waiting)
	checkAccounting(t, q)
}

// ---------------------------------------------------------------------------
// Memory

type payload struct {
	buf [64]byte
	id  int
}

// collected offers a fresh payload through put, lets leave remove it, and
// reports whether the GC then reclaims it (the queue kept no reference).
func collected(t *testing.T, put func(*payload), leave func() *payload) bool {
	t.Helper()
	done := make(chan struct{})
	func() {
		p := &payload{id: 42}
		runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, done)
		put(p)
	}()
	got := leave()
	require.NotNil(t, got)
	require.Equal(t, 42, got.id)
	got = nil
	_ = got
	for range 20 {
		runtime.GC()
		select {
		case <-done:
			return true
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

func TestLeftItemsAreNotRetained(t *testing.T) {
	ways := map[string]func(q *dq.Queue[*payload], h dq.Handle) *payload{
		"Poll": func(q *dq.Queue[*payload], _ dq.Handle) *payload { v, _ := q.Poll(); return v },
		"Take": func(q *dq.Queue[*payload], _ dq.Handle) *payload {
			v, _ := q.Take(context.Background())
			return v
		},
		"TakeBatch": func(q *dq.Queue[*payload], _ dq.Handle) *payload {
			v, _ := q.TakeBatch(context.Background(), nil, 1)
			return v[0]
		},
		"DrainExpired": func(q *dq.Queue[*payload], _ dq.Handle) *payload { return q.DrainExpired(nil, 1)[0] },
		"Remove":       func(q *dq.Queue[*payload], h dq.Handle) *payload { v, _ := q.Remove(h); return v },
		"Drain":        func(q *dq.Queue[*payload], _ dq.Handle) *payload { return q.Drain()[0] },
	}
	for name, leave := range ways {
		t.Run(name, func(t *testing.T) {
			q := dq.New[*payload]()
			// Other items keep the backing array alive and non-empty.
			for i := range 8 {
				_, err := q.Offer(&payload{id: i}, time.Now().Add(time.Hour))
				require.NoError(t, err)
			}
			var h dq.Handle
			ok := collected(t,
				func(p *payload) { h = offer(t, q, p, time.Time{}) },
				func() *payload { return leave(q, h) })
			assert.True(t, ok, "the queue must not retain an item that left through %s", name)
			assert.True(t, dq.VacatedZero(q), "vacated slots of the backing array are zeroed")
			runtime.KeepAlive(q)
		})
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	q := dq.New[int]()
	at := time.Now().Add(-time.Second)
	far := time.Now().Add(time.Hour)
	for i := range 64 {
		offer(t, q, i, far)
	}
	// Warm up: grow the arrays once.
	for range 64 {
		offer(t, q, 0, at)
	}
	q.DrainExpired(nil, 0)

	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := q.Offer(1, at); err != nil {
			panic(err)
		}
		if _, ok := q.Poll(); !ok {
			panic("poll")
		}
	})
	assert.Zero(t, allocs, "Offer+Poll")

	allocs = testing.AllocsPerRun(1000, func() {
		h, err := q.Offer(1, far)
		if err != nil {
			panic(err)
		}
		if _, ok := q.Remove(h); !ok {
			panic("remove")
		}
	})
	assert.Zero(t, allocs, "Offer+Remove")

	allocs = testing.AllocsPerRun(1000, func() {
		h, err := q.OfferAfter(1, time.Hour)
		if err != nil {
			panic(err)
		}
		q.Reschedule(h, at)
		if _, err := q.Take(context.Background()); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs, "OfferAfter+Reschedule+Take of a due item")
	assert.Equal(t, 64, q.Len())
}

// A sleeping leader's timer is re-armed, not the leader woken, when the head
// changes under it: an earlier Offer, a Reschedule of the head either way, a
// Remove of the head, and a Poll that takes the head. Each change costs no
// wake-up, and the leader still wakes exactly when the new head is due.
func TestHeadChangesReArmSleepingLeaderWithoutWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		h10 := offer(t, q, 10, start.Add(10*time.Second))
		res := goTake(t.Context(), q)
		synctest.Wait()
		w0 := q.Stats().Wakeups

		h5 := offer(t, q, 5, start.Add(5*time.Second)) // earlier head
		synctest.Wait()
		require.True(t, q.Reschedule(h5, start.Add(8*time.Second))) // head later
		synctest.Wait()
		require.True(t, q.Reschedule(h5, start.Add(6*time.Second))) // head earlier
		synctest.Wait()
		_, ok := q.Remove(h5) // head removed
		require.True(t, ok)
		synctest.Wait()
		offer(t, q, 0, start) // due at once, taken by Poll below
		_, ok = q.Poll()
		require.True(t, ok)
		synctest.Wait()
		assert.Equal(t, w0, q.Stats().Wakeups, "head changes woke the leader")

		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 10, r.v)
		assert.Equal(t, 10*time.Second, r.at.Sub(start), "leader woke at the wrong time")
		assert.Equal(t, w0+1, q.Stats().Wakeups, "one wake-up: the item falling due")
		_, ok = q.Remove(h10)
		assert.False(t, ok)
	})
}
