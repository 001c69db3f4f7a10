package delayqueue_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Contexts: a done ctx changes nothing; a ctx that ends while Take waits
// returns ctx.Err() and leaves the item queued, even at its due instant.

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
