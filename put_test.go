package delayqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Capacity and bounded put: Offer fails with ErrFull on a full queue; Put
// blocks for room, first come first served, until its ctx ends.

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

// Regression: Stats().Waiting counted only blocked takers, so producers
// blocked in Put were invisible. They are counted apart, in BlockedPuts,
// while they wait and no longer once room frees, ctx ends or the queue
// closes.
func TestStatsCountsBlockedPutsApartFromTakers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int](dq.WithCapacity(1))
		offer(t, q, 0, time.Now().Add(time.Hour))
		ctx, cancel := context.WithCancel(t.Context())
		p1 := goPut(t.Context(), q, 1, time.Now())
		p2 := goPut(ctx, q, 2, time.Now())
		take := goTake(t.Context(), q)
		synctest.Wait()
		s := q.Stats()
		assert.Equal(t, 2, s.BlockedPuts, "two Puts wait for room")
		assert.Equal(t, 1, s.Waiting, "one Take waits; Puts are not takers")

		cancel() // p2 gives up
		synctest.Wait()
		r2, ok := ready(p2)
		require.True(t, ok)
		require.ErrorIs(t, r2.err, context.Canceled)
		assert.Equal(t, 1, q.Stats().BlockedPuts)

		time.Sleep(time.Hour) // item 0 falls due; the Take frees room for p1
		synctest.Wait()
		r, ok := ready(take)
		require.True(t, ok)
		require.NoError(t, r.err)
		r1, ok := ready(p1)
		require.True(t, ok)
		require.NoError(t, r1.err)
		s = q.Stats()
		assert.Zero(t, s.BlockedPuts)
		q.Close()
		q.Drain()
	})
}
