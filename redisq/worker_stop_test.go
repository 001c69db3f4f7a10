package redisq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A forced stop hands back every message still held, with no attempt
// counted, however late Redis answers its releases: here they are held
// before they are sent until Run has returned (or has had 500 ms to), as
// when the server is slow to answer. Run must not end the releases' ctx
// under them. Both kinds of worker, stopped by Shutdown and by the end of
// Run's ctx after the ShutdownTimeout.
func TestWorkerForcedStopHandsBackHeld(t *testing.T) {
	for _, multi := range []bool{false, true} {
		for _, byRunCtx := range []bool{false, true} {
			name := "NewWorker"
			if multi {
				name = "NewMultiWorker"
			}
			if byRunCtx {
				name += "/RunCtx"
			} else {
				name += "/Shutdown"
			}
			t.Run(name, func(t *testing.T) { forcedStopHandsBack(t, multi, byRunCtx) })
		}
	}
}

func forcedStopHandsBack(t *testing.T, multi, byRunCtx bool) {
	noLeaks(t)
	const n = 6
	s := startRedis(t, "--appendfsync", "no")
	c := s.client(t)
	g := newSendGate(scriptReleaseLease)
	defer g.open()
	c.AddHook(g)
	ctx := context.Background()
	require.NoError(t, scriptReleaseLease.Load(ctx, c).Err()) // sent as EVALSHA
	q := newQueue(t, c, "fstop", WithVisibilityTimeout(time.Hour))
	seed(t, q, ids("i", n))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))

	var started atomic.Int32
	h := func(ctx context.Context, _ *Message) error {
		started.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	opts := WorkerOptions{Concurrency: n, NoRecurring: true, Heartbeat: -1, ShutdownTimeout: 100 * time.Millisecond}
	var w *Worker
	if multi {
		w = NewMultiWorker(h, opts, WorkerQueue{Queue: q})
	} else {
		w = NewWorker(q, h, opts)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(runCtx) }()
	eventually(t, 20*time.Second, "every handler runs", func() bool { return started.Load() == n })

	shut := make(chan error, 1)
	if byRunCtx {
		stopRun()
	} else {
		sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		go func() { shut <- w.Shutdown(sctx) }()
	}
	eventually(t, 20*time.Second, "the releases are on their way", func() bool { return g.held.Load() == n })
	select { // without the fix Run returns meanwhile, ending the releases' ctx
	case err := <-ran:
		ran <- err
	case <-time.After(500 * time.Millisecond):
	}
	g.open()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	if !byRunCtx {
		require.ErrorIs(t, <-shut, context.DeadlineExceeded)
	}

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, n, st.Scheduled, "every held item is back in the schedule")
	require.Zero(t, st.InFlight)
	for _, id := range ids("i", n) {
		it, err := q.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, StateScheduled, it.State, id)
		require.Zero(t, it.Attempts, "%s: the forced stop counted an attempt", id)
	}
	audit(t, q)
}
