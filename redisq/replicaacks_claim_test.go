package redisq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A claim that acks and whose WAIT times out (a server with no replica,
// WithReplicaAcks) strands nothing. AckTake reports ErrNotReplicated, the
// ack applied, and takes nothing: what its script claimed is back in the
// schedule at once, its delivery not counted. The lone and the shared
// claims of the Worker's handlers (ack_claim, ack_many_claim) hand their
// items out and ack the unconfirmed messages again.
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
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		leased, _ := c.ZCard(ctx, q.db.Keys.Lease).Result()
		t.Errorf("%d of %d items handled; %d leased", got, n, leased)
	}
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
