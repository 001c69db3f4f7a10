package redisq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// AckTake is Ack then Take in one script when an item is due: one command,
// the ack applied, the next item leased.
func TestAckTakeOneRoundTripWhenDue(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	h := &countHook{}
	c.AddHook(h)
	q := newQueue(t, c, "acktake")
	ctx := context.Background()
	ms := takeNow(t, q, "a") // a leased
	_, err := q.EnqueueAfter(ctx, "b", nil, 0)
	require.NoError(t, err)
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))

	require.NoError(t, scriptAckClaim.Load(ctx, c).Err())
	before := h.total.Load()
	m, err := q.AckTake(ctx, ms[0])
	require.NoError(t, err)
	require.Equal(t, "b", m.ID)
	require.EqualValues(t, 1, h.total.Load()-before, "one command for the ack and the claim")
	_, err = q.Get(ctx, "a")
	require.ErrorIs(t, err, ErrNotFound, "a was acked")
	require.ErrorIs(t, ms[0].Ack(ctx), nil, "a repeated ack of an applied one succeeds")

	// A nil done is a plain Take.
	_, err = q.EnqueueAfter(ctx, "c", nil, 0)
	require.NoError(t, err)
	m2, err := q.AckTake(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "c", m2.ID)

	require.NoError(t, m.Ack(ctx))
	require.NoError(t, m2.Ack(ctx))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: 3, Delivered: 3, Acked: 3}, st.StatsCounters)
	audit(t, q)
}

// A lost lease is reported as ErrLeaseLost and nothing is taken.
func TestAckTakeLeaseLostTakesNothing(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "acktake-lost", WithVisibilityTimeout(100*time.Millisecond))
	ctx := context.Background()
	ms := takeNow(t, q, "a")
	untilRedisTime(t, c, ms[0].Deadline.Add(time.Millisecond))
	_, err := q.EnqueueAfter(ctx, "b", nil, 0)
	require.NoError(t, err)
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))

	m, err := q.AckTake(ctx, ms[0])
	require.ErrorIs(t, err, ErrLeaseLost)
	require.Nil(t, m)
	it, err := q.Get(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State, "nothing taken")
	it, err = q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, StateInFlight, it.State, "a was not acked")
	audit(t, q)
}

// Run again after a lost reply (as go-redis does), the ack and claim script
// finds the ack's tombstone: the ack reports success and the claim leases
// the next item.
func TestAckTakeRetriedAfterLostReplyAcks(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "acktake-retry")
	ctx := context.Background()
	ms := takeNow(t, q, "a")
	for _, id := range []string{"b", "c"} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	first, _, err := q.claim(ctx, 1, ms[0])
	require.NoError(t, err)
	again, _, err := q.claim(ctx, 1, ms[0])
	require.NoError(t, err, "the rerun acks by the tombstone")
	require.Len(t, first, 1)
	require.Len(t, again, 1)
	require.Equal(t, []string{"b", "c"}, []string{first[0].ID, again[0].ID})
}

// With nothing due (the Queue waits for a due time in the future), AckTake
// acks at once and then waits for the next item like Take, whether the wait
// is local (a few ms) or a BZPOPMIN.
func TestAckTakeWaitsAfterAckingWhenNothingIsDue(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "acktake-wait")
	ctx := context.Background()
	ms := takeNow(t, q, "a")
	// b is due in 2s, a margin for a stalled machine: the ack must come
	// well before it.
	due, err := q.EnqueueAfter(ctx, "b", nil, 2*time.Second)
	require.NoError(t, err)
	// A Take that gives up before b is due leaves this Queue owning the
	// timer for b.
	takeGivingUp(t, q, 20*time.Millisecond)
	got := takeAsync(func() (*Message, error) { return q.AckTake(ctx, ms[0]) })
	eventually(t, 5*time.Second, "a acked before b is due", func() bool {
		_, err := q.Get(ctx, "a")
		return err == ErrNotFound
	})
	require.True(t, redisNow(t, c).Before(due), "acked while waiting, not at the due time")
	m, ok := <-got
	require.True(t, ok)
	require.Equal(t, "b", m.ID)
	require.False(t, m.ClaimedAt.Before(due))
	require.NoError(t, m.Ack(ctx))
	audit(t, q)
}

// A Message of another queue is acked on its own queue.
func TestAckTakeAcksAMessageOfAnotherQueue(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	p := newQueue(t, c, "acktake-p")
	q := newQueue(t, c, "acktake-q")
	ctx := context.Background()
	ms := takeNow(t, p, "x")
	_, err := q.EnqueueAfter(ctx, "x", nil, 0)
	require.NoError(t, err)
	m, err := q.AckTake(ctx, ms[0])
	require.NoError(t, err)
	require.Equal(t, "x", m.ID)
	_, err = p.Get(ctx, "x")
	require.ErrorIs(t, err, ErrNotFound, "acked on p")
	it, err := q.Get(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, StateInFlight, it.State, "q's x is leased, not acked")
	require.NoError(t, m.Ack(ctx))
	audit(t, p)
	audit(t, q)
}

// Consumers on two Queue values settle every item with AckTake: each item
// is delivered exactly once and acked (leases never expire here).
func TestAckTakeConsumersRace(t *testing.T) {
	s := startRedis(t)
	qs := []*Queue{newQueue(t, s.client(t), "acktake-race"), newQueue(t, s.client(t), "acktake-race")}
	const n = 2000
	seed(t, qs[0], ids("r", n))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	count := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(q *Queue) {
			defer wg.Done()
			var prev *Message
			for {
				m, err := q.AckTake(ctx, prev)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
						return
					}
					// prev's ack is unknown: Ack tells (a repeat of an
					// applied ack succeeds).
					if prev != nil {
						if err := prev.Ack(context.Background()); err != nil {
							errs <- fmt.Errorf("ack %s: %w", prev.ID, err)
						}
					}
					return
				}
				mu.Lock()
				count[m.ID]++
				mu.Unlock()
				prev = m
			}
		}(qs[w%2])
	}
	eventually(t, 60*time.Second, "all delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(count) == n
	})
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for id, c := range count {
		require.Equal(t, 1, c, "item %s delivered %d times", id, c)
	}
	st, err := qs[0].Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: n, Delivered: n, Acked: n}, st.StatsCounters)
	audit(t, qs[0])
}

// Regression: AckTake after Close returned ErrClosed without acking done,
// and the documented loop drops done with the error: the item was
// delivered again.
func TestRegressionAckTakeAfterCloseAcks(t *testing.T) {
	c := startRedis(t).client(t)
	q := newQueue(t, c, "acktake-close")
	ctx := context.Background()
	ms := takeNow(t, q, "a")
	require.NoError(t, q.Close())
	m, err := q.AckTake(ctx, ms[0])
	require.ErrorIs(t, err, ErrClosed)
	require.Nil(t, m)
	_, err = newQueue(t, c, "acktake-close").Get(ctx, "a")
	require.ErrorIs(t, err, ErrNotFound, "a was acked")
}

// Regression: AckTake told its own queue from another by the key prefix
// alone, so a Message of a same-named queue on another server was acked on
// the wrong one (ErrLeaseLost, and the item was redelivered).
func TestRegressionAckTakeSameNameOnAnotherServer(t *testing.T) {
	c1, c2 := startRedis(t).client(t), startRedis(t).client(t)
	q1, q2 := newQueue(t, c1, "same"), newQueue(t, c2, "same")
	ctx := context.Background()
	ms := takeNow(t, q1, "a")
	_, err := q2.EnqueueAfter(ctx, "b", nil, 0)
	require.NoError(t, err)
	m, err := q2.AckTake(ctx, ms[0])
	require.NoError(t, err)
	require.Equal(t, "b", m.ID)
	_, err = q1.Get(ctx, "a")
	require.ErrorIs(t, err, ErrNotFound, "a acked on its own server")
	require.NoError(t, m.Ack(ctx))
}
