package redisq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// gateHook holds every script call until the test lets it go, counting
// script calls and the items of each (1 for the enqueue script).
type gateHook struct {
	gate  chan struct{} // nil or closed: calls pass at once
	fail  atomic.Pointer[error]
	calls atomic.Int64
	sizes chan int
}

func (*gateHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}
func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := strings.ToLower(cmd.Name()); n != "evalsha" && n != "eval" {
			return next(ctx, cmd)
		}
		h.calls.Add(1)
		if h.sizes != nil {
			select {
			case h.sizes <- len(cmd.Args()):
			default:
			}
		}
		if h.gate != nil {
			<-h.gate
		}
		if e := h.fail.Load(); e != nil {
			cmd.SetErr(*e)
			return *e
		}
		return next(ctx, cmd)
	}
}
func (*gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// waitPending waits until n Enqueue calls of q wait to be sent.
func waitPending(t testing.TB, q *Queue, n int, what string) {
	t.Helper()
	eventually(t, 5*time.Second, what, func() bool {
		q.enq.mu.Lock()
		defer q.enq.mu.Unlock()
		return len(q.enq.pending) == n
	})
}

// loadScripts loads scripts so that no call meets NOSCRIPT (go-redis then
// sends the script again, a second call through the hooks).
func loadScripts(t testing.TB, c *redis.Client, scripts ...*script) {
	t.Helper()
	for _, s := range scripts {
		require.NoError(t, s.Load(context.Background(), c).Err())
	}
}

// A lone Enqueue is one call of the enqueue script, as without combining.
func TestEnqueueAloneIsOneScriptCall(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "combine-alone")
	ctx := context.Background()
	loadScripts(t, c, scriptEnqueue)
	h := &gateHook{}
	c.AddHook(h)
	for i := range 3 {
		_, err := q.EnqueueAfter(ctx, fmt.Sprint(i), nil, time.Hour)
		require.NoError(t, err)
		require.EqualValues(t, i+1, h.calls.Load())
	}
}

// Calls made while a round trip is in flight (fewer than enqueueSpread, so
// none starts a round trip of its own) are sent together, in arrival order,
// each with its own outcome; the combiner then goes idle.
func TestEnqueueCallsInFlightAreCombined(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "combine")
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "dup", nil, time.Hour)
	require.NoError(t, err)
	loadScripts(t, c, scriptEnqueue, scriptEnqueueMany)
	h := &gateHook{gate: make(chan struct{}), sizes: make(chan int, 16)}
	c.AddHook(h)

	type result struct {
		due time.Time
		err error
	}
	first := make(chan result, 1)
	go func() {
		due, err := q.EnqueueAfter(ctx, "first", nil, 0)
		first <- result{due, err}
	}()
	<-h.sizes // the first call is in flight, alone
	const n = enqueueSpread - 1
	out := make([]chan result, n)
	for i := range n {
		out[i] = make(chan result, 1)
		id := fmt.Sprint("w", i)
		if i == 1 {
			id = "dup"
		}
		go func() {
			due, err := q.EnqueueAfter(ctx, id, []byte(id), time.Duration(i)*time.Minute)
			out[i] <- result{due, err}
		}()
		waitPending(t, q, i+1, "call waiting")
	}
	h.gate <- struct{}{} // the first call's round trip
	r := <-first
	require.NoError(t, r.err)
	require.Equal(t, 8+9*n, <-h.sizes, "one enqueue-many call carries all of them: EVALSHA, sha, the key count, 3 keys, prefix, k, and per item its hash key and 8 arguments (id, payload, when twice, the number of job fields: 0, no unique key, its window and mode)")
	close(h.gate) // this one and the test's own scripts
	res := make([]result, n)
	for i := range n {
		res[i] = <-out[i]
	}
	require.EqualValues(t, 2, h.calls.Load(), "two round trips for all calls")
	for i, r := range res {
		if i == 1 {
			require.ErrorIs(t, r.err, ErrDuplicate)
			continue
		}
		require.NoError(t, r.err)
		it, err := q.Get(ctx, fmt.Sprint("w", i))
		require.NoError(t, err)
		require.Equal(t, it.Due, r.due)
		require.Equal(t, []byte(fmt.Sprint("w", i)), it.Payload)
	}
	q.enq.mu.Lock()
	require.Zero(t, q.enq.senders, "idle again")
	require.Empty(t, q.enq.pending)
	q.enq.mu.Unlock()
	audit(t, q)
}

// A waiting call whose ctx ends is never sent; one in a batch in flight
// returns ctx.Err() at once. Neither stalls the others.
func TestEnqueueCancelledWhileWaiting(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "combine-cancel")
	ctx := context.Background()
	loadScripts(t, c, scriptEnqueue, scriptEnqueueMany)
	h := &gateHook{gate: make(chan struct{}), sizes: make(chan int, 16)}
	c.AddHook(h)
	errA := make(chan error, 1)
	go func() { errA <- q.Enqueue(ctx, "a", nil, time.Now().Add(time.Hour)) }()
	<-h.sizes
	bctx, cancelB := context.WithCancel(ctx)
	errB := make(chan error, 1)
	go func() { errB <- q.Enqueue(bctx, "b", nil, time.Now().Add(time.Hour)) }()
	errC := make(chan error, 1)
	go func() { errC <- q.Enqueue(ctx, "c", nil, time.Now().Add(time.Hour)) }()
	waitPending(t, q, 2, "b and c waiting")
	cancelB()
	require.ErrorIs(t, <-errB, context.Canceled)
	h.gate <- struct{}{} // a
	require.NoError(t, <-errA)
	<-h.sizes // c, alone: b left
	h.gate <- struct{}{}
	require.NoError(t, <-errC)

	// A call in a batch that another call sends returns at once when its
	// ctx ends; the item is stored all the same.
	errE := make(chan error, 1)
	go func() { errE <- q.Enqueue(ctx, "e", nil, time.Now().Add(time.Hour)) }()
	<-h.sizes
	errF := make(chan error, 1)
	go func() { errF <- q.Enqueue(ctx, "f", nil, time.Now().Add(time.Hour)) }()
	waitPending(t, q, 1, "f waiting first")
	dctx, cancelD := context.WithCancel(ctx)
	errD := make(chan error, 1)
	go func() { errD <- q.Enqueue(dctx, "d", nil, time.Now().Add(time.Hour)) }()
	waitPending(t, q, 2, "f and d waiting")
	h.gate <- struct{}{} // e; f sends f and d
	require.NoError(t, <-errE)
	<-h.sizes
	cancelD()
	require.ErrorIs(t, <-errD, context.Canceled)
	close(h.gate)
	require.NoError(t, <-errF)
	eventually(t, 5*time.Second, "d stored", func() bool {
		_, err := q.Get(ctx, "d")
		return err == nil
	})
	_, err := q.Get(ctx, "b")
	require.ErrorIs(t, err, ErrNotFound, "a cancelled waiting call is never sent")
	audit(t, q)
}

// A failed round trip fails every call it carried.
func TestEnqueueBatchErrorReachesEveryCall(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "combine-err")
	ctx := context.Background()
	h := &gateHook{gate: make(chan struct{}), sizes: make(chan int, 16)}
	c.AddHook(h)
	errA := make(chan error, 1)
	go func() { errA <- q.Enqueue(ctx, "a", nil, time.Now()) }()
	<-h.sizes
	errs := make(chan error, 3)
	for i := range 3 {
		go func() { errs <- q.Enqueue(ctx, fmt.Sprint(i), nil, time.Now()) }()
	}
	waitPending(t, q, 3, "three waiting")
	boom := errors.New("boom")
	h.fail.Store(&boom)
	h.gate <- struct{}{}
	require.ErrorIs(t, <-errA, boom)
	<-h.sizes
	close(h.gate)
	for range 3 {
		require.ErrorIs(t, <-errs, boom)
	}
}

// Many goroutines enqueue overlapping ids, some with a ctx that ends at a
// random moment: each id is stored at most once, by a call that reported
// success or one whose ctx ended; every success is stored with the due
// time it reported; duplicates are reported only for stored ids; and
// Enqueued counts the stored items.
func TestEnqueueCombinedConcurrentHistory(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "combine-history")
	ctx := context.Background()
	const workers, calls, ids = 16, 60, 300
	var mu sync.Mutex
	ok := map[string]time.Time{}
	dup := map[string]bool{}
	unknown := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range calls {
				id := fmt.Sprint(rng.IntN(ids))
				cctx, cancel := context.WithCancel(ctx)
				if rng.IntN(4) == 0 {
					time.AfterFunc(time.Duration(rng.IntN(300))*time.Microsecond, cancel)
				}
				var due time.Time
				var err error
				if rng.IntN(2) == 0 {
					due, err = q.EnqueueAfter(cctx, id, []byte(id), time.Duration(rng.IntN(1000))*time.Second)
				} else {
					due = time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
					err = q.Enqueue(cctx, id, []byte(id), due)
				}
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					_, twice := ok[id]
					if twice {
						t.Errorf("id %s stored twice", id)
					}
					ok[id] = due
				case errors.Is(err, ErrDuplicate):
					dup[id] = true
				case errors.Is(err, context.Canceled):
					unknown[id] = true
				default:
					t.Errorf("enqueue %s: %v", id, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var stored int64
	for i := range ids {
		id := fmt.Sprint(i)
		it, err := q.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			require.NotContains(t, ok, id)
			require.False(t, dup[id], "duplicate reported for %s, never stored", id)
			continue
		}
		require.NoError(t, err)
		stored++
		if due, found := ok[id]; found {
			require.Equal(t, due, it.Due, id)
		} else {
			require.True(t, unknown[id], "%s stored by no call", id)
		}
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, stored, st.Enqueued)
	audit(t, q)
}

// Regression: the sender of a batch ran it under context.WithoutCancel even
// when the batch held its own call alone, so a lone Enqueue ignored its ctx
// (it waited seconds for a pool connection past a 100ms deadline).
func TestRegressionLoneEnqueueKeepsItsCtx(t *testing.T) {
	c := startRedis(t).client(t, func(o *redis.Options) { o.PoolSize = 1 })
	q := newQueue(t, c, "lone-ctx")
	ctx := context.Background()
	held := make(chan struct{})
	go func() {
		// Holds the only connection for 2s.
		_ = c.Do(ctx, "blpop", "other", 2).Err()
		close(held)
	}()
	eventually(t, 5*time.Second, "connection held", func() bool { return c.PoolStats().IdleConns == 0 && c.PoolStats().TotalConns == 1 })
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := q.Enqueue(cctx, "a", nil, time.Now())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Second)
	<-held
}
