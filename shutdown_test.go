package delayqueue_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type shutdownResult[T any] struct {
	rest []dq.Entry[T]
	err  error
}

func goShutdown[T any](ctx context.Context, q *dq.Queue[T]) <-chan shutdownResult[T] {
	ch := make(chan shutdownResult[T], 1)
	go func() {
		rest, err := q.Shutdown(ctx)
		ch <- shutdownResult[T]{rest, err}
	}()
	return ch
}

func values[T any](es []dq.Entry[T]) []T {
	var out []T
	for _, e := range es {
		out = append(out, e.Value)
	}
	return out
}

// Shutdown refuses offers at once, lets takers (blocked and later) take
// every due item, then closes and returns the rest with deadlines.
func TestShutdownHandsOutDueThenReturnsRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		now := time.Now()
		offer(t, q, 1, now.Add(-time.Second))
		offer(t, q, 2, now)
		offer(t, q, 3, now.Add(time.Minute))
		offer(t, q, 4, now.Add(time.Hour))

		sd := goShutdown(t.Context(), q)
		synctest.Wait()
		_, ok := ready(sd)
		require.False(t, ok, "Shutdown waits while items are due and nobody takes them")
		_, err := q.Offer(9, now)
		assert.ErrorIs(t, err, dq.ErrClosed, "no offers once Shutdown began")
		_, err = q.Put(t.Context(), 9, now)
		assert.ErrorIs(t, err, dq.ErrClosed)
		assert.Equal(t, 4, q.Len())

		// A taker arriving after Shutdown began still gets due items.
		v, err := q.Take(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		synctest.Wait()
		_, ok = ready(sd)
		require.False(t, ok, "item 2 is still due")
		got, err := q.TakeBatch(t.Context(), nil, 0)
		require.NoError(t, err)
		assert.Equal(t, []int{2}, got)
		synctest.Wait()
		r, ok := ready(sd)
		require.True(t, ok, "nothing due is left: Shutdown returns")
		require.NoError(t, r.err)
		require.Len(t, r.rest, 2)
		assert.Equal(t, []int{3, 4}, values(r.rest))
		assert.True(t, r.rest[0].Deadline.Equal(now.Add(time.Minute)))
		assert.True(t, r.rest[1].Deadline.Equal(now.Add(time.Hour)))

		_, err = q.Take(t.Context())
		assert.ErrorIs(t, err, dq.ErrClosed, "the queue is closed afterwards")
		s := q.Stats()
		assert.Equal(t, dq.Stats{Offered: 4, Taken: 2, Drained: 2}, withoutLateness(s))
	})
}

func withoutLateness(s dq.Stats) dq.Stats { s.Lateness = dq.Histogram{}; s.Wakeups = 0; return s }

// With nothing due, Shutdown closes at once and blocked takers get
// ErrClosed; with an item due, a taker that comes after Shutdown began
// still gets it, and only then does Shutdown close.
func TestShutdownBlockedTakersKeepTaking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		now := time.Now()
		offer(t, q, 1, now.Add(time.Second))
		t1, t2 := goTake(t.Context(), q), goTake(t.Context(), q)
		synctest.Wait()

		// Nothing due yet: Shutdown closes at once and returns item 1.
		rest, err := q.Shutdown(t.Context())
		require.NoError(t, err)
		assert.Equal(t, []int{1}, values(rest))
		for _, ch := range []<-chan result[int]{t1, t2} {
			r := <-ch
			assert.ErrorIs(t, r.err, dq.ErrClosed)
		}

		q = dq.New[int]()
		offer(t, q, 1, now)
		offer(t, q, 2, now)
		t1 = goTake(t.Context(), q)
		synctest.Wait()
		r1 := <-t1
		require.NoError(t, r1.err)
		// Item 2 is due; a taker comes after Shutdown began.
		sd := goShutdown(t.Context(), q)
		synctest.Wait()
		t2 = goTake(t.Context(), q)
		r2 := <-t2
		require.NoError(t, r2.err)
		assert.Equal(t, []int{1, 2}, []int{r1.v, r2.v})
		r := <-sd
		assert.NoError(t, r.err)
		assert.Nil(t, r.rest)
	})
}

// When ctx ends first, Shutdown closes the queue and returns everything
// left, due items included, with ctx.Err().
func TestShutdownCtxEndsReturnsDueItemsToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		now := time.Now()
		offer(t, q, 1, now)
		offer(t, q, 2, now.Add(time.Hour))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		rest, err := q.Shutdown(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, []int{1, 2}, values(rest))
		assert.Equal(t, now.Add(time.Second), time.Now(), "it waited for ctx, no longer")
		_, ok := q.Poll()
		assert.False(t, ok)
		_, err = q.Offer(3, now)
		assert.ErrorIs(t, err, dq.ErrClosed)
	})
}

// Puts blocked on a full queue return ErrClosed as soon as Shutdown begins.
func TestShutdownWakesBlockedPuts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int](dq.WithCapacity(1))
		offer(t, q, 1, time.Now())
		p := goPut(t.Context(), q, 2, time.Now())
		synctest.Wait()
		assert.Equal(t, 1, q.Stats().BlockedPuts)
		assert.Zero(t, q.Stats().Waiting, "Waiting counts takers only")
		sd := goShutdown(t.Context(), q)
		synctest.Wait()
		r, ok := ready(p)
		require.True(t, ok, "blocked Put woken by Shutdown")
		assert.ErrorIs(t, r.err, dq.ErrClosed)
		assert.Zero(t, q.Stats().BlockedPuts, "a waiting Shutdown is not a blocked Put")
		v, ok := q.Poll()
		require.True(t, ok)
		assert.Equal(t, 1, v)
		res := <-sd
		assert.NoError(t, res.err)
		assert.Nil(t, res.rest)
	})
}

// Whatever makes the due items go away ends the wait: Remove, Reschedule
// of the head into the future, Drain, Close (which leaves the due item
// undelivered, so Shutdown says ErrClosed).
func TestShutdownEndsWhenDueItemsLeaveOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(q *dq.Queue[int], h dq.Handle)
		rest []int
		err  error
	}{
		{"Remove", func(q *dq.Queue[int], h dq.Handle) { q.Remove(h) }, []int{2}, nil},
		{"Reschedule", func(q *dq.Queue[int], h dq.Handle) { q.Reschedule(h, time.Now().Add(2*time.Hour)) }, []int{2, 1}, nil},
		{"Drain", func(q *dq.Queue[int], h dq.Handle) { q.Drain() }, nil, nil},
		{"Close", func(q *dq.Queue[int], h dq.Handle) { q.Close() }, []int{1, 2}, dq.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := dq.New[int]()
				h := offer(t, q, 1, time.Now())
				offer(t, q, 2, time.Now().Add(time.Hour))
				sd := goShutdown(t.Context(), q)
				synctest.Wait()
				tc.act(q, h)
				synctest.Wait()
				r, ok := ready(sd)
				require.True(t, ok, "Shutdown returned")
				assert.Equal(t, tc.err, r.err)
				assert.Equal(t, tc.rest, values(r.rest))
			})
		})
	}
}

// Concurrent Shutdowns all return; the remaining items go to exactly one.
func TestShutdownConcurrentCallsShareTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		offer(t, q, 1, time.Now())
		offer(t, q, 2, time.Now().Add(time.Hour))
		a, b := goShutdown(t.Context(), q), goShutdown(t.Context(), q)
		synctest.Wait()
		_, ok := q.Poll()
		require.True(t, ok)
		ra, rb := <-a, <-b
		assert.NoError(t, ra.err)
		assert.NoError(t, rb.err)
		assert.ElementsMatch(t, []int{2}, append(values(ra.rest), values(rb.rest)...))
		// After the queue closed, Shutdown returns at once with nothing.
		rest, err := q.Shutdown(t.Context())
		assert.NoError(t, err)
		assert.Nil(t, rest)
	})
}

// Keyed.Shutdown refuses new keys and replacements, hands out due keys and
// returns the rest with keys; the key index empties with the queue.
func TestKeyedShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		now := time.Now()
		_, err := k.Schedule("due", 1, now)
		require.NoError(t, err)
		_, err = k.Schedule("later", 2, now.Add(time.Hour))
		require.NoError(t, err)
		ch := make(chan []dq.KeyedEntry[string, int], 1)
		go func() {
			rest, err := k.Shutdown(t.Context())
			assert.NoError(t, err)
			ch <- rest
		}()
		synctest.Wait()
		_, err = k.Schedule("later", 3, now)
		assert.ErrorIs(t, err, dq.ErrClosed, "replacing is an offer too")
		_, err = k.Add("new", 3, now)
		assert.ErrorIs(t, err, dq.ErrClosed)
		key, v, err := k.Take(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "due", key)
		assert.Equal(t, 1, v)
		rest := <-ch
		require.Len(t, rest, 1)
		assert.Equal(t, "later", rest[0].Key)
		assert.Equal(t, 2, rest[0].Value)
		assert.True(t, rest[0].Deadline.Equal(now.Add(time.Hour)))
		assert.False(t, k.Contains("later"))
		assert.Zero(t, dq.KeyedIndexLen(k))
	})
}

// Regression (found in review): when Close ended Shutdown's wait while
// items were due, Shutdown returned them with a nil error, which its doc
// ties to "no due item is left". It now returns ErrClosed with them; with
// nothing due when the queue closes, the error stays nil.
func TestShutdownEndedByCloseWithItemsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		now := time.Now()
		offer(t, q, 1, now.Add(-time.Second)) // due, and nobody takes it
		offer(t, q, 2, now.Add(time.Hour))
		sd := goShutdown(context.Background(), q)
		synctest.Wait()
		q.Close()
		synctest.Wait()
		r, ok := ready(sd)
		require.True(t, ok)
		require.Len(t, r.rest, 2)
		assert.Equal(t, 1, r.rest[0].Value)
		assert.ErrorIs(t, r.err, dq.ErrClosed)

		// Closed with nothing due: a clean finish.
		q2 := dq.New[int]()
		offer(t, q2, 3, now.Add(time.Hour))
		q2.Close()
		rest, err := q2.Shutdown(context.Background())
		assert.NoError(t, err)
		assert.Len(t, rest, 1)
	})
}
