package redisq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

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
	ca.AddHook(&cancelOnMarker{wake: qa.keys[3], cancel: cancelA})

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

// Audit SCANs with MATCH "{dq:NAME}:m:*" without escaping glob
// metacharacters in NAME, which New accepts.
func TestRegressionAuditGlobName(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	other := newQueue(t, c, "ab")
	q := newQueue(t, c, "a?")
	ctx := context.Background()
	_, err := other.EnqueueAfter(ctx, "foreign", nil, time.Hour)
	require.NoError(t, err)
	r, err := q.Audit(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, r.Items, "audit of queue %q counted another queue's items; problems: %v", "a?", r.Problems)
	require.True(t, r.OK(), "problems: %v", r.Problems)
}
