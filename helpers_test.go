package delayqueue_test

import (
	"context"
	"testing"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Helpers shared by the core's tests, and the leak check over all of them.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

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
