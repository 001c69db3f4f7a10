package delayqueue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"pgregory.net/rapid"
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

// smTakers runs the blocked takers of a rapid state machine (queueSM,
// keyedSM): each taker calls Take in its own goroutine, sends one result R,
// then a token on done. The machine's settle collects the results and
// forgets each taker that returned.
type smTakers[R any] struct {
	takers    map[int]context.CancelFunc // live blocked takers
	cancelled map[int]bool
	nextTaker int
	results   chan R
	done      chan struct{} // one token per finished taker
}

func newSMTakers[R any]() smTakers[R] {
	return smTakers[R]{
		takers:    map[int]context.CancelFunc{},
		cancelled: map[int]bool{},
		results:   make(chan R, 1000),
		done:      make(chan struct{}, 1000),
	}
}

// startTaker starts taker number id, which runs take.
func (s *smTakers[R]) startTaker(take func(ctx context.Context, id int) R) {
	id := s.nextTaker
	s.nextTaker++
	ctx, cancel := context.WithCancel(context.Background())
	s.takers[id] = cancel
	go func() {
		defer func() { s.done <- struct{}{} }()
		s.results <- take(ctx, id)
	}()
}

// cancelTaker cancels a live taker drawn by t (or skips the step), settles,
// and checks that the taker returned.
func (s *smTakers[R]) cancelTaker(t *rapid.T, settle func(*rapid.T)) {
	var ids []int
	for id := range s.takers {
		if !s.cancelled[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		t.Skip("no taker")
	}
	slices.Sort(ids)
	id := rapid.SampledFrom(ids).Draw(t, "taker")
	s.cancelled[id] = true
	s.takers[id]()
	settle(t)
	if _, ok := s.takers[id]; ok {
		t.Fatalf("cancelled taker %d did not return", id)
	}
}

// waitTakers waits until every taker started has finished; call it after
// Close.
func (s *smTakers[R]) waitTakers() {
	for range s.nextTaker {
		<-s.done
	}
}

// advance moves the bubble's fake clock by a few drawn milliseconds, at
// times a nanosecond either side, so deadlines are crossed exactly and by
// the least step.
func advance(t *rapid.T) {
	d := time.Duration(rapid.IntRange(0, 6).Draw(t, "ms")) * time.Millisecond
	if rapid.Bool().Draw(t, "ns") {
		d += time.Duration(rapid.IntRange(-1, 1).Draw(t, "dns"))
	}
	if d > 0 {
		time.Sleep(d)
	}
}
