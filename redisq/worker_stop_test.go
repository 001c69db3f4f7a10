package redisq

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// sendGate holds every call of its scripts in a ProcessHook before it is
// sent, until the gate opens, counting the calls it holds; a call whose
// ctx has ended by then fails as go-redis fails it, unsent.
type sendGate struct {
	shas    map[string]bool
	held    atomic.Int32
	release chan struct{}
	once    sync.Once
}

func newSendGate(ss ...*script) *sendGate {
	g := &sendGate{shas: map[string]bool{}, release: make(chan struct{})}
	for _, s := range ss {
		g.shas[s.Hash()] = true
	}
	return g
}

func (g *sendGate) open() { g.once.Do(func() { close(g.release) }) }

func (*sendGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *sendGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && strings.EqualFold(cmd.Name(), "evalsha") {
			if sha, _ := a[1].(string); g.shas[sha] {
				select {
				case <-g.release:
				default:
					g.held.Add(1)
					<-g.release
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (*sendGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

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
