package fromasynq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

// failing returns an asynq handler that counts its runs by task id in runs
// and fails each.
func failing(runs *counter) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		runs.add(id)
		return errors.New("fail")
	})
}

// failingR is failing for redisq.
func failingR(runs *counter) redisq.Handler {
	return func(_ context.Context, m *redisq.Message) error {
		runs.add(m.ID)
		return errors.New("fail")
	}
}

// addJob adds the item id to q, due now, with the job options opts.
func (r *rig) addJob(q *redisq.Queue, id string, opts ...redisq.JobOption) {
	r.t.Helper()
	var j redisq.Job
	for _, o := range append([]redisq.JobOption{redisq.Kind("job")}, opts...) {
		o(&j)
	}
	if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: id, Job: j}); err != nil {
		r.t.Fatalf("redisq Add(%s): %v", id, err)
	}
}

// TestFromAsynqMaxRetry: asynq's MaxRetry(n) counts retries, redisq's
// MaxAttempts(n+1) counts runs: both run a failing job n+1 times, then
// archive it (dead). A negative MaxRetry is 0 in asynq; MaxAttempts(n)
// with n negative, NoAttemptLimit, is no limit in redisq.
func TestFromAsynqMaxRetry(t *testing.T) {
	r := newRig(t)
	runs := &counter{}

	for _, n := range []int{0, 2, -1} {
		r.enqueue(asynq.NewTask("job", nil), asynq.TaskID(fmt.Sprint("a", n)), asynq.MaxRetry(n))
	}
	r.asynqServer(failing(runs), nil)
	for _, n := range []int{0, 2, -1} {
		id := fmt.Sprint("a", n)
		r.asynqState(id, asynq.TaskStateArchived)
		if want := max(n, 0) + 1; runs.get(id) != want {
			t.Errorf("asynq MaxRetry(%d): %d runs, want %d", n, runs.get(id), want)
		}
	}

	q := r.queue("")
	for _, n := range []int{0, 2} {
		r.addJob(q, fmt.Sprint("r", n), redisq.MaxAttempts(n+1))
	}
	r.addJob(q, "unlimited", redisq.MaxAttempts(redisq.NoAttemptLimit))
	r.worker(q, func(ctx context.Context, m *redisq.Message) error {
		if runs.add(m.ID) == 15 && m.ID == "unlimited" {
			return nil
		}
		return errors.New("fail")
	}, redisq.WorkerOptions{})
	for _, n := range []int{0, 2} {
		id := fmt.Sprint("r", n)
		it := r.redisqState(q, id, redisq.StateDead)
		if runs.get(id) != n+1 || it.Attempts != n+1 || it.DeadReason != "max attempts: fail" {
			t.Errorf("redisq MaxAttempts(%d): %d runs, dead after %d attempts (%q), want %d", n+1, runs.get(id), it.Attempts, it.DeadReason, n+1)
		}
	}
	r.redisqGone(q, "unlimited")
	if runs.get("unlimited") != 15 {
		t.Errorf("redisq MaxAttempts(NoAttemptLimit): %d runs, want 15 (it succeeded at the 15th)", runs.get("unlimited"))
	}
}

// TestFromAsynqDefaultAttempts: asynq retries a failing task 25 times (26
// runs) by default; redisq runs a failing job DefaultMaxAttempts times, 10,
// before it is dead. Zero is the default in both of redisq's options:
// WithMaxAttempts(0) is 10, a job's MaxAttempts(0) is its queue's.
func TestFromAsynqDefaultAttempts(t *testing.T) {
	r := newRig(t)
	runs := &counter{}

	if info := r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("a")); info.MaxRetry != 25 {
		t.Errorf("asynq: default MaxRetry %d, want 25", info.MaxRetry)
	}
	r.asynqServer(failing(runs), nil)
	if info := r.asynqState("a", asynq.TaskStateArchived); info.Retried != 25 || runs.get("a") != 26 {
		t.Errorf("asynq: archived after %d retries, %d runs; want 25, 26", info.Retried, runs.get("a"))
	}

	if redisq.DefaultMaxAttempts != 10 {
		t.Errorf("redisq: DefaultMaxAttempts %d, want 10", redisq.DefaultMaxAttempts)
	}
	q := r.queue("")
	r.addJob(q, "r")
	q0 := r.queue(r.sub("zero"), redisq.WithMaxAttempts(0))
	r.addJob(q0, "r0", redisq.MaxAttempts(0))
	q3 := r.queue(r.sub("three"), redisq.WithMaxAttempts(3))
	r.addJob(q3, "r3", redisq.MaxAttempts(0))
	for _, q := range []*redisq.Queue{q, q0, q3} {
		r.worker(q, failingR(runs), redisq.WorkerOptions{})
	}
	for id, want := range map[string]int{"r": 10, "r0": 10, "r3": 3} {
		qq := map[string]*redisq.Queue{"r": q, "r0": q0, "r3": q3}[id]
		if it := r.redisqState(qq, id, redisq.StateDead); it.Attempts != want || runs.get(id) != want {
			t.Errorf("redisq %s: dead after %d attempts, %d runs; want %d", id, it.Attempts, runs.get(id), want)
		}
	}
}

// TestFromAsynqSkipRetry: asynq's SkipRetry (wrapped: fmt.Errorf("...:
// %w", asynq.SkipRetry)) is redisq's SkipRetry(err): the job is archived
// (dead) after one run, with the error's text.
func TestFromAsynqSkipRetry(t *testing.T) {
	r := newRig(t)
	runs := &counter{}

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("a"))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		runs.add(id)
		return fmt.Errorf("bad order: %w", asynq.SkipRetry)
	}), nil)
	if info := r.asynqState("a", asynq.TaskStateArchived); runs.get("a") != 1 || !strings.HasPrefix(info.LastErr, "bad order") {
		t.Errorf("asynq: archived after %d runs with %q", runs.get("a"), info.LastErr)
	}

	q := r.queue("")
	r.addJob(q, "r")
	r.worker(q, func(_ context.Context, m *redisq.Message) error {
		runs.add(m.ID)
		return redisq.SkipRetry(errors.New("bad order"))
	}, redisq.WorkerOptions{})
	if it := r.redisqState(q, "r", redisq.StateDead); runs.get("r") != 1 || it.DeadReason != "bad order" {
		t.Errorf("redisq: dead after %d runs with %q", runs.get("r"), it.DeadReason)
	}
}

// TestFromAsynqRevokeTask: asynq's RevokeTask deletes the task after its
// run, neither retried nor archived, even with a Retention, and counts it
// processed, not failed. In redisq a handler returning nil does the same
// for a job without a Retention (acked: deleted, counted acked); a job with
// one is kept, completed. q.Cancel(ctx, m.ID) in the handler deletes it at
// its settle whatever its Retention and whatever the handler returns
// (counted acked after a nil, cancelled after an error).
func TestFromAsynqRevokeTask(t *testing.T) {
	r := newRig(t)
	runs := &counter{}

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("revoke"))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("revoke-kept"), asynq.Retention(time.Hour))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		runs.add(id)
		return asynq.RevokeTask
	}), nil)
	for _, id := range []string{"revoke", "revoke-kept"} {
		r.asynqGone(id)
		if runs.get(id) != 1 {
			t.Errorf("asynq %s: %d runs, want 1", id, runs.get(id))
		}
	}
	if qi, err := r.insp.GetQueueInfo(r.name); err != nil || qi.Archived != 0 || qi.Completed != 0 || qi.ProcessedTotal != 2 || qi.FailedTotal != 0 {
		t.Errorf("asynq: queue after revoking %+v, %v; want nothing archived or completed, 2 processed, none failed", qi, err)
	}

	q := r.queue("")
	r.addJob(q, "nil")
	r.addJob(q, "nil-kept", redisq.Retention(time.Hour))
	r.addJob(q, "cancel-kept", redisq.Retention(time.Hour))
	r.addJob(q, "cancel-err")
	r.worker(q, func(ctx context.Context, m *redisq.Message) error {
		runs.add(m.ID)
		if !strings.HasPrefix(m.ID, "cancel") {
			return nil
		}
		if out, err := q.Cancel(ctx, m.ID); err != nil || out != redisq.CancelMarked {
			return redisq.SkipRetry(fmt.Errorf("cancel: %v, %v", out, err))
		}
		if m.ID == "cancel-err" {
			return errors.New("revoked")
		}
		return nil
	}, redisq.WorkerOptions{})
	for _, id := range []string{"nil", "cancel-kept", "cancel-err"} {
		r.redisqGone(q, id)
	}
	r.redisqState(q, "nil-kept", redisq.StateCompleted)
	for _, id := range []string{"nil", "nil-kept", "cancel-kept", "cancel-err"} {
		if runs.get(id) != 1 {
			t.Errorf("redisq %s: %d runs, want 1", id, runs.get(id))
		}
	}
	// The acks count as acked (cancel-kept's too: its ack deleted it), the
	// nack of the cancelled item as cancelled.
	if st, err := q.Stats(r.ctx); err != nil || st.Dead != 0 || st.Scheduled != 0 || st.Completed != 1 || st.Acked != 3 || st.Cancelled != 1 {
		t.Errorf("redisq: stats %+v, %v; want none dead or scheduled, 1 completed, 3 acked, 1 cancelled", st, err)
	}
}

// TestFromAsynqRetryDelayFunc: asynq's RetryDelayFunc is one function per
// server: the server that sees the failure sets the delay, whatever the
// task. redisq's Backoff(base, max) is stored with the job, so whichever
// process runs it applies it; WithBackoff is the queue's default, per
// process; RetryAfter(err, d) sets one failure's delay (the attempt
// counts). Defaults: asynq waits n^4 + 15 + rand(30)·(n+1) s after the
// n-th retry (15 to 44 s after the first failure), redisq 1 s doubling up
// to 5 min.
func TestFromAsynqRetryDelayFunc(t *testing.T) {
	r := newRig(t)
	near := func(got, want, slack time.Duration) bool { return got >= want && got <= want+slack }

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("a"))
	r.asynqServer(failing(&counter{}), func(c *asynq.Config) {
		c.RetryDelayFunc = func(int, error, *asynq.Task) time.Duration { return time.Hour }
	})
	// asynq keeps times in whole seconds: allow one each way.
	if info := r.asynqState("a", asynq.TaskStateRetry); !near(info.NextProcessAt.Sub(info.LastFailedAt), time.Hour-time.Second, 2*time.Second) {
		t.Errorf("asynq: retry at %v after the failure, want the server's 1h", info.NextProcessAt.Sub(info.LastFailedAt))
	}
	dflt := r.sub("default")
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("d"), asynq.Queue(dflt))
	r.asynqServer(failing(&counter{}), func(c *asynq.Config) {
		c.Queues = map[string]int{dflt: 1}
		c.RetryDelayFunc = nil
	})
	var info *asynq.TaskInfo
	r.eventually("asynq's default retry", func() bool {
		var err error
		info, err = r.insp.GetTaskInfo(dflt, "d")
		return err == nil && info.State == asynq.TaskStateRetry
	})
	if d := info.NextProcessAt.Sub(info.LastFailedAt); !near(d, 14*time.Second, 32*time.Second) {
		t.Errorf("asynq: default retry %v after the first failure, want 15 to 44 s", d)
	}
	for n := range 25 {
		for range 20 {
			base := time.Duration(n*n*n*n+15) * time.Second
			if d := asynq.DefaultRetryDelayFunc(n, errors.New("x"), nil); !near(d, base, time.Duration(29*(n+1))*time.Second) {
				t.Fatalf("asynq: default delay after retry %d: %v, want n^4 + 15 + rand(30)(n+1) s", n, d)
			}
		}
	}

	// Two processes of one queue: the one enqueuing says 1 ms, the one
	// running the worker 1 h.
	producer := r.queue("")
	consumer := r.queue("", redisq.WithBackoff(time.Hour, time.Hour))
	r.addJob(producer, "own", redisq.Backoff(time.Millisecond, time.Millisecond))
	r.addJob(producer, "process")
	r.addJob(producer, "after")
	r.addJob(producer, "after-last", redisq.MaxAttempts(1))
	runs := &counter{}
	claimed := make(map[string]time.Time)
	claims := make(chan *redisq.Message, 8)
	r.worker(consumer, func(_ context.Context, m *redisq.Message) error {
		claims <- m
		if runs.add(m.ID) > 1 {
			return nil
		}
		if strings.HasPrefix(m.ID, "after") {
			return redisq.RetryAfter(errors.New("later"), 2*time.Hour)
		}
		return errors.New("fail")
	}, redisq.WorkerOptions{})
	for range 5 {
		m := recv(r, claims, "redisq's runs")
		if _, ok := claimed[m.ID]; !ok {
			claimed[m.ID] = m.ClaimedAt
		}
	}
	r.redisqGone(consumer, "own")
	for id, want := range map[string]time.Duration{"process": time.Hour, "after": 2 * time.Hour} {
		it := r.redisqState(consumer, id, redisq.StateScheduled)
		if d := it.Due.Sub(claimed[id]); it.Attempts != 1 || !near(d, want, 10*time.Second) {
			t.Errorf("redisq %s: scheduled %v after its run, attempts %d; want %v, 1", id, d, it.Attempts, want)
		}
	}
	if it := r.redisqState(consumer, "after-last", redisq.StateDead); it.Attempts != 1 || it.DeadReason != "max attempts: later" {
		t.Errorf("redisq: RetryAfter at the last attempt: dead after %d, %q", it.Attempts, it.DeadReason)
	}

	q, err := redisq.New(r.ctx, r.rc, r.sub("default"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	r.addJob(q, "d")
	r.worker(q, func(_ context.Context, m *redisq.Message) error {
		claims <- m
		if runs.add("default") > 1 {
			return nil
		}
		return errors.New("fail")
	}, redisq.WorkerOptions{})
	first, second := recv(r, claims, "redisq's first run"), recv(r, claims, "redisq's second run")
	if d := second.Due.Sub(first.ClaimedAt); !near(d, time.Second, 10*time.Second) {
		t.Errorf("redisq: default retry %v after the first run, want 1 s", d)
	}
}
