package redisq

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fullJob sets every field of a Job, with a header value that is not
// UTF-8 and one that is empty.
func fullJob(now time.Time) Job {
	return Job{
		Kind:        "refund",
		Headers:     map[string]string{"traceparent": "00-abc-01", "bin": "\xff\x00\xfe", "empty": ""},
		MaxAttempts: 7,
		BackoffBase: 3 * time.Millisecond,
		BackoffMax:  40 * time.Second,
		Timeout:     1500 * time.Millisecond,
		NotAfter:    now.Add(time.Hour).Truncate(time.Millisecond),
		Retention:   2 * time.Minute,
	}
}

func requireJob(t *testing.T, want, got Job, msg string) {
	t.Helper()
	require.Equal(t, want.NotAfter.UnixMilli(), got.NotAfter.UnixMilli(), msg)
	want.NotAfter, got.NotAfter = time.Time{}, time.Time{}
	require.Equal(t, want, got, msg)
}

// TestJobStoredAndRead: a Job given at enqueue (Add, EnqueueMany,
// ScheduleItem) is what Get, List and the claimed Message carry; an upsert
// replaces it whole; List filters by kind.
func TestJobStoredAndRead(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "jobs")
	ctx := context.Background()
	j := fullJob(time.Now())

	_, err := q.Add(ctx, EnqueueItem{ID: "a", Payload: []byte("pa"), Job: j})
	require.NoError(t, err)
	it, err := q.Get(ctx, "a")
	require.NoError(t, err)
	requireJob(t, j, it.Job, "Get after Add")

	plain := Job{Kind: "digest"}
	res, err := q.EnqueueMany(ctx, []EnqueueItem{
		{ID: "b", Job: plain, After: time.Hour},
		{ID: "c", After: time.Hour},
		{ID: "d", Job: j, After: time.Hour},
		{ID: "a", Job: plain}, // a duplicate keeps the first's job
	})
	require.NoError(t, err)
	require.ErrorIs(t, res[3].Err, ErrDuplicate)
	for id, want := range map[string]Job{"a": j, "b": plain, "c": {}, "d": j} {
		it, err := q.Get(ctx, id)
		require.NoError(t, err)
		requireJob(t, want, it.Job, id)
	}

	p, err := q.List(ctx, StateScheduled, ListOptions{Kind: "refund"})
	require.NoError(t, err)
	var ids []string
	for _, it := range p.Items {
		ids = append(ids, it.ID)
		requireJob(t, j, it.Job, "List "+it.ID)
	}
	require.Equal(t, []string{"a", "d"}, ids, "the refunds, in due order (b is a digest, c has no kind)")
	p, err = q.List(ctx, StateScheduled, ListOptions{Kind: "nope"})
	require.NoError(t, err)
	require.Empty(t, p.Items)

	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", m.ID)
	requireJob(t, j, m.Job, "the claimed message")
	require.Equal(t, "refund", m.Kind)

	// An upsert replaces the job whole: with none, it has none.
	_, err = q.ScheduleItem(ctx, EnqueueItem{ID: "d", Job: plain, After: time.Hour})
	require.NoError(t, err)
	it, err = q.Get(ctx, "d")
	require.NoError(t, err)
	requireJob(t, plain, it.Job, "d replaced")
	_, err = q.ScheduleAfter(ctx, "d", nil, time.Hour)
	require.NoError(t, err)
	it, err = q.Get(ctx, "d")
	require.NoError(t, err)
	requireJob(t, Job{}, it.Job, "d replaced without a job")
	r, err := q.ScheduleItem(ctx, EnqueueItem{ID: "e", Job: j})
	require.NoError(t, err)
	require.True(t, r.Created)
	it, err = q.Get(ctx, "e")
	require.NoError(t, err)
	requireJob(t, j, it.Job, "e created by ScheduleItem")
	audit(t, q)
}

// TestJobRefused: a job that cannot be stored is an error, and nothing is
// stored.
func TestJobRefused(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "refused")
	ctx := context.Background()
	for name, j := range map[string]Job{
		"long kind":     {Kind: strings.Repeat("k", MaxKindLen+1)},
		"not utf-8":     {Kind: "\xff"},
		"headers":       {Headers: map[string]string{"h": strings.Repeat("v", MaxHeaderBytes)}},
		"empty header":  {Headers: map[string]string{"": "v"}},
		"negative":      {Timeout: -time.Second},
		"backoff order": {BackoffBase: time.Second, BackoffMax: time.Millisecond},
	} {
		_, err := q.Add(ctx, EnqueueItem{ID: "x", Job: j})
		require.Error(t, err, name)
		_, err = q.EnqueueMany(ctx, []EnqueueItem{{ID: "y"}, {ID: "x", Job: j}})
		require.Error(t, err, name)
		_, err = q.ScheduleItem(ctx, EnqueueItem{ID: "x", Job: j})
		require.Error(t, err, name)
	}
	_, err := q.Add(ctx, EnqueueItem{ID: "ok", Job: Job{Kind: strings.Repeat("k", MaxKindLen)}})
	require.NoError(t, err, "a kind of MaxKindLen bytes")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Scheduled)
}

// TestJobAttemptsAndBackoff: an item's own max attempts and backoff
// replace the queue's, in a Nack and when a lease expires.
func TestJobAttemptsAndBackoff(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "policy", WithMaxAttempts(3), WithBackoff(time.Hour, time.Hour),
		WithVisibilityTimeout(100*time.Millisecond))
	ctx := context.Background()
	take := func(id string) *Message {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		m, err := q.Take(tctx)
		require.NoError(t, err, "taking %s", id)
		require.Equal(t, id, m.ID)
		return m
	}

	// Its own max attempts: dead after one nack, where the queue allows 3.
	_, err := q.Add(ctx, EnqueueItem{ID: "once", Job: Job{MaxAttempts: 1}})
	require.NoError(t, err)
	r, err := take("once").NackWith(ctx)
	require.NoError(t, err)
	require.Equal(t, NackDeadLettered, r.Outcome)

	// Its own backoff: redelivered after 1 ms, not the queue's hour.
	_, err = q.Add(ctx, EnqueueItem{ID: "quick", Job: Job{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}})
	require.NoError(t, err)
	m := take("quick")
	r, err = m.NackWith(ctx)
	require.NoError(t, err)
	require.Equal(t, NackRetried, r.Outcome)
	require.Less(t, r.Due.Sub(m.ClaimedAt), time.Minute, "the job's backoff, not the queue's hour")
	m = take("quick")
	require.Equal(t, 2, m.Attempts)
	require.NoError(t, m.Ack(ctx))

	// No limit of its own (< 0) on a queue with one.
	_, err = q.Add(ctx, EnqueueItem{ID: "forever", Job: Job{MaxAttempts: -1, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}})
	require.NoError(t, err)
	for range 4 {
		r, err = take("forever").NackWith(ctx)
		require.NoError(t, err)
		require.Equal(t, NackRetried, r.Outcome)
	}
	_, err = q.Cancel(ctx, "forever")
	require.NoError(t, err)

	// A lease that expires: the reclaim honours the item's own limit and
	// backoff as well.
	_, err = q.Add(ctx, EnqueueItem{ID: "lost", Job: Job{MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}})
	require.NoError(t, err)
	m = take("lost")
	m = take("lost") // after the lease expired: the job's 1 ms backoff
	require.Equal(t, 2, m.Attempts)
	untilRedisTime(t, c, m.Deadline.Add(time.Millisecond))
	st, err := q.Stats(ctx) // the claim of Take would reclaim too; Stats does not
	require.NoError(t, err)
	require.EqualValues(t, 1, st.InFlight)
	// Its claim reclaims the expired lease, then waits: nothing is due.
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = q.Take(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	it, err := q.Get(ctx, "lost")
	require.NoError(t, err)
	require.Equal(t, StateDead, it.State, "two attempts, the job's max")
	require.Equal(t, "max attempts: lease expired", it.DeadReason)
}

type refundArgs struct {
	Order int    `json:"order"`
	Note  string `json:"note"`
}

// TestMuxRoutesTypedKinds: a Worker on a Mux runs each kind's typed
// handler with the decoded payload; a payload that does not decode is
// dead-lettered at once with a reason that says so; a kind with no handler
// is retried (logged), or dead-lettered at once with a NotFound that says
// so.
func TestMuxRoutesTypedKinds(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "mux", WithMaxAttempts(5), WithBackoff(time.Hour, time.Hour))
	ctx := context.Background()
	refund := JobKind[refundArgs]{Name: "refund", Defaults: []JobOption{MaxAttempts(2), Header("src", "test")}}
	got := make(chan string, 10)
	mux := NewMux()
	refund.Handle(mux, func(ctx context.Context, m *Message, a refundArgs) error {
		got <- m.ID + ":" + a.Note + ":" + m.Headers["src"]
		return nil
	})
	HandleJSON(mux, "digest", func(ctx context.Context, m *Message, n int) error {
		got <- m.ID + ":" + string(rune('0'+n))
		return nil
	})
	require.Equal(t, []string{"digest", "refund"}, mux.Kinds())
	var logs syncBuffer
	w := NewWorker(q, mux.Serve, WorkerOptions{Concurrency: 2, Heartbeat: -1, NoRecurring: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	runWorker(t, w)

	_, err := refund.EnqueueAfter(ctx, q, "r1", refundArgs{Order: 1, Note: "n1"}, 0)
	require.NoError(t, err)
	_, err = q.Add(ctx, EnqueueItem{ID: "d1", Payload: []byte("3"), Job: Job{Kind: "digest"}})
	require.NoError(t, err)
	seen := map[string]bool{}
	for range 2 {
		select {
		case s := <-got:
			seen[s] = true
		case <-time.After(20 * time.Second):
			t.Fatal("the handlers did not run")
		}
	}
	require.Equal(t, map[string]bool{"r1:n1:test": true, "d1:3": true}, seen)
	eventually(t, 20*time.Second, "r1 acked", func() bool {
		_, err := q.Get(ctx, "r1")
		return errors.Is(err, ErrNotFound)
	})

	// A payload that does not decode: dead at once, whatever the attempts.
	_, err = q.Add(ctx, EnqueueItem{ID: "bad", Payload: []byte(`{"order":"x"}`), Job: Job{Kind: "refund"}})
	require.NoError(t, err)
	eventually(t, 20*time.Second, "bad is dead", func() bool {
		it, err := q.Get(ctx, "bad")
		return err == nil && it.State == StateDead
	})
	it, err := q.Get(ctx, "bad")
	require.NoError(t, err)
	require.Equal(t, 1, it.Attempts)
	require.Contains(t, it.DeadReason, "does not decode as redisq.refundArgs")

	// An unknown kind: retried after the backoff, and logged.
	_, err = q.Add(ctx, EnqueueItem{ID: "new", Job: Job{Kind: "from-the-future"}})
	require.NoError(t, err)
	eventually(t, 20*time.Second, "new is retried", func() bool {
		it, err := q.Get(ctx, "new")
		return err == nil && it.State == StateScheduled && it.Attempts == 1
	})
	require.Contains(t, logs.String(), `kind=from-the-future`)
	require.Contains(t, logs.String(), "no handler for the message's kind")

	// NotFound dead-letters it at once instead.
	mux.NotFound(func(ctx context.Context, m *Message) error {
		return SkipRetry(&UnknownKindError{Kind: m.Kind})
	})
	_, err = q.Add(ctx, EnqueueItem{ID: "new2", Job: Job{Kind: "from-the-future"}})
	require.NoError(t, err)
	eventually(t, 20*time.Second, "new2 is dead", func() bool {
		it, err := q.Get(ctx, "new2")
		return err == nil && it.State == StateDead
	})
	it, err = q.Get(ctx, "new2")
	require.NoError(t, err)
	require.Equal(t, `redisq: no handler for kind "from-the-future"`, it.DeadReason)
	require.Panics(t, func() { mux.Handle("refund", DefaultNotFound) }, "a second handler of a kind")
}

// TestJobTimeout: a handler's ctx ends at its job's Timeout, with cause
// ErrJobTimeout, while the lease (much shorter) is kept alive meanwhile;
// the failure is retried.
func TestJobTimeout(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "timeout", WithVisibilityTimeout(time.Second), WithBackoff(time.Hour, time.Hour))
	ctx := context.Background()
	type run struct {
		left  time.Duration // from the handler's start to its ctx's deadline
		cause error
	}
	runs := make(chan run, 2)
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		start := time.Now()
		dl, _ := ctx.Deadline()
		<-ctx.Done()
		runs <- run{dl.Sub(start), context.Cause(ctx)}
		return ctx.Err()
	}, WorkerOptions{Concurrency: 1, Heartbeat: -1, NoRecurring: true})
	runWorker(t, w)
	_, err := q.Add(ctx, EnqueueItem{ID: "slow", Job: Job{Timeout: 3 * time.Second}})
	require.NoError(t, err)
	var r run
	select {
	case r = <-runs:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's ctx did not end")
	}
	require.ErrorIs(t, r.cause, ErrJobTimeout, "the timeout ended it, not a lost lease")
	require.True(t, r.left > 0 && r.left <= 3*time.Second, "the deadline is the timeout from the run's start: %v", r.left)
	eventually(t, 20*time.Second, "slow is retried", func() bool {
		it, err := q.Get(ctx, "slow")
		return err == nil && it.State == StateScheduled
	})
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Expired, "the lease never expired while the handler ran")
}

// TestJobNotAfter: an item claimed after its NotAfter time is
// dead-lettered unrun with ReasonNotAfter; before it, it runs, and its
// handler's ctx ends at it.
func TestJobNotAfter(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "notafter")
	ctx := context.Background()
	ran := make(chan string, 4)
	causes := make(chan error, 4)
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		ran <- m.ID
		if m.ID == "bounded" {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}
		return nil
	}, WorkerOptions{Concurrency: 2, Heartbeat: -1, NoRecurring: true})
	now := redisNow(t, c)
	_, err := q.Add(ctx, EnqueueItem{ID: "stale", At: now.Add(-time.Minute), Job: Job{NotAfter: now.Add(-time.Second)}})
	require.NoError(t, err)
	runWorker(t, w)
	eventually(t, 20*time.Second, "stale is dead", func() bool {
		it, err := q.Get(ctx, "stale")
		return err == nil && it.State == StateDead
	})
	it, err := q.Get(ctx, "stale")
	require.NoError(t, err)
	require.Equal(t, ReasonNotAfter, it.DeadReason)

	_, err = q.Add(ctx, EnqueueItem{ID: "bounded", Job: Job{NotAfter: redisNow(t, c).Add(5 * time.Second)}})
	require.NoError(t, err)
	select {
	case id := <-ran:
		require.Equal(t, "bounded", id, "stale never ran")
	case <-time.After(20 * time.Second):
		t.Fatal("bounded did not run")
	}
	select {
	case err := <-causes:
		require.True(t, errors.Is(err, ErrJobTimeout), "%v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the ctx did not end at NotAfter")
	}
}

// TestRetention: an item whose job has a Retention is kept once acked, in
// the state Completed, with the result its handler set (by a Worker, Ack,
// AckMany and AckTake), counted by Stats, listed, and unique by id while
// kept; after its retention it is gone and no key of it is left; it can be
// run again, cancelled and purged.
func TestRetention(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "ret")
	ctx := context.Background()
	const keep = 8 * time.Second

	// A Worker's handler sets the result.
	mux := NewMux()
	HandleJSON(mux, "refund", func(ctx context.Context, m *Message, order int) error {
		return m.SetResult([]byte("refunded " + string(rune('0'+order))))
	})
	w := NewWorker(q, mux.Serve, WorkerOptions{Concurrency: 1, Heartbeat: -1, NoRecurring: true})
	runWorker(t, w)
	_, err := q.Add(ctx, EnqueueItem{ID: "r1", Payload: []byte("4"), Job: Job{Kind: "refund", Retention: keep}})
	require.NoError(t, err)
	eventually(t, 20*time.Second, "r1 completed", func() bool {
		it, err := q.Get(ctx, "r1")
		return err == nil && it.State == StateCompleted
	})
	it, err := q.Get(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, "refunded 4", string(it.Result))
	require.Equal(t, len("refunded 4"), it.ResultSize)
	require.Equal(t, keep, it.Expires.Sub(it.CompletedAt))
	require.Equal(t, "4", string(it.Payload), "the payload is kept too")
	_, err = q.Add(ctx, EnqueueItem{ID: "r1"})
	require.ErrorIs(t, err, ErrDuplicate, "unique by id while kept")
	require.NoError(t, w.Shutdown(ctx))

	// Ack, AckMany and AckTake keep results too; an item with no
	// retention is deleted as before.
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		// Due long ago: all are due at the claim (an item due "now" is
		// due at the next ms of Redis TIME, which the claim may precede).
		_, err := q.Add(ctx, EnqueueItem{ID: id, At: time.Unix(1, 0), Job: Job{Retention: time.Hour}})
		require.NoError(t, err)
	}
	_, err = q.EnqueueAfter(ctx, "plain", nil, 0)
	require.NoError(t, err)
	ms, err := q.TakeBatch(ctx, 5)
	require.NoError(t, err)
	require.Len(t, ms, 5)
	for _, m := range ms {
		require.NoError(t, m.SetResult([]byte("res-"+m.ID)))
	}
	require.Error(t, ms[0].SetResult(make([]byte, MaxResultBytes+1)))
	require.NoError(t, ms[0].Ack(ctx))
	next, err := q.AckTake(ctx, ms[1])
	require.NoError(t, err)
	require.Equal(t, "plain", next.ID)
	require.NoError(t, next.Ack(ctx))
	require.NoError(t, errors.Join(q.AckMany(ctx, ms[2:])...))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, st.Completed, "r1 and a..e")
	p, err := q.List(ctx, StateCompleted, ListOptions{Payloads: true})
	require.NoError(t, err)
	results := map[string]string{}
	for _, it := range p.Items {
		results[it.ID] = string(it.Result)
	}
	require.Equal(t, map[string]string{"r1": "refunded 4", "a": "res-a", "b": "res-b", "c": "res-c", "d": "res-d", "e": "res-e"}, results)
	_, err = q.Get(ctx, "plain")
	require.ErrorIs(t, err, ErrNotFound, "no retention: deleted at the ack")
	require.True(t, audit(t, q).OK())

	// After its retention r1 is gone, with no key left of it.
	eventually(t, 30*time.Second, "r1 expired", func() bool {
		_, err := q.Get(ctx, "r1")
		return errors.Is(err, ErrNotFound)
	})
	require.Zero(t, c.Exists(ctx, q.itemKey("r1")).Val())
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 5, st.Completed)

	// Run again, cancel, purge.
	r, err := q.RunNow(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, RunNowRequeued, r.Outcome)
	it, err = q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State)
	require.Nil(t, it.Result)
	require.EqualValues(t, -1, c.PTTL(ctx, q.itemKey("a")).Val(), "a requeued item does not expire")
	out, err := q.Cancel(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, CancelRemoved, out)
	n, err := q.Purge(ctx, StateCompleted)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "c, d, e")
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Completed)
	require.Zero(t, c.Exists(ctx, q.db.Keys.Done).Val())
	require.True(t, audit(t, q).OK())
}

// TestRetentionLeavesNoKeys: completed items whose retention passed leave
// no key behind, with nothing running after them: their hashes expire and
// done expires with its last member.
func TestRetentionLeavesNoKeys(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "noleak")
	ctx := context.Background()
	items := make([]EnqueueItem, 50)
	for i := range items {
		items[i] = EnqueueItem{ID: "i" + string(rune('A'+i)), Job: Job{Retention: 5*time.Second + time.Duration(10*i)*time.Millisecond}}
	}
	_, err := q.EnqueueMany(ctx, items)
	require.NoError(t, err)
	for {
		ms, err := q.TakeBatch(ctx, 10)
		require.NoError(t, err)
		require.NoError(t, errors.Join(q.AckMany(ctx, ms)...))
		if st, _ := q.Stats(ctx); st.Scheduled == 0 {
			break
		}
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 50, st.Completed)
	itemKeys := func() []string {
		ks, err := c.Keys(ctx, "{dq:noleak}:m:*").Result()
		require.NoError(t, err)
		return ks
	}
	require.Len(t, itemKeys(), 50)
	eventually(t, 30*time.Second, "every completed item and done gone", func() bool {
		return len(itemKeys()) == 0 && c.Exists(ctx, q.db.Keys.Done).Val() == 0
	})
}

// TestRecurringJob: a registration's Job is stored with it, shown by
// Registration, and given to each occurrence (the first, those the keeper
// enqueues, an extra run); a Register with another job is an update, with
// the same one unchanged.
func TestRecurringJob(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "recjob")
	ctx := context.Background()
	j := Job{Kind: "digest", Headers: map[string]string{"team": "ops"}, MaxAttempts: 2, Timeout: time.Minute}
	out, err := q.Register(ctx, "d", Every(time.Hour), []byte("p"), RegisterJob(j))
	require.NoError(t, err)
	require.Equal(t, RegistrationCreated, out)
	out, err = q.Register(ctx, "d", Every(time.Hour), []byte("p"), RegisterJob(j))
	require.NoError(t, err)
	require.Equal(t, RegistrationUnchanged, out)
	g, err := q.Registration(ctx, "d")
	require.NoError(t, err)
	requireJob(t, j, g.Job, "Registration")
	it, err := q.Get(ctx, g.EnqueuedID)
	require.NoError(t, err)
	requireJob(t, j, it.Job, "the first occurrence")

	r, err := q.RunNow(ctx, g.EnqueuedID)
	require.NoError(t, err)
	require.Equal(t, RunNowExtra, r.Outcome)
	it, err = q.Get(ctx, r.ID)
	require.NoError(t, err)
	requireJob(t, j, it.Job, "the extra run")

	j2 := Job{Kind: "digest2"}
	out, err = q.Register(ctx, "d", Every(time.Hour), []byte("p"), RegisterJob(j2))
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out, "another job is an update")
	g, err = q.Registration(ctx, "d")
	require.NoError(t, err)
	requireJob(t, j2, g.Job, "updated")
	it, err = q.Get(ctx, g.EnqueuedID)
	require.NoError(t, err)
	requireJob(t, j2, it.Job, "the occurrence of the update")
	out, err = q.Register(ctx, "d", Every(time.Hour), []byte("p"))
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out, "no job is another job")
	g, err = q.Registration(ctx, "d")
	require.NoError(t, err)
	requireJob(t, Job{}, g.Job, "no job")

	// The keeper's occurrences get the job too.
	q2 := newQueue(t, c, "recjob2")
	_, err = q2.Register(ctx, "fast", Every(200*time.Millisecond), nil, RegisterJob(j))
	require.NoError(t, err)
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = q2.KeepRecurring(kctx) }()
	defer func() { cancel(); <-done }()
	for range 3 {
		tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
		m, err := q2.Take(tctx)
		tcancel()
		require.NoError(t, err)
		requireJob(t, j, m.Job, "occurrence "+m.ID)
		require.NoError(t, m.Ack(ctx))
	}
}

// TestRetentionReusedID: once a completed item's retention ends its id is
// free; a new item under it is not touched by what is left of the old one
// in done (Purge), and a List page of completed items bounds its results'
// bytes as it does payloads.
func TestRetentionReusedID(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "reuse")
	ctx := context.Background()
	for id, keep := range map[string]time.Duration{"x": 20 * time.Millisecond, "y": time.Hour} {
		// Due long ago: both are due at the claim (an item due "now" is
		// due at the next ms of Redis TIME, which the claim may precede).
		_, err := q.Add(ctx, EnqueueItem{ID: id, At: time.Unix(1, 0), Job: Job{Retention: keep}})
		require.NoError(t, err)
	}
	ms, err := q.TakeBatch(ctx, 2)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.NoError(t, errors.Join(q.AckMany(ctx, ms)...))
	eventually(t, 20*time.Second, "x's retention ends", func() bool {
		_, err := q.Get(ctx, "x")
		return errors.Is(err, ErrNotFound)
	})
	_, err = q.EnqueueAfter(ctx, "x", []byte("new"), time.Hour)
	require.NoError(t, err, "the id is free again")
	n, err := q.Purge(ctx, StateCompleted)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "y only")
	it, err := q.Get(ctx, "x")
	require.NoError(t, err, "the new x survives the purge")
	require.Equal(t, "new", string(it.Payload))
	require.True(t, audit(t, q).OK())

	// Results count in a page's bytes: 3 items of 600 KiB results fill a
	// page of at most ListBytes (1 MiB) after 2.
	big := make([]byte, 600<<10)
	for _, id := range []string{"r1", "r2", "r3"} {
		_, err := q.Add(ctx, EnqueueItem{ID: id, At: time.Unix(1, 0), Job: Job{Retention: time.Hour}})
		require.NoError(t, err)
	}
	_, err = q.Cancel(ctx, "x")
	require.NoError(t, err)
	ms, err = q.TakeBatch(ctx, 3)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	for _, m := range ms {
		require.NoError(t, m.SetResult(big))
	}
	require.NoError(t, errors.Join(q.AckMany(ctx, ms)...))
	p, err := q.List(ctx, StateCompleted, ListOptions{Payloads: true})
	require.NoError(t, err)
	require.Equal(t, 2, len(p.Items), "the page ends after the item that reaches 1 MiB")
	require.NotEqual(t, int64(-1), p.Next)
}

// TestJobOptionsCopyHeaders: WithJob copies the headers it is given, so a
// Header after it writes into the item's own map, not the caller's.
func TestJobOptionsCopyHeaders(t *testing.T) {
	base := Job{Kind: "k", Headers: map[string]string{"a": "1"}}
	kind := JobKind[int]{Name: "k", Defaults: []JobOption{WithJob(base)}}
	it, err := kind.Item("one", 1, Header("trace", "first"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1", "trace": "first"}, it.Job.Headers)
	it, err = kind.Item("two", 2)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1"}, it.Job.Headers)
	require.Equal(t, map[string]string{"a": "1"}, base.Headers, "the caller's map is untouched")
}
