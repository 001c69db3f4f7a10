package delayqueue_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Memory: items that left are not retained, and the steady state allocates
// nothing.

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
