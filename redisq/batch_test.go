package redisq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// EnqueueMany reports each item: a new id is stored with its due time, an
// existing id or one repeated within the call is ErrDuplicate, and nothing
// else changes for it. Items stored together keep slice order among equal
// due times and are never due before Redis TIME + delay.
func TestEnqueueManyPerItemResults(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "many")
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "old", []byte("old"), time.Hour)
	require.NoError(t, err)

	at := redisNow(t, c).Add(-time.Second) // due at once, all at one instant
	items := []EnqueueItem{
		{ID: "c", Payload: []byte("c"), At: at},
		{ID: "old", Payload: []byte("new"), At: at},
		{ID: "a", Payload: []byte("a"), At: at},
		{ID: "c", Payload: []byte("c2"), At: at},
		{ID: "b", Payload: []byte("b"), At: at},
		{ID: "later", Payload: []byte("l"), After: 300 * time.Millisecond},
	}
	before := redisNow(t, c)
	res, err := q.EnqueueMany(ctx, items)
	require.NoError(t, err)
	require.Len(t, res, len(items))
	for i, want := range []error{nil, ErrDuplicate, nil, ErrDuplicate, nil, nil} {
		require.ErrorIs(t, res[i].Err, want, "item %d", i)
	}
	require.Equal(t, time.UnixMilli(dueMS(at)), res[0].Due)
	require.False(t, res[5].Due.Before(before.Add(300*time.Millisecond)), "due before Redis TIME + delay")

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 5, st.Enqueued, "old + 4 new")
	ms, err := q.TakeBatch(ctx, 10)
	require.NoError(t, err)
	var got []string
	for _, m := range ms {
		got = append(got, m.ID+"="+string(m.Payload))
	}
	require.Equal(t, []string{"c=c", "a=a", "b=b"}, got, "FIFO among equal due times, duplicates unchanged")
	require.Empty(t, q.AckMany(ctx, ms)[0])
	it, err := q.Get(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, "old", string(it.Payload))
	audit(t, q)
}

// More items than one script stores go as several scripts in one round
// trip; every item still gets its own answer.
func TestEnqueueManyLargeBatch(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	h := &countHook{}
	c.AddHook(h)
	q := newQueue(t, c, "large")
	ctx := context.Background()
	const n = 2*enqueueBatch + 7
	items := make([]EnqueueItem, n)
	for i := range items {
		items[i] = EnqueueItem{ID: strconv.Itoa(i % (n - 3)), Payload: []byte(strconv.Itoa(i))}
	}
	res, err := q.EnqueueMany(ctx, items)
	require.NoError(t, err)
	for i, r := range res {
		if i >= n-3 {
			require.ErrorIs(t, r.Err, ErrDuplicate, "item %d repeats item %d", i, i%(n-3))
		} else {
			require.NoError(t, r.Err, "item %d", i)
		}
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, n-3, st.Scheduled)
	require.EqualValues(t, n-3, st.Enqueued)
	audit(t, q)

	// Bad input is refused before anything is sent.
	sent := h.total.Load()
	_, err = q.EnqueueMany(ctx, []EnqueueItem{{ID: "fine"}, {ID: ""}})
	require.Error(t, err)
	require.Equal(t, sent, h.total.Load())
	res, err = q.EnqueueMany(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, res)
	require.NoError(t, q.Close())
	_, err = q.EnqueueMany(ctx, items[:1])
	require.ErrorIs(t, err, ErrClosed)
}

// AckMany answers per message: acked, lease lost (a stale lease of a
// redelivered item), and a message listed twice is acked once.
func TestAckManyPerMessage(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	// A lease long enough that ms[0] and ms[1] are extended before it ends
	// on a busy machine.
	q := newQueue(t, c, "ackmany", WithVisibilityTimeout(2*time.Second))
	ctx := context.Background()
	for i := range 3 {
		// Due in the past, so that one TakeBatch finds all three (due
		// "after 0" is the next whole ms of Redis TIME, which may differ).
		require.NoError(t, q.Enqueue(ctx, fmt.Sprint(i), nil, time.Unix(1, 0)))
	}
	ms, err := q.TakeBatch(ctx, 3)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	stale := ms[2]
	require.NoError(t, ms[0].Extend(ctx, time.Minute))
	require.NoError(t, ms[1].Extend(ctx, time.Minute))
	untilRedisTime(t, c, stale.Deadline)
	again, err := q.Take(ctx) // item 2's lease expired: redelivered
	require.NoError(t, err)
	require.Equal(t, stale.ID, again.ID)

	errs := q.AckMany(ctx, []*Message{ms[0], ms[1], stale, ms[0], again})
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], ErrLeaseLost)
	require.NoError(t, errs[3], "listed twice: acked once")
	require.NoError(t, errs[4])
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, st.Acked)
	require.Zero(t, st.InFlight+st.Scheduled)
	// Run again (a retry after a lost reply): the tombstones answer.
	for i, err := range q.AckMany(ctx, []*Message{ms[0], ms[1], again}) {
		require.NoError(t, err, "retried ack %d", i)
	}
	audit(t, q)
}

// Regression: EnqueueMany pipelined its chunks as EVALSHA and re-ran a chunk
// that got NOSCRIPT after the pipeline, so when another client reloaded the
// script in between, a later chunk was applied first: slice order (FIFO
// among equal due times) was lost and the later copy of a repeated id was
// stored while the earlier one was reported ErrDuplicate. Chunks go as EVAL
// now and are applied in order.
func TestRegressionEnqueueManyNoScriptReorders(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	c.AddHook(reloadMidPipeline{side: s.client(t), scripts: []*script{scriptEnqueueMany, scriptAckMany}})
	q := newQueue(t, c, "nos", WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	at := redisNow(t, c).Add(-time.Second)
	items := make([]EnqueueItem, enqueueBatch+100)
	for i := range items {
		items[i] = EnqueueItem{ID: fmt.Sprintf("i%04d", i), Payload: []byte(strconv.Itoa(i)), At: at}
	}
	items[enqueueBatch+50].ID = items[0].ID
	res, err := q.EnqueueMany(ctx, items)
	require.NoError(t, err)
	require.NoError(t, res[0].Err, "the first copy of a repeated id")
	require.ErrorIs(t, res[enqueueBatch+50].Err, ErrDuplicate, "the later copy of a repeated id")
	ms, err := q.TakeBatch(ctx, MaxBatch)
	require.NoError(t, err)
	require.Len(t, ms, len(items)-1)
	j := 0
	for i, it := range items {
		if i == enqueueBatch+50 {
			continue
		}
		require.Equal(t, it.ID, ms[j].ID, "FIFO position %d", j)
		require.Equal(t, it.Payload, ms[j].Payload)
		j++
	}
	for _, err := range q.AckMany(ctx, ms) {
		require.NoError(t, err)
	}
	audit(t, q)
}

// Regression: AckMany sent every message's id and token with its own
// queue's keys, so a Message taken from another queue acked this queue's
// item of the same id (tokens are per-queue sequence numbers and can match).
// A foreign message now gets an error and nothing changes in either queue.
func TestRegressionAckManyForeignMessages(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	a := newQueue(t, c, "qa", WithVisibilityTimeout(time.Hour))
	b := newQueue(t, c, "qb", WithVisibilityTimeout(time.Hour))
	a2 := newQueue(t, c, "qa") // another Queue value of the same queue
	ctx := context.Background()
	for _, q := range []*Queue{a, b} {
		for _, id := range []string{"x", "y"} {
			// Due in the past: one TakeBatch finds both.
			require.NoError(t, q.Enqueue(ctx, id, nil, time.Unix(1, 0)))
		}
	}
	ma, err := a.TakeBatch(ctx, 2)
	require.NoError(t, err)
	mb, err := b.TakeBatch(ctx, 2)
	require.NoError(t, err)
	errs := a.AckMany(ctx, []*Message{mb[0], ma[1]})
	require.ErrorContains(t, errs[0], `message "x" is from queue "qb", not "qa"`)
	require.NoError(t, errs[1])
	for _, q := range []*Queue{a, b} {
		it, err := q.Get(ctx, "x")
		require.NoError(t, err, "x of %s", q.name)
		require.Equal(t, StateInFlight, it.State)
	}
	require.Equal(t, []error{nil}, a2.AckMany(ctx, []*Message{ma[0]}), "same queue, other Queue value")
	require.Equal(t, []error{nil, nil}, b.AckMany(ctx, mb))
	audit(t, a)
	audit(t, b)
}

// Regression: the timer owner that got work woke another waiter to take the
// timer over, so with several consumers at a steady rate every item cost
// about 2.4 claim scripts. The timer now stays with the Queue whose consumer
// comes back for it.
func TestRegressionTimerHandOffCostsAClaimPerItem(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	h := &countHook{}
	c.AddHook(h)
	q := newQueue(t, c, "handoff")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 300
	got := make(chan struct{}, n)
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				m, err := q.Take(ctx)
				if err != nil {
					return
				}
				_ = m.Ack(context.Background())
				got <- struct{}{}
			}
		}()
	}
	producer := s.client(t) // not counted
	pq := newQueue(t, producer, "handoff")
	tick := time.NewTicker(3 * time.Millisecond)
	for i := range n {
		<-tick.C
		_, err := pq.EnqueueAfter(ctx, fmt.Sprint(i), nil, 20*time.Millisecond)
		require.NoError(t, err)
	}
	tick.Stop()
	for range n {
		<-got
	}
	cancel()
	for range 4 {
		<-done
	}
	scripts := h.eval.Load() - n // minus the acks
	t.Logf("%d items: %d claim scripts, %d BZPOPMIN", n, scripts, h.bzpopmin.Load())
	require.LessOrEqual(t, float64(scripts)/n, 2.0, "claim scripts per item (2.4 before the timer stayed with the claimer; ~1.1-1.6 measured)")
	audit(t, q)
}

// An EnqueueMany or AckMany of one chunk (every combined Enqueue and every
// Worker ack batch) is sent as EVALSHA: EVAL makes the server hash and
// read the script's whole text on every call (docs/performance.md). After
// SCRIPT FLUSH it still succeeds, by EVAL.
func TestOneChunkIsSentByHash(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "bysha", WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	for _, src := range rdb.Sources() {
		require.NoError(t, c.ScriptLoad(ctx, src).Err())
	}
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	at := redisNow(t, c).Add(-time.Second)
	round := func(prefix string) {
		items := make([]EnqueueItem, 5)
		for i := range items {
			items[i] = EnqueueItem{ID: prefix + strconv.Itoa(i), At: at}
		}
		res, err := q.EnqueueMany(ctx, items)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
		ms, err := q.TakeBatch(ctx, 5)
		require.NoError(t, err)
		require.Len(t, ms, 5)
		for _, err := range q.AckMany(ctx, ms) {
			require.NoError(t, err)
		}
	}
	round("a")
	require.Zero(t, commandCalls(t, c, "eval"), "EVAL sent")
	require.NoError(t, c.ScriptFlush(ctx).Err())
	round("b")
	require.EqualValues(t, 3, commandCalls(t, c, "eval"), "EVAL after NOSCRIPT: enqueue-many, claim and ack-many")
	audit(t, q)
}

// commandCalls is how many times the server ran the command name since the
// last CONFIG RESETSTAT (INFO commandstats).
func commandCalls(t testing.TB, c *redis.Client, name string) int64 {
	return commandStat(t, c, name, "calls")
}

// commandStat is the field (calls, usec, ...) of command name in INFO
// commandstats, 0 when the server has not run it.
func commandStat(t testing.TB, c *redis.Client, name, field string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, l := range splitLines(info) {
		rest, ok := strings.CutPrefix(l, "cmdstat_"+name+":")
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, field+"="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err)
				return n
			}
		}
	}
	return 0
}
