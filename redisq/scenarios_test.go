package redisq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// seed enqueues ids due now through pipelines of the enqueue script.
func seed(t testing.TB, q *Queue, ids []string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, scriptEnqueue.Load(ctx, q.client).Err())
	for start := 0; start < len(ids); start += 1000 {
		chunk := ids[start:min(start+1000, len(ids))]
		cmds, err := q.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range chunk {
				scriptEnqueue.EvalSha(ctx, p, []string{q.db.Keys.Sched, q.db.Keys.Wake, q.db.Keys.Seq, q.itemKey(id)}, q.db.Keys.Items, id, "payload-"+id, "after", 0, 0, "", 0, "u")
			}
			return nil
		})
		require.NoError(t, err)
		for _, c := range cmds {
			r, err := c.(*redis.Cmd).Slice()
			require.NoError(t, err)
			require.Len(t, r, 2) // {life, reply}: see newScript
			require.EqualValues(t, 1, r[1].([]interface{})[0])
		}
	}
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// 1. Two consumers (two Queue values on two clients) race on the same due
// items: every item is delivered exactly once (leases never expire here).
func TestTwoConsumersRace(t *testing.T) {
	s := startRedis(t)
	qs := []*Queue{newQueue(t, s.client(t), "race"), newQueue(t, s.client(t), "race")}
	const n = 3000
	seed(t, qs[0], ids("r", n))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	count := map[string]int{}
	byQueue := [2]int{}
	var acked atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(qi int) {
			defer wg.Done()
			q := qs[qi]
			for {
				ms, err := q.TakeBatch(ctx, 5)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				mu.Lock()
				for _, m := range ms {
					count[m.ID]++
					byQueue[qi]++
				}
				mu.Unlock()
				for _, m := range ms {
					if err := m.Ack(context.Background()); err != nil {
						errs <- fmt.Errorf("ack %s: %w", m.ID, err)
						return
					}
					if acked.Add(1) == n {
						cancel()
					}
				}
			}
		}(w % 2)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, count, n)
	for id, c := range count {
		require.Equal(t, 1, c, "item %s delivered %d times", id, c)
	}
	require.Positive(t, byQueue[0])
	require.Positive(t, byQueue[1])
	r := audit(t, qs[0])
	require.Equal(t, 0, r.Items)
}

// 2. A consumer process SIGKILLed between claim and ack: the item comes back
// after the visibility timeout with attempts incremented, and the dead
// consumer's late ack is rejected.
func TestKilledConsumerRedelivery(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "killc", WithVisibilityTimeout(time.Second), WithBackoff(0, 0), WithWakeCap(100*time.Millisecond))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "job", []byte("work"), 0)
	require.NoError(t, err)

	cmd, out := helperProcess(t, "claim", "REDISQ_ADDR="+s.addr(), "REDISQ_QUEUE=killc", "REDISQ_VIS=1s")
	require.True(t, out.Scan(), "helper output")
	f := fields(out.Text())
	require.Len(t, f, 4, out.Text())
	require.Equal(t, "CLAIMED", f[0])
	require.Equal(t, "job", f[1])
	require.Equal(t, "1", f[3])
	token := f[2]
	mem, err := c.HGet(ctx, q.db.Keys.Items+"job", "mem").Result()
	require.NoError(t, err)
	deadline, err := c.ZScore(ctx, q.db.Keys.Lease, mem).Result()
	require.NoError(t, err)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := q.Take(tctx)
	require.NoError(t, err)
	require.Equal(t, "job", m.ID)
	require.Equal(t, []byte("work"), m.Payload)
	require.Equal(t, 2, m.Attempts)
	require.GreaterOrEqual(t, m.ClaimedAt.UnixMilli(), int64(deadline), "redelivered before the lease expired")
	require.NotEqual(t, token, m.token)

	late := &Message{q: q, ID: "job", token: token}
	require.ErrorIs(t, late.Ack(ctx), ErrLeaseLost)
	require.ErrorIs(t, late.Extend(ctx, time.Minute), ErrLeaseLost)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.InFlight, "late ack changed nothing")
	require.EqualValues(t, 1, st.Counters["expired"])
	audit(t, q)
	require.NoError(t, m.Ack(ctx))
	r := audit(t, q)
	require.Equal(t, 0, r.Items)
}

// traffic runs producers and one consumer against q and records which
// operations Redis acknowledged.
type traffic struct {
	mu       sync.Mutex
	enqOK    map[string]bool // Enqueue returned nil
	ackOK    map[string]bool // Ack returned nil
	ackTried map[string]bool // Ack returned an error (may or may not be applied)
	enqN     atomic.Int64
	ackN     atomic.Int64
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

func startTraffic(q *Queue) *traffic { return startTrafficWith(q, 1, false) }

// startTrafficWith runs producers producers (several: their Enqueue calls
// overlap and are combined) and one consumer, settling by AckTake when
// ackTake is set, else by TakeBatch and Ack.
func startTrafficWith(q *Queue, producers int, ackTake bool) *traffic {
	tr := &traffic{enqOK: map[string]bool{}, ackOK: map[string]bool{}, ackTried: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	tr.stop = cancel
	for p := range producers {
		tr.wg.Add(1)
		go tr.produce(ctx, q, p)
	}
	tr.wg.Add(1)
	if ackTake {
		go tr.consumeAckTake(ctx, q)
		return tr
	}
	go func() {
		defer tr.wg.Done()
		for ctx.Err() == nil {
			c, cc := context.WithTimeout(ctx, time.Second)
			ms, err := q.TakeBatch(c, 10)
			cc()
			if err != nil {
				tr.backOff(ctx)
				continue
			}
			for _, m := range ms {
				c, cc := context.WithTimeout(context.Background(), time.Second)
				tr.settled(m.ID, m.Ack(c))
				cc()
			}
		}
	}()
	return tr
}

// produce enqueues ids "tP-I" until ctx is done, recording acknowledged
// ones.
func (tr *traffic) produce(ctx context.Context, q *Queue, p int) {
	defer tr.wg.Done()
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("t%d-%d", p, i)
		c, cc := context.WithTimeout(ctx, time.Second)
		_, err := q.EnqueueAfter(c, id, []byte(id), 0)
		cc()
		if err == nil {
			tr.mu.Lock()
			tr.enqOK[id] = true
			tr.mu.Unlock()
			tr.enqN.Add(1)
		} else {
			tr.backOff(ctx)
		}
	}
}

// backOff pauses while the server is away.
func (tr *traffic) backOff(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
}

// settled records the outcome of an ack of id.
func (tr *traffic) settled(id string, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err == nil {
		tr.ackOK[id] = true
		tr.ackN.Add(1)
	} else {
		tr.ackTried[id] = true
	}
}

// consumeAckTake settles each item by the next AckTake call.
func (tr *traffic) consumeAckTake(ctx context.Context, q *Queue) {
	defer tr.wg.Done()
	var done *Message
	for ctx.Err() == nil {
		c, cc := context.WithTimeout(ctx, time.Second)
		m, err := q.AckTake(c, done)
		cc()
		if done != nil && (err == nil || errors.Is(err, ErrLeaseLost) || ctx.Err() == nil) {
			tr.settled(done.ID, err) // nil: acked; else unknown or lost
			done = nil
		}
		if err != nil {
			tr.backOff(ctx)
			continue
		}
		done = m
	}
	if done != nil { // stopped: settle the last one
		c, cc := context.WithTimeout(context.Background(), time.Second)
		tr.settled(done.ID, done.Ack(c))
		cc()
	}
}

func (tr *traffic) finish() { tr.stop(); tr.wg.Wait() }

// verify checks that no acknowledged Enqueue and no acknowledged Ack was lost.
func (tr *traffic) verify(t *testing.T, q *Queue) {
	t.Helper()
	ctx := context.Background()
	lost, resurrected := 0, 0
	for id := range tr.enqOK {
		n, err := q.client.Exists(ctx, q.db.Keys.Items+id).Result()
		require.NoError(t, err)
		if n == 0 && !tr.ackOK[id] && !tr.ackTried[id] {
			lost++
		}
	}
	for id := range tr.ackOK {
		n, err := q.client.Exists(ctx, q.db.Keys.Items+id).Result()
		require.NoError(t, err)
		resurrected += int(n)
	}
	require.Zero(t, lost, "acknowledged enqueues lost")
	require.Zero(t, resurrected, "acknowledged acks undone")
}

// 3. redis-server SIGKILLed mid-traffic and restarted on the same AOF
// (appendfsync always): no acknowledged Enqueue or Ack is lost, and the
// scripts work again although the restart emptied the script cache.
func TestRedisKillRestartAOF(t *testing.T) {
	s := startRedis(t)
	c := s.client(t, func(o *redis.Options) { o.DialTimeout = 200 * time.Millisecond })
	q := newQueue(t, c, "aof", WithWakeCap(200*time.Millisecond))
	tr := startTraffic(q)
	eventually(t, 10*time.Second, "traffic before kill", func() bool { return tr.ackN.Load() > 200 })
	s.kill()
	enq, ack := tr.enqN.Load(), tr.ackN.Load()
	s.start()
	eventually(t, 15*time.Second, "traffic after restart", func() bool {
		return tr.enqN.Load() > enq+200 && tr.ackN.Load() > ack+200
	})
	tr.finish()
	tr.verify(t, q)
	ctx := context.Background()
	// The restarted server had an empty script cache: EVALSHA failed with
	// NOSCRIPT and the fallback EVAL reloaded the scripts.
	info, err := c.Info(ctx, "errorstats").Result()
	require.NoError(t, err)
	require.Contains(t, info, "errorstat_NOSCRIPT:count=")
	exists, err := c.ScriptExists(ctx, scriptClaim.Hash(), scriptEnqueue.Hash(), scriptAck.Hash()).Result()
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true}, exists, "scripts reloaded through the NOSCRIPT fallback")
	audit(t, q)
}

// 3b. The same with Enqueue calls combined (four producers) and a consumer
// settling by AckTake, through a SIGKILL and restart and a SIGSTOP longer
// than the read timeout.
func TestRedisFaultsCombinedEnqueueAckTake(t *testing.T) {
	s := startRedis(t)
	c := s.client(t, func(o *redis.Options) {
		o.DialTimeout = 200 * time.Millisecond
		o.ReadTimeout = 300 * time.Millisecond
		o.WriteTimeout = 300 * time.Millisecond
	})
	q := newQueue(t, c, "faults-combined", WithWakeCap(200*time.Millisecond), WithVisibilityTimeout(2*time.Second))
	tr := startTrafficWith(q, 4, true)
	progress := func(what string) {
		enq, ack := tr.enqN.Load(), tr.ackN.Load()
		eventually(t, 15*time.Second, what, func() bool {
			return tr.enqN.Load() > enq+200 && tr.ackN.Load() > ack+200
		})
	}
	progress("traffic before kill")
	s.kill()
	s.start()
	progress("traffic after restart")
	s.signal(syscall.SIGSTOP)
	time.Sleep(time.Second) // past the 300ms read timeout
	s.signal(syscall.SIGCONT)
	progress("traffic after resume")
	tr.finish()
	tr.verify(t, q)
	audit(t, q)
}

// 4. redis-server paused with SIGSTOP for longer than the client's read
// timeout, then continued: clients recover and nothing acknowledged is lost.
func TestRedisPauseSIGSTOP(t *testing.T) {
	s := startRedis(t)
	c := s.client(t, func(o *redis.Options) {
		o.ReadTimeout = 300 * time.Millisecond
		o.WriteTimeout = 300 * time.Millisecond
	})
	q := newQueue(t, c, "pause", WithWakeCap(200*time.Millisecond))
	tr := startTraffic(q)
	eventually(t, 10*time.Second, "traffic before pause", func() bool { return tr.ackN.Load() > 200 })
	s.signal(syscall.SIGSTOP)
	stopped := time.Now()
	// Wait until the clients have certainly hit their timeout.
	time.Sleep(1500 * time.Millisecond)
	enq, ack := tr.enqN.Load(), tr.ackN.Load()
	s.signal(syscall.SIGCONT)
	require.Greater(t, time.Since(stopped), 3*300*time.Millisecond)
	eventually(t, 15*time.Second, "traffic after resume", func() bool {
		return tr.enqN.Load() > enq+200 && tr.ackN.Load() > ack+200
	})
	tr.finish()
	tr.verify(t, q)
	audit(t, q)
}

// 5. Cancel and Reschedule race with claims: a successful Cancel means the
// item is never delivered; otherwise it reports in flight (and is then not
// retried) or already gone. A successful Reschedule is delivered once, not
// before its new due time.
func TestCancelRescheduleRaceClaim(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "cr", WithWakeCap(50*time.Millisecond))
	const n = 600
	all := ids("c", n)
	seed(t, q, all)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type delivery struct {
		count   int
		due     time.Time
		claimed time.Time
	}
	var mu sync.Mutex
	got := map[string]*delivery{}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ms, err := q.TakeBatch(ctx, 3)
				if err != nil {
					return
				}
				for _, m := range ms {
					mu.Lock()
					d := got[m.ID]
					if d == nil {
						d = &delivery{}
						got[m.ID] = d
					}
					d.count++
					d.due, d.claimed = m.Due, m.ClaimedAt
					mu.Unlock()
					if err := m.Ack(context.Background()); err != nil {
						t.Errorf("ack %s: %v", m.ID, err)
					}
				}
			}
		}()
	}
	cancelRes := map[string]error{}
	reschedRes := map[string]error{}
	reschedDue := map[string]time.Time{}
	var cwg sync.WaitGroup
	cwg.Add(2)
	go func() {
		defer cwg.Done()
		for i := n - 2; i >= 0; i -= 2 { // from the tail: meets the consumers mid-way
			out, err := q.Cancel(context.Background(), all[i])
			if out == CancelMarked {
				err = ErrInFlight // recorded as such below: the claim won
			}
			cancelRes[all[i]] = err
		}
	}()
	go func() {
		defer cwg.Done()
		for i := n - 1; i >= 1; i -= 2 {
			due, err := q.RescheduleAfter(context.Background(), all[i], 30*time.Millisecond)
			reschedRes[all[i]], reschedDue[all[i]] = err, due
		}
	}()
	cwg.Wait()
	eventually(t, 20*time.Second, "queue drained", func() bool {
		st, err := q.Stats(context.Background())
		require.NoError(t, err)
		return st.Scheduled == 0 && st.InFlight == 0
	})
	cancel()
	wg.Wait()

	kinds := map[string]int{}
	for id, err := range cancelRes {
		d := got[id]
		switch {
		case err == nil:
			kinds["cancelled"]++
			require.Nil(t, d, "cancelled item %s was delivered", id)
		case err == ErrInFlight || err == ErrNotFound:
			kinds[err.Error()]++
			require.NotNil(t, d, "%s: %v but never delivered", id, err)
			require.Equal(t, 1, d.count, id)
		default:
			t.Fatalf("cancel %s: %v", id, err)
		}
	}
	for id, err := range reschedRes {
		d := got[id]
		require.NotNil(t, d, "rescheduled item %s never delivered", id)
		require.Equal(t, 1, d.count, id)
		switch {
		case err == nil:
			kinds["rescheduled"]++
			require.Equal(t, reschedDue[id], d.due, id)
			require.False(t, d.claimed.Before(reschedDue[id]), "%s delivered before its new due time", id)
		case err == ErrInFlight || err == ErrNotFound:
		default:
			t.Fatalf("reschedule %s: %v", id, err)
		}
	}
	t.Logf("outcomes: %v", kinds)
	require.Positive(t, kinds["cancelled"], "race never let a cancel win")
	require.Positive(t, kinds[ErrNotFound.Error()]+kinds[ErrInFlight.Error()], "race never let a claim win")
	r := audit(t, q)
	require.Equal(t, 0, r.Items)
}
