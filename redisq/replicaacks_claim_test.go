package redisq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A claim that acks and whose WAIT times out (a server with no replica,
// WithReplicaAcks) strands nothing. AckTake reports ErrNotReplicated, the
// ack applied, and takes nothing: what its script claimed is back in the
// schedule at once, with Attempts as before.
func TestAckTakeUnconfirmedTakesNothing(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "nrat", WithReplicaAcks(1, 2*time.Millisecond), WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	seed(t, q, ids("i", 2))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))

	m, err := q.Take(ctx) // a claim that acks nothing waits for no replica
	require.NoError(t, err)
	require.Equal(t, "i0", m.ID)

	next, err := q.AckTake(ctx, m)
	require.ErrorIs(t, err, ErrNotReplicated)
	require.Nil(t, next)
	_, err = q.Get(ctx, "i0")
	require.ErrorIs(t, err, ErrNotFound, "the ack was applied on the master")
	leased, err := c.ZCard(ctx, q.db.Keys.Lease).Result()
	require.NoError(t, err)
	require.Zero(t, leased, "what the script claimed was released")

	again, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "i1", again.ID)
	require.Equal(t, 1, again.Attempts, "the released delivery is not counted")
}

// The Worker's claims that ack (the taking goroutine's, and the lone and
// shared claims of its handlers in a backlog) hand out what they leased
// when the replicas do not confirm the acks, which stand on the master: the
// worker logs them and holds no more messages than its handlers run.
func TestWorkerUnconfirmedAcksStrandNothing(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	// An hour's lease: an item stranded leased would not come back within
	// the test.
	q := newQueue(t, c, "nrw", WithReplicaAcks(1, 2*time.Millisecond), WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	const n = 300
	seed(t, q, ids("i", n))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))

	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	w := NewWorker(q, func(_ context.Context, m *Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID]++
		if len(seen) == n && seen[m.ID] == 1 {
			close(all)
		}
		return nil
	}, WorkerOptions{Concurrency: 8, NoRecurring: true})
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	maxHeld := 0
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(2 * time.Minute)
wait:
	for {
		select {
		case <-all:
			break wait
		case <-tick.C:
			w.mu.Lock()
			maxHeld = max(maxHeld, w.held)
			w.mu.Unlock()
		case <-timeout:
			mu.Lock()
			got := len(seen)
			mu.Unlock()
			leased, _ := c.ZCard(ctx, q.db.Keys.Lease).Result()
			t.Errorf("%d of %d items handled; %d leased", got, n, leased)
			break wait
		}
	}
	// Each handler holds its message and the next one its claim took;
	// acks queued for later would pile up here, one per item.
	require.LessOrEqual(t, maxHeld, 2*8, "messages held")
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	require.NoError(t, w.Shutdown(sctx))
	cancel()
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	for id, k := range seen {
		require.Equal(t, 1, k, "%s handled once", id)
	}
	leased, err := c.ZCard(ctx, q.db.Keys.Lease).Result()
	require.NoError(t, err)
	require.Zero(t, leased)
	due, err := c.ZCard(ctx, q.db.Keys.Sched).Result()
	require.NoError(t, err)
	require.Zero(t, due, "every item acked")
}

// An idle Worker whose last ack was not confirmed waits as any idle worker
// does: it does not carry the ack into claim after claim.
func TestWorkerIdleAfterUnconfirmedAck(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "nridle", WithReplicaAcks(1, time.Millisecond), WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	seed(t, q, ids("i", 1))
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	handled := make(chan struct{}, 1)
	w := NewWorker(q, func(context.Context, *Message) error { handled <- struct{}{}; return nil },
		WorkerOptions{Concurrency: 1, NoRecurring: true, Heartbeat: -1})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-handled
	eventually(t, 10*time.Second, "the ack applied", func() bool {
		_, err := q.Get(ctx, "i0")
		return errors.Is(err, ErrNotFound)
	})
	time.Sleep(100 * time.Millisecond)
	e0 := cmdCalls(t, c, "evalsha")
	time.Sleep(2 * time.Second)
	e1 := cmdCalls(t, c, "evalsha")
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, w.Shutdown(sctx))
	require.NoError(t, <-done)
	// One claim per wake cap (1 s) at most, while the ack carried along
	// made one per WAIT timeout (about 20 in 2 s).
	require.Less(t, e1-e0, int64(6), "claims in 2 s of idle")
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Zero(t, w.held)
}
