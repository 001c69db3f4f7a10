package delayqueue_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The buckets tile [0, ∞) without gaps or overlaps, every value lands in
// the bucket whose range holds it, and a bucket's midpoint is within 10% of
// every value in it from 1 µs to 1 h (6.25% by construction).
func TestLatenessBucketsTileAndBoundError(t *testing.T) {
	var prevHi time.Duration
	for i := range dq.LatenessBuckets {
		lo, hi := dq.LatenessBounds(i)
		require.Equal(t, prevHi, lo, "bucket %d starts where bucket %d ends", i, i-1)
		require.Less(t, lo, hi, "bucket %d", i)
		require.Equal(t, i, dq.LatenessBucket(uint64(lo)), "low edge of bucket %d", i)
		if hi != math.MaxInt64 {
			require.Equal(t, i, dq.LatenessBucket(uint64(hi-1)), "high edge of bucket %d", i)
		}
		prevHi = hi
	}
	require.Equal(t, time.Duration(math.MaxInt64), prevHi, "the last bucket is open-ended")
	require.Equal(t, dq.LatenessBuckets-1, dq.LatenessBucket(math.MaxUint64))

	r := rand.New(rand.NewPCG(1, 2))
	check := func(d uint64) {
		i := dq.LatenessBucket(d)
		lo, hi := dq.LatenessBounds(i)
		require.True(t, uint64(lo) <= d && (hi == math.MaxInt64 || d < uint64(hi)), "%d not in bucket %d [%v, %v)", d, i, lo, hi)
		if d >= uint64(time.Microsecond) && d <= uint64(time.Hour) {
			mid := float64(lo + (hi-lo)/2)
			require.LessOrEqual(t, math.Abs(mid-float64(d))/float64(d), 0.0625+1e-12, "value %d, bucket [%v, %v)", d, lo, hi)
		}
	}
	for range 100_000 {
		// Log-uniform over 1 ns .. 2^45 ns.
		check(uint64(math.Exp2(r.Float64() * 45)))
	}
	for _, d := range []time.Duration{0, 1, 511, 512, 999, time.Microsecond, time.Millisecond, time.Hour, 1<<42 - 1, 1 << 42} {
		check(uint64(d))
	}
}

// Quantile agrees with the exact quantile of the recorded values within the
// histogram's error, for values recorded by a real queue.
func TestLatenessQuantileMatchesExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		r := rand.New(rand.NewPCG(3, 4))
		var late []time.Duration
		for i := range 2000 {
			// Deadlines up to 1 s in the past of the moment they are polled.
			d := time.Duration(math.Exp2(10 + r.Float64()*20)) // ~1 µs .. 1 s
			offer(t, q, i, time.Now().Add(-d))
			_, ok := q.Poll()
			require.True(t, ok)
			late = append(late, d)
			if i%100 == 0 {
				time.Sleep(time.Millisecond) // the clock moves; lateness is measured from each reading
			}
		}
		s := q.Stats()
		h := s.Lateness
		require.Equal(t, uint64(len(late)), h.Count)
		slices.Sort(late)
		assert.Equal(t, late[len(late)-1], h.Max)
		for _, p := range []float64{0, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
			rank := max(int(math.Ceil(p*float64(len(late)))), 1)
			exact := late[rank-1]
			got := h.Quantile(p)
			assert.InEpsilon(t, float64(exact), float64(got), 0.0625, "q%v: got %v, exact %v", p, got, exact)
		}
		var n uint64
		var prev time.Duration
		for b := range h.Buckets() {
			require.Positive(t, b.Count)
			require.GreaterOrEqual(t, b.Lo, prev, "buckets in increasing order")
			prev = b.Hi
			n += b.Count
		}
		assert.Equal(t, h.Count, n, "Buckets account for every value")
	})
}

// Lateness is the clock reading that found the item due minus its
// deadline: 0 for a blocked taker woken by the timer on the fake clock,
// the time since the deadline for Poll, TakeBatch, DrainExpired, Take and
// the Keyed forms.
func TestLatenessPerTakePath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		res := goTake(t.Context(), q)
		synctest.Wait()
		offer(t, q, 1, time.Now().Add(time.Second))
		r := <-res
		require.NoError(t, r.err)
		h := q.Stats().Lateness
		assert.Equal(t, uint64(1), h.Count)
		assert.Zero(t, h.Max, "a leader woken by its timer on the fake clock is not late")

		offer(t, q, 2, time.Now().Add(time.Millisecond))
		offer(t, q, 3, time.Now().Add(2*time.Millisecond))
		time.Sleep(10 * time.Millisecond)
		got, err := q.TakeBatch(t.Context(), nil, 0)
		require.NoError(t, err)
		require.Equal(t, []int{2, 3}, got)
		h = q.Stats().Lateness
		assert.Equal(t, uint64(3), h.Count)
		assert.Equal(t, 9*time.Millisecond, h.Max)

		offer(t, q, 4, time.Now().Add(-time.Hour/2))
		assert.Len(t, q.DrainExpired(nil, 0), 1)
		offer(t, q, 5, time.Now().Add(-time.Minute))
		_, err = q.Take(t.Context())
		require.NoError(t, err)
		h = q.Stats().Lateness
		assert.Equal(t, time.Hour/2, h.Max)
		assert.InEpsilon(t, float64(time.Hour/2), float64(h.Quantile(1)), 0.0625)
		assert.InEpsilon(t, float64(time.Minute), float64(h.Quantile(0.8)), 0.0625, "the 4th of 5 values")

		// The zero deadline is due since year 1: the overflow bucket, Max
		// clamped rather than wrapped negative.
		offer(t, q, 6, time.Time{})
		_, ok := q.Poll()
		require.True(t, ok)
		h = q.Stats().Lateness
		assert.Equal(t, time.Duration(math.MaxInt64), h.Max)
		assert.Equal(t, time.Duration(math.MaxInt64), h.Quantile(1))

		k := dq.NewKeyed[string, int]()
		_, err = k.Schedule("a", 1, time.Now().Add(-3*time.Millisecond))
		require.NoError(t, err)
		_, _, ok = k.Poll()
		require.True(t, ok)
		assert.Equal(t, 3*time.Millisecond, k.Stats().Lateness.Max)

		// Remove, Drain and Reschedule hand nothing out: no lateness.
		hd := offer(t, q, 7, time.Now().Add(-time.Second))
		q.Remove(hd)
		offer(t, q, 8, time.Now().Add(-time.Second))
		q.Drain()
		s := q.Stats()
		assert.Equal(t, s.Taken, s.Lateness.Count)
		q.Close()
		k.Close()
	})
}

// Recording lateness allocates nothing, and neither does reading Stats.
func TestLatenessAllocatesNothing(t *testing.T) {
	q := dq.New[int]()
	past := time.Now().Add(-time.Second)
	offer(t, q, 0, past)
	q.Poll()
	ctx := context.Background()
	buf := make([]int, 0, 4)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := q.Offer(1, past); err != nil {
			panic(err)
		}
		if _, err := q.Offer(2, past); err != nil {
			panic(err)
		}
		if _, ok := q.Poll(); !ok {
			panic("poll")
		}
		buf, _ = q.TakeBatch(ctx, buf[:0], 0)
		if q.Stats().Lateness.Count == 0 {
			panic("no lateness")
		}
	})
	assert.Zero(t, allocs)
}

func TestHistogramQuantileOutOfRangePanics(t *testing.T) {
	var h dq.Histogram
	assert.Zero(t, h.Quantile(0.5), "empty histogram")
	for _, q := range []float64{-0.1, 1.1, math.NaN()} {
		assert.PanicsWithValue(t, "delayqueue: Histogram.Quantile outside [0, 1]", func() { h.Quantile(q) })
	}
}

// Regression: single Takes working through a backlog measured every item
// against the clock reading taken when the backlog was first found due, so
// Stats read low by up to the backlog's age (dqbench -batch 1 disagreed
// with its own measurement). Take now reads the clock once per call: of 100
// items due at 1 ms, one Taken after 10 ms and 99 after 60 ms, the 99 read
// 59 ms late.
func TestLatenessSingleTakesThroughBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		defer q.Close()
		start := time.Now()
		for i := range 100 {
			_, err := q.Offer(i, start.Add(time.Millisecond))
			require.NoError(t, err)
		}
		time.Sleep(10 * time.Millisecond)
		_, err := q.Take(t.Context()) // 9 ms late
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
		for range 99 {
			_, err := q.Take(t.Context())
			require.NoError(t, err)
		}
		h := q.Stats().Lateness
		require.EqualValues(t, 100, h.Count)
		var early, late uint64
		for b := range h.Buckets() {
			switch {
			case b.Hi <= 10*time.Millisecond:
				early += b.Count
			case b.Lo >= 55*time.Millisecond:
				late += b.Count
			}
		}
		assert.Equal(t, uint64(1), early, "only the first Take ran at 10 ms")
		assert.Equal(t, uint64(99), late, "the other Takes ran at 60 ms")
		assert.Equal(t, 59*time.Millisecond, h.Max)
	})
}

// Regression (found in review): Take reused the queue's latest clock
// reading whenever it already showed the head due, so a consumer that works
// between Takes through a backlog was measured against the first Take's
// reading: 10 items due at 1 ms, each Take followed by 100 ms of work, and
// Stats said 0 late where the last was 900 ms late. Take now reads the
// clock once per call.
func TestLatenessSlowConsumerWithTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		defer q.Close()
		due := time.Now().Add(time.Millisecond)
		for i := range 10 {
			_, err := q.Offer(i, due)
			require.NoError(t, err)
		}
		time.Sleep(time.Millisecond)
		for i := range 10 {
			_, err := q.Take(t.Context())
			require.NoError(t, err)
			require.Equal(t, time.Duration(i)*100*time.Millisecond, time.Since(due))
			time.Sleep(100 * time.Millisecond) // the consumer's work
		}
		h := q.Stats().Lateness
		assert.Equal(t, 900*time.Millisecond, h.Max)
		// The median (5th of 10) was 400 ms late: within the histogram's
		// 6.25%.
		assert.InEpsilon(t, float64(400*time.Millisecond), float64(h.Quantile(0.5)), 0.0625)
	})
}
