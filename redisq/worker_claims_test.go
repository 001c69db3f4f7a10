package redisq

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// claimAcking acks each message it is given, reports a lost lease for the
// one that has none, and claims as many items whatever the acks found, in
// FIFO order; run again, the applied acks report success (tombstones); on
// a paused queue the acks still apply and nothing is claimed.
func TestClaimAckingAcksEachThenClaims(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "cack", WithBackoff(time.Hour, time.Hour))
	ctx := context.Background()
	seed(t, q, ids("i", 7))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	ms, err := q.TakeBatch(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"i0", "i1", "i2"}, idsOf(ms))
	require.NoError(t, ms[1].Nack(ctx)) // i1's lease is gone: an ack of it is lost

	got, next, acked, err := q.claimAcking(ctx, ms)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true}, acked)
	require.Equal(t, []string{"i3", "i4", "i5"}, idsOf(got), "one claimed per ack, the lost one's too, in order")
	require.Zero(t, next, "i6 is due")
	for _, id := range []string{"i0", "i2"} {
		_, err := q.Get(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, "%s was acked", id)
	}
	it, err := q.Get(ctx, "i1")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State, "the nacked item is left as it was")

	// Again: the applied acks find their tombstones.
	again, _, acked, err := q.claimAcking(ctx, []*Message{ms[0], ms[2]})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, acked)
	require.Equal(t, []string{"i6"}, idsOf(again), "only i6 is due")

	// Paused: the acks apply, nothing is claimed.
	require.NoError(t, q.Pause(ctx))
	none, _, acked, err := q.claimAcking(ctx, got[:2])
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, acked)
	require.Empty(t, none)
	for _, id := range []string{"i3", "i4"} {
		_, err := q.Get(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, "%s was acked on the paused queue", id)
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Acked)
	audit(t, q)
}

func idsOf(ms []*Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// waiting is how many calls wait in g.
func (g *groupCommit[T]) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}

// scriptGate holds every call of its scripts in a ProcessHook, once the
// server has answered it (or, made by newSendGate, before it is sent: a
// call whose ctx has ended by then fails unsent, as go-redis fails it),
// until it is opened, counting the calls it holds.
type scriptGate struct {
	shas    map[string]bool
	before  bool // hold before sending
	held    atomic.Int32
	release chan struct{}
	once    sync.Once
}

func newScriptGate(ss ...*script) *scriptGate {
	g := &scriptGate{shas: map[string]bool{}, release: make(chan struct{})}
	for _, s := range ss {
		g.shas[s.Hash()] = true
	}
	return g
}

func newSendGate(ss ...*script) *scriptGate {
	g := newScriptGate(ss...)
	g.before = true
	return g
}

// open lets the held calls and all later ones go.
func (g *scriptGate) open() { g.once.Do(func() { close(g.release) }) }

func (*scriptGate) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (g *scriptGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		gated := false
		if a := cmd.Args(); len(a) > 1 && strings.EqualFold(cmd.Name(), "evalsha") {
			sha, _ := a[1].(string)
			gated = g.shas[sha]
		}
		if gated && g.before {
			g.hold()
		}
		err := next(ctx, cmd)
		// Not a NOSCRIPT reply, which go-redis follows with EVAL.
		if gated && !g.before && err == nil {
			g.hold()
		}
		return err
	}
}

// hold waits until the gate opens, counting the call while it waits.
func (g *scriptGate) hold() {
	select {
	case <-g.release:
	default:
		g.held.Add(1)
		<-g.release
	}
}

func (*scriptGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// backlogWorker seeds items due now in a queue of its own and returns a
// Worker of 4 handlers on it whose client holds the calls of gated until
// the gate opens (the caller opens it, deferred too: a held call holds up
// Shutdown), counting the handled messages by id.
func backlogWorker(t *testing.T, name string, items int, gated ...*script) (*Queue, *Worker, *scriptGate, *scriptCounter, func() map[string]int) {
	t.Helper()
	s := startRedis(t, "--appendfsync", "no")
	c := s.client(t)
	sc := newScriptCounter()
	c.AddHook(sc)
	g := newScriptGate(gated...)
	c.AddHook(g)
	for _, s := range gated { // their first calls are EVALSHA, answered
		require.NoError(t, s.Load(context.Background(), c).Err())
	}
	q := newQueue(t, c, name)
	seed(t, q, ids("i", items))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	var mu sync.Mutex
	seen := map[string]int{}
	w := NewWorker(q, func(_ context.Context, m *Message) error {
		mu.Lock()
		seen[m.ID]++
		mu.Unlock()
		return nil
	}, WorkerOptions{Concurrency: 4, NoRecurring: true})
	return q, w, g, sc, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range seen {
			out[k] = v
		}
		return out
	}
}

// In a backlog, the handlers that finish while another's ack and claim is
// in flight ack theirs and claim their next together, in one
// ack-many-claim script: with the reply of every lone ack and claim held,
// the others still go, combined. Every message is handled once and acked.
func TestWorkerHandlersShareClaimsInBacklog(t *testing.T) {
	noLeaks(t)
	const items = 40
	q, w, g, sc, seen := backlogWorker(t, "wshare", items, scriptAckClaim)
	defer g.open()
	runWorker(t, w)
	eventually(t, 20*time.Second, "a lone ack and claim is held", func() bool { return g.held.Load() >= 1 })
	eventually(t, 20*time.Second, "handlers ack and claim together meanwhile", func() bool {
		return sc.snapshot().calls["ack_many_claim"] >= 1
	})
	g.open()
	eventually(t, 20*time.Second, "all handled and acked", func() bool {
		st, err := q.Stats(context.Background())
		require.NoError(t, err)
		return len(seen()) == items && st.Acked == items
	})
	for id, n := range seen() {
		require.Equal(t, 1, n, "%s handled %d times", id, n)
	}
	cs := sc.snapshot().calls
	claims := cs["claim"] + cs["ack_claim"] + cs["ack_many_claim"]
	require.Less(t, claims, int64(items), "claims %v for %d items: none combined", cs, items)
	audit(t, q)
}

// A handler that gives up waiting for its claim because the worker stops
// has whatever the round trip then claims for it handed back: with the
// replies of the handlers' round trips held, one carrying two of them, the
// worker stops; after Run returns nothing is leased, and every message was
// handled once and acked, or is scheduled again.
func TestWorkerStopWhileHandlersWaitToClaim(t *testing.T) {
	noLeaks(t)
	const items = 40
	q, w, g, sc, seen := backlogWorker(t, "wstop", items, scriptAckClaim, scriptAckManyClaim)
	defer g.open()
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	// A lone ack and claim, and one of two handlers or more, in flight.
	eventually(t, 20*time.Second, "two round trips held", func() bool { return g.held.Load() == 2 })
	var stopped atomic.Bool
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
		stopped.Store(true)
	}()
	eventually(t, 20*time.Second, "the worker stops taking", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.stoppingLocked()
	})
	g.open()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	eventually(t, 20*time.Second, "Shutdown returned", stopped.Load)
	require.Positive(t, sc.snapshot().calls["ack_many_claim"], "the held combined round trip ran")
	ctx := context.Background()
	leased, err := q.client.ZCard(ctx, q.db.Keys.Lease).Result()
	require.NoError(t, err)
	require.Zero(t, leased, "a message claimed for a handler that gave up is still leased")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	h := seen()
	for id, n := range h {
		require.Equal(t, 1, n, "%s handled %d times", id, n)
	}
	require.EqualValues(t, len(h), st.Acked, "every handled message acked")
	require.EqualValues(t, items-len(h), st.Scheduled, "the rest scheduled again")
	audit(t, q)
}
