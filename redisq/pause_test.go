package redisq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Pause during a backlog: nothing is leased while paused, in any process;
// producers, cancels and acks keep working; Resume wakes the blocked
// consumers at once (their wake cap is a minute) and they drain it.
func TestPauseDuringBacklog(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	const n = 300
	a := newQueue(t, s.client(t), "paused", WithWakeCap(time.Minute))
	seed(t, a, ids("i", n))
	held, err := a.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "i0", held.ID)

	before := redisNow(t, a.client).Truncate(time.Millisecond)
	require.NoError(t, a.Pause(ctx))
	after := redisNow(t, a.client)
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, a.Pause(ctx), "pausing twice")
	st, err := a.Stats(ctx)
	require.NoError(t, err)
	require.True(t, st.Paused)
	// Issue 24, item 15: since when, kept by the first Pause.
	require.False(t, st.PausedSince.Before(before) || st.PausedSince.After(after), "paused since %v, paused between %v and %v", st.PausedSince, before, after)
	paused, err := a.Paused(ctx)
	require.NoError(t, err)
	require.True(t, paused)

	// Consumers in two other "processes" block; nothing is leased.
	var mu sync.Mutex
	got := map[string]int{}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for c := range 2 {
		q := newQueue(t, s.client(t), "paused", WithWakeCap(time.Minute))
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var done *Message
				for {
					m, err := q.AckTake(cctx, done)
					if err != nil {
						if done != nil {
							_ = done.Ack(context.WithoutCancel(cctx))
						}
						return
					}
					mu.Lock()
					got[m.ID]++
					mu.Unlock()
					done = m
				}
			}()
		}
		_ = c
	}
	// While paused: enqueue, cancel and ack work; nothing is taken.
	_, err = a.EnqueueAfter(ctx, "new", nil, 0)
	require.NoError(t, err)
	out, err := a.Cancel(ctx, "i1")
	require.NoError(t, err)
	require.Equal(t, CancelRemoved, out)
	require.NoError(t, held.Ack(ctx))
	eventually(t, 10*time.Second, "4 consumers blocked", func() bool { return blockedClients(t, a) == 4 })
	time.Sleep(500 * time.Millisecond)
	st, err = a.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.InFlight, "leased while paused")
	require.EqualValues(t, n-1, st.Scheduled) // n - i0 - i1 + new
	mu.Lock()
	require.Empty(t, got)
	mu.Unlock()

	require.NoError(t, a.Resume(ctx))
	require.NoError(t, a.Resume(ctx), "resuming twice")
	eventually(t, 20*time.Second, "backlog drained after Resume", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n-1
	})
	stop()
	wg.Wait()
	for id, k := range got {
		require.Equal(t, 1, k, id)
	}
	st, err = a.Stats(ctx)
	require.NoError(t, err)
	require.False(t, st.Paused)
	require.True(t, st.PausedSince.IsZero(), "not paused any more")
	require.Zero(t, st.Scheduled+st.InFlight)
	audit(t, a)
}

// A lease that expires while the queue is paused is not redelivered until
// Resume.
func TestPauseHoldsExpiredLeases(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	q := newQueue(t, s.client(t), "pauselease", WithVisibilityTimeout(100*time.Millisecond), WithBackoff(0, 0))
	m := takeNow(t, q, "x")[0]
	require.NoError(t, q.Pause(ctx))
	untilRedisTime(t, q.client, m.Deadline.Add(time.Millisecond))
	tctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	_, err := q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "redelivered while paused")
	require.NoError(t, q.Resume(ctx))
	r, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "x", r.ID)
	require.Equal(t, 2, r.Attempts)
	require.NoError(t, r.Ack(ctx))
	audit(t, q)
}

// A paused queue with items due costs its blocked consumers what an idle
// queue costs: one BZPOPMIN and one claim per wake cap, nothing else.
func TestPausedQueueDoesNotPoll(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	const wakeCap = 250 * time.Millisecond
	measure := func(name string, pause bool) (total, bz, ev int64) {
		c := s.client(t)
		h := &countHook{}
		c.AddHook(h)
		q := newQueue(t, c, name, WithWakeCap(wakeCap))
		if pause {
			seed(t, q, ids("p", 10))
			require.NoError(t, q.Pause(ctx))
		}
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _, _ = q.Take(tctx) }()
		eventually(t, 5*time.Second, "blocked", func() bool { return h.bzpopmin.Load() >= 1 })
		total0, bz0, ev0 := h.total.Load(), h.bzpopmin.Load(), h.eval.Load()
		time.Sleep(1500 * time.Millisecond)
		total, bz, ev = h.total.Load()-total0, h.bzpopmin.Load()-bz0, h.eval.Load()-ev0
		cancel()
		<-done
		t.Logf("%s: %d commands (%d BZPOPMIN, %d EVALSHA)", name, total, bz, ev)
		return total, bz, ev
	}
	_, idleBZ, _ := measure("idle", false)
	total, bz, ev := measure("pausedidle", true)
	maxWaits := int64(1500*time.Millisecond/wakeCap) + 1
	require.LessOrEqual(t, bz, maxWaits, "more waits than the wake cap allows")
	require.LessOrEqual(t, ev, bz+1, "one claim per wait")
	require.Equal(t, total, bz+ev, "nothing else is sent while paused")
	require.LessOrEqual(t, bz, idleBZ+2, fmt.Sprintf("paused %d waits, idle %d", bz, idleBZ))
}

// A partitioned queue is paused since its last partition was.
func TestSumStatsPausedSince(t *testing.T) {
	t0 := time.UnixMilli(1796167638039)
	s := SumStats([]Stats{{Paused: true, PausedSince: t0}, {Paused: true, PausedSince: t0.Add(time.Second)}})
	require.True(t, s.Paused)
	require.True(t, s.PausedSince.Equal(t0.Add(time.Second)))
	s = SumStats([]Stats{{Paused: true, PausedSince: t0}, {}})
	require.False(t, s.Paused)
	require.True(t, s.PausedSince.IsZero())
}
