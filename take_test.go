package delayqueue_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Taking: Take, TakeBatch, Poll, Peek, DrainExpired and Consume (after the
// JSR-166 TCK's DelayQueueTest).

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
