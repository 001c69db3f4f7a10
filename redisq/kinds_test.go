package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The tests every kind of queue runs, as River's riverdrivertest.Exercise
// runs one suite on every driver: the same behaviour through the same
// interfaces, a Queue or a Partitioned of three partitions.

// kindQueue is what the shared tests use of a queue, whatever its kind.
type kindQueue interface {
	Producer
	Consumer
	Admin
	Limiter
	Recurring
}

// queueKind opens queues of one kind, and Workers over them.
type queueKind struct {
	name   string
	open   func(t *testing.T, c redis.UniversalClient, name string, opts ...Option) kindQueue
	worker func(q kindQueue, h Handler, opts WorkerOptions) *Worker
}

var queueKinds = []queueKind{
	{
		name: "Queue",
		open: func(t *testing.T, c redis.UniversalClient, name string, opts ...Option) kindQueue {
			return newQueue(t, c, name, opts...)
		},
		worker: func(q kindQueue, h Handler, opts WorkerOptions) *Worker { return NewWorker(q.(*Queue), h, opts) },
	},
	{
		name: "Partitioned",
		open: func(t *testing.T, c redis.UniversalClient, name string, opts ...Option) kindQueue {
			return newPartitioned(t, c, name, 3, opts...)
		},
		worker: func(q kindQueue, h Handler, opts WorkerOptions) *Worker {
			return NewMultiWorker(h, opts, WorkerQueue{Partitioned: q.(*Partitioned)})
		},
	},
}

// forEachKind runs f as a subtest for every kind of queue, on a server of
// its own.
func forEachKind(t *testing.T, f func(t *testing.T, k queueKind, c redis.UniversalClient)) {
	for _, k := range queueKinds {
		t.Run(k.name, func(t *testing.T) {
			s := startRedis(t, "--appendfsync", "no")
			f(t, k, s.client(t))
		})
	}
}

// drain takes what is due now, in batches, until a take of wait finds
// nothing, and returns it.
func drain(t *testing.T, q Consumer, wait time.Duration) []*Message {
	t.Helper()
	var all []*Message
	for {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		ms, err := q.TakeBatch(ctx, 100)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return all
		}
		require.NoError(t, err)
		all = append(all, ms...)
	}
}

// A key's rate limit holds for its items, wherever the queue keeps them,
// and the items of other keys are not held behind it.
func TestKindsRateLimit(t *testing.T) {
	forEachKind(t, func(t *testing.T, k queueKind, c redis.UniversalClient) {
		ctx := context.Background()
		q := k.open(t, c, "krate")
		require.NoError(t, q.SetRateLimit(ctx, "k", RateLimit{N: 2, Per: time.Hour}))
		var items []EnqueueItem
		for i := range 5 {
			items = append(items, EnqueueItem{ID: fmt.Sprint("k", i), At: time.Unix(1, 0), Job: Job{LimitKey: "k"}})
		}
		for i := range 6 {
			items = append(items, EnqueueItem{ID: fmt.Sprint("o", i), At: time.Unix(1, 0), Job: Job{LimitKey: fmt.Sprint("other", i)}})
		}
		res, err := q.EnqueueMany(ctx, items)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
		got := drain(t, q, 300*time.Millisecond)
		var ks, os []string
		for _, m := range got {
			if m.LimitKey == "k" {
				ks = append(ks, m.ID)
			} else {
				os = append(os, m.ID)
			}
		}
		require.Equal(t, []string{"k0", "k1"}, ks, "two of the key an hour, in order")
		require.Len(t, os, 6, "the other keys' items are not held")
		st, err := q.RateLimitState(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, 2, st.Used)
		require.Equal(t, 3, st.Waiting)
		all, err := q.RateLimits(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		top, tot, err := q.TopRateLimits(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, top, 1)
		require.Equal(t, LimitTotals{Keys: 1, Read: 1, Waiting: 3}, tot)
		require.Empty(t, errsOf(q.AckMany(ctx, got)))
		require.NoError(t, q.SetRateLimit(ctx, "k", RateLimit{}))
		require.Len(t, drain(t, q, 300*time.Millisecond), 3, "removing the limit lets the rest go")
		r, err := q.Audit(ctx)
		require.NoError(t, err)
		require.True(t, r.OK(), "%v", r.Problems)
	})
}

// A key's concurrency limit holds across its leases, and each lease's end
// gives its place to the next item.
func TestKindsConcurrencyLimit(t *testing.T) {
	forEachKind(t, func(t *testing.T, k queueKind, c redis.UniversalClient) {
		ctx := context.Background()
		q := k.open(t, c, "kconc")
		require.NoError(t, q.SetConcurrencyLimit(ctx, "k", 1))
		for i := range 3 {
			_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprint("k", i), At: time.Unix(1, 0), Job: Job{LimitKey: "k"}})
			require.NoError(t, err)
		}
		for i := range 3 {
			got := drain(t, q, 300*time.Millisecond)
			require.Len(t, got, 1, "one at a time")
			require.Equal(t, fmt.Sprint("k", i), got[0].ID)
			st, err := q.ConcurrencyLimitState(ctx, "k")
			require.NoError(t, err)
			require.Equal(t, 1, st.Leased)
			require.NoError(t, got[0].Ack(ctx))
		}
		cs, err := q.ConcurrencyLimits(ctx)
		require.NoError(t, err)
		require.Len(t, cs, 1)
		r, err := q.Audit(ctx)
		require.NoError(t, err)
		require.True(t, r.OK(), "%v", r.Problems)
	})
}

// A unique key's window holds whatever the items' ids, and an operator
// can end it.
func TestKindsUniqueWindow(t *testing.T) {
	forEachKind(t, func(t *testing.T, k queueKind, c redis.UniversalClient) {
		ctx := context.Background()
		q := k.open(t, c, "kuniq")
		for i := range 12 { // ids of every partition
			_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprint("a", i), After: time.Hour, Job: Job{UniqueKey: "u", UniqueFor: time.Hour}})
			if i == 0 {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrUniqueHeld, "a%d", i)
			}
		}
		w, err := q.UniqueWindow(ctx, "u")
		require.NoError(t, err)
		require.Equal(t, "a0", w.ID)
		released, err := q.ReleaseUnique(ctx, "u")
		require.NoError(t, err)
		require.True(t, released)
		_, err = q.Add(ctx, EnqueueItem{ID: "b", After: time.Hour, Job: Job{UniqueKey: "u", UniqueFor: time.Hour}})
		require.NoError(t, err)
	})
}

// An item kept under a key is found by its id: Get, Reschedule, RunNow
// and Cancel.
func TestKindsKeyedItemsByID(t *testing.T) {
	forEachKind(t, func(t *testing.T, k queueKind, c redis.UniversalClient) {
		ctx := context.Background()
		q := k.open(t, c, "kbyid")
		for i := range 12 {
			id := fmt.Sprint("x", i)
			_, err := q.Add(ctx, EnqueueItem{ID: id, After: time.Hour, Job: Job{LimitKey: "tenant"}})
			require.NoError(t, err)
			it, err := q.Get(ctx, id)
			require.NoError(t, err, id)
			require.Equal(t, "tenant", it.LimitKey)
			require.NoError(t, q.Reschedule(ctx, id, time.Now().Add(2*time.Hour)))
			res, err := q.RunNow(ctx, id)
			require.NoError(t, err)
			require.Equal(t, RunNowMoved, res.Outcome)
			out, err := q.Cancel(ctx, id)
			require.NoError(t, err)
			require.Equal(t, CancelRemoved, out)
			_, err = q.Get(ctx, id)
			require.ErrorIs(t, err, ErrNotFound)
			_, err = q.Cancel(ctx, id)
			require.ErrorIs(t, err, ErrNotFound)
		}
	})
}

// A registration's occurrences run exactly once, however many Workers keep
// it, typed or not; the registration is read, paused and removed by name.
func TestKindsRecurringExactlyOnce(t *testing.T) {
	noLeaks(t)
	forEachKind(t, func(t *testing.T, k queueKind, c redis.UniversalClient) {
		ctx := context.Background()
		q := k.open(t, c, "krec", WithWakeCap(100*time.Millisecond))
		const period = 200 * time.Millisecond
		type tick struct{ N int }
		kind := JobKind[tick]{Name: "tick-" + k.name}
		_, err := kind.Register(ctx, q, "tick", Every(period), tick{N: 7})
		require.NoError(t, err)
		var mu sync.Mutex
		seen := map[string]int{}
		mux := NewMux()
		kind.Handle(mux, func(_ context.Context, m *Message, v tick) error {
			require.Equal(t, 7, v.N)
			mu.Lock()
			seen[m.ID]++
			mu.Unlock()
			return nil
		})
		for range 2 {
			runWorker(t, k.worker(q, mux.Serve, WorkerOptions{Concurrency: 2, Heartbeat: -1}))
		}
		eventually(t, 20*time.Second, "eight occurrences", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) >= 8
		})
		regs, err := q.Registrations(ctx)
		require.NoError(t, err)
		require.Len(t, regs, 1)
		require.Equal(t, "tick", regs[0].Name)
		r, err := q.Registration(ctx, "tick")
		require.NoError(t, err)
		require.JSONEq(t, `{"N":7}`, string(r.Payload))
		_, err = q.PauseRecurring(ctx, "tick")
		require.NoError(t, err)
		mu.Lock()
		var ats []time.Time
		for id, n := range seen {
			require.Equal(t, 1, n, "%s ran %d times", id, n)
			name, at, ok := Occurrence(id)
			require.True(t, ok)
			require.Equal(t, "tick", name)
			ats = append(ats, at)
		}
		mu.Unlock()
		slices.SortFunc(ats, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(ats); i++ {
			require.Equal(t, period, ats[i].Sub(ats[i-1]), "an occurrence is missing between %v and %v", ats[i-1], ats[i])
		}
		_, err = q.Unregister(ctx, "tick")
		require.NoError(t, err)
		_, err = q.Registration(ctx, "tick")
		require.ErrorIs(t, err, ErrNotFound)
	})
}
