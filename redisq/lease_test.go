package redisq

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

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
