package redisq

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestWakeupIsPromptNotPolled(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "wake", WithWakeCap(10*time.Second))
	ctx := context.Background()
	got := make(chan time.Time, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m, err := q.Take(ctx)
		if err == nil {
			got <- time.Now()
			_ = m.Ack(ctx)
		}
		close(got)
	}()
	// Let the consumer block with nothing scheduled (its wait is the 10s cap).
	eventually(t, 5*time.Second, "consumer blocked", func() bool {
		return blockedClients(t, q) == 1
	})
	start := time.Now()
	_, err := q.EnqueueAfter(ctx, "now", nil, 0)
	require.NoError(t, err)
	at, ok := <-got
	require.True(t, ok)
	require.Less(t, at.Sub(start), time.Second, "wake-up must not wait for the cap")
	wg.Wait()

	// A delayed item is delivered at its due time, not at the cap.
	go func() {
		m, err := q.Take(ctx)
		if err == nil {
			_ = m.Ack(ctx)
		}
	}()
	eventually(t, 5*time.Second, "consumer blocked", func() bool { return blockedClients(t, q) == 1 })
	due, err := q.EnqueueAfter(ctx, "later", nil, 400*time.Millisecond)
	require.NoError(t, err)
	eventually(t, 3*time.Second, "delayed item acked", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Counters["acked"] == 2
	})
	require.Less(t, redisNow(t, q.client).Sub(due), 1500*time.Millisecond)
	audit(t, q)
}

func blockedClients(t testing.TB, q *Queue) int {
	info, err := q.client.Info(context.Background(), "clients").Result()
	require.NoError(t, err)
	var n int
	for _, line := range splitLines(info) {
		if _, err := fmt.Sscanf(line, "blocked_clients:%d", &n); err == nil {
			return n
		}
	}
	return -1
}

// blockedTakes counts the clients of q's server blocked in BZPOPMIN, the
// wait of a Take (a Worker's recurring keeper blocks in XREAD too).
func blockedTakes(t testing.TB, q *Queue) int {
	list, err := q.client.ClientList(context.Background()).Result()
	require.NoError(t, err)
	n := 0
	for _, line := range splitLines(list) {
		if strings.Contains(line, " cmd=bzpopmin") && strings.Contains(line, " flags=b") {
			n++
		}
	}
	return n
}

// An idle consumer does not poll: each blocked wait costs one BZPOPMIN and
// one claim script, so the command count follows the wake cap, not a tick.
func TestIdleConsumerDoesNotPoll(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	h := &countHook{}
	c.AddHook(h)
	const wakeCap = 250 * time.Millisecond
	q := newQueue(t, c, "idle", WithWakeCap(wakeCap))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _, _ = q.Take(ctx) }()
	eventually(t, 5*time.Second, "blocked", func() bool { return h.bzpopmin.Load() >= 1 })
	total0, bz0, ev0 := h.total.Load(), h.bzpopmin.Load(), h.eval.Load()
	const idle = 1500 * time.Millisecond
	time.Sleep(idle) // the idle period being measured
	total, bz, ev := h.total.Load()-total0, h.bzpopmin.Load()-bz0, h.eval.Load()-ev0
	cancel()
	<-done
	t.Logf("idle %v, wake cap %v: %d commands (%d BZPOPMIN, %d EVALSHA)", idle, wakeCap, total, bz, ev)
	maxWaits := int64(idle/wakeCap) + 1
	require.LessOrEqual(t, bz, maxWaits)
	require.GreaterOrEqual(t, bz, maxWaits-3, "consumer should be blocking, one wait per cap")
	require.LessOrEqual(t, ev, bz+1, "one claim per wait")
	require.Equal(t, total, bz+ev, "nothing else is sent while idle")

	// Server side agrees: the number of BZPOPMIN calls equals the client count.
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	require.Contains(t, info, "cmdstat_bzpopmin:calls=")
	for _, line := range splitLines(info) {
		if strings.HasPrefix(line, "cmdstat_bzpopmin:") {
			var calls int64
			_, err := fmt.Sscanf(line, "cmdstat_bzpopmin:calls=%d", &calls)
			require.NoError(t, err)
			require.Equal(t, h.bzpopmin.Load(), calls)
		}
	}
}

// Items arriving at a steady rate with several consumers are delivered
// close to their due time: the timer hand-over between consumers never
// leaves a due item waiting for the wake cap.
func TestSteadyRateNoCapStalls(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	q := newQueue(t, c, "steady") // default 5s wake cap
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 400
	var mu sync.Mutex
	var late []time.Duration
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := q.Take(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				late = append(late, m.ClaimedAt.Sub(m.Due))
				if len(late) == n {
					cancel()
				}
				mu.Unlock()
				_ = m.Ack(context.Background())
			}
		}()
	}
	tick := time.NewTicker(2 * time.Millisecond)
	for i := 0; i < n; i++ {
		<-tick.C
		_, err := q.EnqueueAfter(context.Background(), fmt.Sprint(i), nil, 50*time.Millisecond)
		require.NoError(t, err)
	}
	tick.Stop()
	wg.Wait()
	require.Len(t, late, n)
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	t.Logf("lateness by Redis clock: p50 %v p99 %v max %v", late[n/2], late[n*99/100], late[n-1])
	require.GreaterOrEqual(t, late[0], time.Duration(0), "delivered early")
	require.Less(t, late[n-1], time.Second, "an item waited for the wake cap")
	audit(t, q)
}

// A timer owner that leaves Take (ctx cancelled) hands the timer over: the
// remaining consumer gets the item at its due time, not a wake cap later.
func TestTimerOwnerLeavingHandsOver(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "handover", WithWakeCap(10*time.Second))
	ctx := context.Background()
	due, err := q.EnqueueAfter(ctx, "x", nil, 600*time.Millisecond)
	require.NoError(t, err)
	// First consumer becomes the timer owner.
	octx, cancelOwner := context.WithCancel(ctx)
	ownerDone := make(chan error, 1)
	go func() { _, err := q.Take(octx); ownerDone <- err }()
	eventually(t, 5*time.Second, "timer owned", func() bool {
		n, err := c.Exists(ctx, q.db.Keys.Timer).Result()
		require.NoError(t, err)
		return n == 1
	})
	// Second consumer waits on the marker (10s cap).
	got := takeAsync(func() (*Message, error) { return q.Take(ctx) })
	eventually(t, 5*time.Second, "both blocked", func() bool { return blockedClients(t, q) == 2 })
	cancelOwner()
	require.ErrorIs(t, <-ownerDone, context.Canceled)
	m, ok := <-got
	require.True(t, ok)
	require.Equal(t, "x", m.ID)
	require.Less(t, m.ClaimedAt.Sub(due), 2*time.Second, "waited for the wake cap")
	require.NoError(t, m.Ack(ctx))
	audit(t, q)
}

func TestCloseAndCancelUnblockTake(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q, err := New(context.Background(), c, "close", WithWakeCap(30*time.Second))
	require.NoError(t, err)

	// ctx cancellation ends a blocked wait promptly (the client does not
	// honour context deadlines by default, so this exercises the private wake key).
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := q.Take(ctx); errc <- err }()
	eventually(t, 5*time.Second, "blocked", func() bool { return blockedClients(t, q) == 1 })
	start := time.Now()
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Less(t, time.Since(start), 2*time.Second)

	go func() { _, err := q.Take(context.Background()); errc <- err }()
	eventually(t, 5*time.Second, "blocked", func() bool { return blockedClients(t, q) == 1 })
	start = time.Now()
	require.NoError(t, q.Close())
	require.ErrorIs(t, <-errc, ErrClosed)
	require.Less(t, time.Since(start), 2*time.Second)
	_, err = q.Take(context.Background())
	require.ErrorIs(t, err, ErrClosed)
	_, err = q.EnqueueAfter(context.Background(), "x", nil, 0)
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, q.Close())
}

// The unblock push (ctx cancel / Close) goes through the *wait* client.
// When that client's pool is fully held by blocked BZPOPMINs (a dedicated
// wait client sized to the number of consumers, as WithWaitClient suggests),
// the push cannot get a connection, times out after 2s, and the blocked Take
// only returns at the BZPOPMIN timeout (the wake cap).
func TestRegressionCancelWithFullWaitPool(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	wc := s.client(t, func(o *redis.Options) { o.PoolSize = 2 })
	q := newQueue(t, c, "pool", WithWakeCap(8*time.Second), WithWaitClient(wc))

	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	err1 := make(chan error, 1)
	err2 := make(chan error, 1)
	go func() { _, err := q.Take(ctx1); err1 <- err }()
	go func() { _, err := q.Take(ctx2); err2 <- err }()
	eventually(t, 5*time.Second, "both blocked", func() bool { return blockedClients(t, q) == 2 })

	start := time.Now()
	cancel1()
	err := <-err1
	el := time.Since(start)
	cancel2()
	<-err2
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, el, 2*time.Second, "ctx cancel did not unblock Take promptly (took %v)", el)
}

// R1b. Same with Close: Close blocks for about the wake cap.
func TestRegressionCloseWithFullWaitPool(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	wc := s.client(t, func(o *redis.Options) { o.PoolSize = 2 })
	q := newQueue(t, c, "pool2", WithWakeCap(8*time.Second), WithWaitClient(wc))
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { _, err := q.Take(context.Background()); errs <- err }()
	}
	eventually(t, 5*time.Second, "both blocked", func() bool { return blockedClients(t, q) == 2 })
	start := time.Now()
	require.NoError(t, q.Close())
	el := time.Since(start)
	require.ErrorIs(t, <-errs, ErrClosed)
	require.ErrorIs(t, <-errs, ErrClosed)
	require.Less(t, el, 2*time.Second, "Close took %v", el)
}

// cancelOnMarker cancels a context when a BZPOPMIN reply pops the wake marker,
// i.e. a ctx cancel (or Close) that lands between the pop and the claim.
type cancelOnMarker struct {
	wake   string
	cancel context.CancelFunc
}

func (h *cancelOnMarker) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cancelOnMarker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.EqualFold(cmd.Name(), "bzpopmin") && err == nil {
			popped := false
			switch v := cmd.(type) {
			case *redis.ZWithKeyCmd:
				popped = v.Val() != nil && v.Val().Key == h.wake
			case *redis.Cmd:
				if a, ok := v.Val().([]interface{}); ok && len(a) > 0 {
					popped = a[0] == h.wake
				}
			}
			if popped {
				h.cancel()
			}
		}
		return err
	}
}
func (h *cancelOnMarker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A non-owner waiter that pops the wake marker and then leaves Take (ctx
// cancelled / Close in that window) drops the wake-up: the other consumer
// (here a second process) waits for the full wake cap for an item that was
// due the whole time.
func TestRegressionMarkerLostWhenPopperLeaves(t *testing.T) {
	s := startRedis(t)
	ca := s.client(t)
	cb := s.client(t)
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	qa := newQueue(t, ca, "lost", WithWakeCap(10*time.Second))
	qb := newQueue(t, cb, "lost", WithWakeCap(10*time.Second))
	ca.AddHook(&cancelOnMarker{wake: qa.db.Keys.Wake, cancel: cancelA})

	errA := make(chan error, 1)
	go func() { _, err := qa.Take(ctxA); errA <- err }()
	eventually(t, 5*time.Second, "A blocked", func() bool { return blockedClients(t, qa) == 1 })
	got := make(chan time.Time, 1)
	go func() {
		m, err := qb.Take(context.Background())
		if err == nil {
			got <- time.Now()
			_ = m.Ack(context.Background())
		}
		close(got)
	}()
	eventually(t, 5*time.Second, "B blocked", func() bool { return blockedClients(t, qa) == 2 })

	start := time.Now()
	_, err := qa.EnqueueAfter(context.Background(), "x", nil, 0)
	require.NoError(t, err)
	require.ErrorIs(t, <-errA, context.Canceled)
	at, ok := <-got
	require.True(t, ok)
	require.Less(t, at.Sub(start), 2*time.Second, "due item waited %v (wake cap) after the marker popper left", at.Sub(start))
}

// Regression: a Take called with a ctx already done while its Queue owned
// the timer left the Queue marked as waiting for the deadline, so the
// Queue's watch never rang the marker and another process's consumer got
// the item a wake cap late.
func TestRegressionTakeWithDoneCtxKeepsTimerWatch(t *testing.T) {
	s := startRedis(t)
	a := newQueue(t, s.client(t), "donectx", WithWakeCap(10*time.Second))
	b := newQueue(t, s.client(t), "donectx", WithWakeCap(10*time.Second))
	ctx := context.Background()
	due, err := a.EnqueueAfter(ctx, "x", nil, 800*time.Millisecond)
	require.NoError(t, err)
	// a's claim finds nothing due and takes the timer.
	takeGivingUp(t, a, 50*time.Millisecond)
	// b waits on the marker for its 10s cap: a acts at the due time.
	got := takeAsync(func() (*Message, error) { return b.Take(ctx) })
	eventually(t, 5*time.Second, "b blocked", func() bool { return blockedClients(t, b) == 1 })
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = a.Take(done)
	require.ErrorIs(t, err, context.Canceled)
	m, ok := <-got
	require.True(t, ok)
	require.Equal(t, "x", m.ID)
	require.Less(t, m.ClaimedAt.Sub(due), 2*time.Second, "waited for the wake cap")
	require.NoError(t, m.Ack(ctx))
	audit(t, b)
}

// takeGivingUp runs a Take that gives up after d with nothing due: its
// claim leaves q owning the timer for a later due time.
func takeGivingUp(t testing.TB, q *Queue, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := q.Take(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// takeAsync runs take in a goroutine: the channel yields its message, or
// closes empty on an error.
func takeAsync(take func() (*Message, error)) <-chan *Message {
	got := make(chan *Message, 1)
	go func() {
		if m, err := take(); err == nil {
			got <- m
		}
		close(got)
	}()
	return got
}
