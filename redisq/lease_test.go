package redisq

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestLeaseExpiryExtendAndLateAck(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "lease", WithVisibilityTimeout(300*time.Millisecond),
		WithBackoff(0, 0), WithWakeCap(50*time.Millisecond))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "e", nil, 0)
	require.NoError(t, err)
	m1, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, m1.Extend(ctx, 600*time.Millisecond))
	require.Greater(t, m1.Deadline.Sub(m1.ClaimedAt), 500*time.Millisecond)

	// Not redelivered during the extended lease.
	tctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	_, err = q.Take(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	m2, err := q.Take(ctx) // after the extended deadline
	require.NoError(t, err)
	require.Equal(t, "e", m2.ID)
	require.Equal(t, 2, m2.Attempts)
	require.False(t, m2.ClaimedAt.Before(m1.Deadline))
	require.ErrorIs(t, m1.Ack(ctx), ErrLeaseLost)
	require.ErrorIs(t, m1.Nack(ctx), ErrLeaseLost)
	require.ErrorIs(t, m1.Extend(ctx, time.Second), ErrLeaseLost)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.InFlight, "late settlement changed nothing")
	require.NoError(t, m2.Ack(ctx))
	audit(t, q)
}

func TestNackBackoffAndDeadLetter(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "nack", WithMaxAttempts(3), WithBackoff(100*time.Millisecond, 150*time.Millisecond))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "j", []byte("p"), 0)
	require.NoError(t, err)

	var last time.Time
	for att := 1; att <= 3; att++ {
		m, err := q.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, att, m.Attempts)
		if att > 1 {
			// Backoff after attempt k-1 is min(150ms, 100ms·2^(k-2)), by Redis clock.
			want := 100 * time.Millisecond
			if att == 3 {
				want = 150 * time.Millisecond
			}
			require.GreaterOrEqual(t, m.Due.Sub(last), want)
			require.Less(t, m.Due.Sub(last), want+100*time.Millisecond)
		}
		last = m.ClaimedAt
		require.NoError(t, m.Nack(ctx))
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Dead)
	require.EqualValues(t, 0, st.Scheduled)
	ids, err := q.DeadIDs(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"j"}, ids)
	audit(t, q)

	// Reschedule revives a dead item with attempts reset.
	_, err = q.RescheduleAfter(ctx, "j", 0)
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, m.Attempts)
	require.NoError(t, m.NackAfter(ctx, time.Hour))
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Scheduled)
	require.EqualValues(t, 0, st.DueBacklog)
	// Cancel removes a scheduled item for good.
	out, err := q.Cancel(ctx, "j")
	require.NoError(t, err)
	require.Equal(t, CancelRemoved, out)
	_, err = q.Cancel(ctx, "j")
	require.ErrorIs(t, err, ErrNotFound)
	r := audit(t, q)
	require.Equal(t, 0, r.Items)
}

func TestCancelInFlightIsNotRetried(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "cif", WithVisibilityTimeout(100*time.Millisecond),
		WithBackoff(0, 0), WithWakeCap(50*time.Millisecond))
	ctx := context.Background()
	ms := takeNow(t, q, "a", "b")
	for _, id := range []string{"a", "b"} {
		out, err := q.Cancel(ctx, id)
		require.NoError(t, err, "marking an in-flight item is a success")
		require.Equal(t, CancelMarked, out)
	}
	_, err := q.RescheduleAfter(ctx, "a", 0)
	require.ErrorIs(t, err, ErrInFlight)
	// b's holder nacks: cancelled, so deleted instead of rescheduled.
	require.NoError(t, ms[1].Nack(ctx))
	// a's lease expires: cancelled, so deleted instead of redelivered.
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.InFlight+st.Scheduled+st.Dead)
	require.EqualValues(t, 2, st.Counters["cancelled"])
	r := audit(t, q)
	require.Equal(t, 0, r.Items)
}

type fakeTimeout struct{}

func (fakeTimeout) Error() string   { return "i/o timeout (injected)" }
func (fakeTimeout) Timeout() bool   { return true }
func (fakeTimeout) Temporary() bool { return true }

// lossyConn drops the reply to the first armed write that contains match:
// the command reaches Redis and runs, the client sees a read timeout.
type lossyConn struct {
	net.Conn
	armed *atomic.Bool
	match []byte
	drop  bool
}

func (c *lossyConn) Write(b []byte) (int, error) {
	if c.armed.Load() && bytes.Contains(b, c.match) {
		c.armed.Store(false)
		c.drop = true
	}
	return c.Conn.Write(b)
}
func (c *lossyConn) Read(b []byte) (int, error) {
	if c.drop {
		c.drop = false
		_, _ = c.Conn.Read(b) // the real reply, discarded
		return 0, fakeTimeout{}
	}
	return c.Conn.Read(b)
}

// Regression: go-redis retries a command whose reply read timed out
// (MaxRetries 3 by default, scripts included). An Ack applied by Redis whose
// reply was lost was re-run and reported ErrLeaseLost, documented as
// "nothing changes: the item is or will be redelivered", though it was gone.
func TestRegressionRetriedAckReportsSuccess(t *testing.T) {
	s := startRedis(t)
	var armed atomic.Bool
	c := s.client(t, func(o *redis.Options) {
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			cn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &lossyConn{Conn: cn, armed: &armed, match: []byte(scriptAck.Hash())}, nil
		}
	})
	q := newQueue(t, c, "retry")
	ctx := context.Background()
	require.NoError(t, scriptAck.Load(ctx, c).Err())
	_, err := q.EnqueueAfter(ctx, "a", nil, 0)
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	armed.Store(true)
	err = m.Ack(ctx)
	st, serr := q.Stats(ctx)
	require.NoError(t, serr)
	t.Logf("Ack returned %v; stats %+v", err, st)
	require.NoError(t, err, "an applied ack, retried after a lost reply")
	require.EqualValues(t, 0, st.InFlight+st.Scheduled)
	require.EqualValues(t, 1, st.Counters["acked"])
	// A second Ack of the same lease is still success, and changes nothing.
	require.NoError(t, m.Ack(ctx))
	st, serr = q.Stats(ctx)
	require.NoError(t, serr)
	require.EqualValues(t, 1, st.Counters["acked"])
}

// Regression: a Nack, NackWith, DeadLetter, Cancel or Schedule whose reply
// was lost (connection killed after the script ran) was run again by
// go-redis and reported an outcome that contradicted what the first run did
// (ErrLeaseLost for an applied nack, ErrNotFound for an applied cancel,
// Created false, and a second reschedule, for a new id). Each call now
// carries a request id and a rerun returns the first run's reply.
func TestRegressionLostReplyRetries(t *testing.T) {
	s := startRedis(t)
	p := newDropProxy(t, s.addr())
	c := redis.NewClient(&redis.Options{Addr: p.l.Addr().String(), MaxRetries: 3})
	t.Cleanup(func() { _ = c.Close() })
	q := newQueue(t, c, "lost", WithVisibilityTimeout(time.Hour), WithBackoff(time.Hour, time.Hour))
	ctx := context.Background()
	// Load every script first, so that the dropped reply is that of a
	// script that ran (not of a NOSCRIPT EVALSHA).
	for _, sc := range []*script{scriptAck, scriptNack, scriptDeadLetter, scriptCancel, scriptSchedule} {
		require.NoError(t, sc.Load(ctx, c).Err())
	}
	take := func(t *testing.T, id string, d time.Duration) *Message {
		_, err := q.EnqueueAfter(ctx, id, nil, d)
		require.NoError(t, err)
		m, err := q.Take(ctx)
		require.NoError(t, err)
		return m
	}
	t.Run("ack", func(t *testing.T) {
		m := take(t, "A1x", 0)
		p.arm(t, "A1x")
		require.NoError(t, m.Ack(ctx))
	})
	t.Run("nack", func(t *testing.T) {
		m := take(t, "N2x", 0)
		p.arm(t, "N2x")
		res, err := m.NackWith(ctx)
		require.NoError(t, err)
		require.Equal(t, NackRetried, res.Outcome)
		it, err := q.Get(ctx, "N2x")
		require.NoError(t, err)
		require.Equal(t, StateScheduled, it.State)
		require.Equal(t, res.Due, it.Due, "the reply of the run that was applied")
	})
	t.Run("nack dropped", func(t *testing.T) {
		m := take(t, "N3x", 0)
		out, err := q.Cancel(ctx, "N3x")
		require.NoError(t, err)
		require.Equal(t, CancelMarked, out)
		p.arm(t, "N3x")
		res, err := m.NackWith(ctx)
		require.NoError(t, err)
		require.Equal(t, NackDropped, res.Outcome)
	})
	t.Run("deadletter", func(t *testing.T) {
		m := take(t, "D4x", 0)
		p.arm(t, "D4x")
		out, err := m.DeadLetter(ctx, "why")
		require.NoError(t, err)
		require.Equal(t, NackDeadLettered, out)
		it, err := q.Get(ctx, "D4x")
		require.NoError(t, err)
		require.Equal(t, StateDead, it.State)
	})
	t.Run("cancel", func(t *testing.T) {
		_, err := q.EnqueueAfter(ctx, "C5x", nil, time.Hour)
		require.NoError(t, err)
		p.arm(t, "C5x")
		out, err := q.Cancel(ctx, "C5x")
		require.NoError(t, err)
		require.Equal(t, CancelRemoved, out)
		_, err = q.Cancel(ctx, "C5x")
		require.ErrorIs(t, err, ErrNotFound, "a new call is a new request")
	})
	t.Run("schedule", func(t *testing.T) {
		p.arm(t, "S6x")
		res, err := q.ScheduleAfter(ctx, "S6x", nil, time.Hour)
		require.NoError(t, err)
		require.True(t, res.Created, "a new id: Created")
		it, err := q.Get(ctx, "S6x")
		require.NoError(t, err)
		require.Equal(t, res.Due, it.Due)
		res, err = q.ScheduleAfter(ctx, "S6x", nil, time.Hour)
		require.NoError(t, err)
		require.False(t, res.Created, "a new call is a new request")
	})
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Rescheduled, "S6x replaced once, by the second call")
	audit(t, q)
}
