package delayqueue_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Close wakes every waiter; afterwards offers, puts and takes return
// ErrClosed while the items stay for Drain.

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
