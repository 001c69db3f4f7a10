package fromasynq

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

var errNotNow = errors.New("not now")

// TestFromAsynqIsFailure: an error that asynq's IsFailure calls no failure
// is retried without a retry counted and without counting in the queue's
// failed tasks; redisq's Snooze(d) brings the job back d later (by the
// Redis clock) without an attempt counted, counted Snoozed (not Nacked),
// logged at Info by Logging, and its run not charged to its limit key's
// rate limit. RetryAfter(err, d), by contrast, is a failure: its attempt
// counts.
func TestFromAsynqIsFailure(t *testing.T) {
	r := newRig(t)
	runs := &counter{}
	retries := make(chan int, 8)

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("a"), asynq.MaxRetry(1))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("zero"), asynq.MaxRetry(0))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		if id == "a" {
			retried, _ := asynq.GetRetryCount(ctx)
			retries <- retried
		}
		if runs.add(id) <= 2 {
			return errNotNow
		}
		return nil
	}), func(c *asynq.Config) {
		c.IsFailure = func(err error) bool { return !errors.Is(err, errNotNow) }
	})
	r.asynqGone("a")
	// At its last retry, a non-failure archives the task all the same.
	if info := r.asynqState("zero", asynq.TaskStateArchived); runs.get("zero") != 1 || info.LastErr != "not now" {
		t.Errorf("asynq MaxRetry(0): archived after %d runs with %q, want 1 run", runs.get("zero"), info.LastErr)
	}
	for range 3 { // the last after two non-failures
		if n := recv(r, retries, "asynq's runs"); n != 0 {
			t.Errorf("asynq: a run after non-failures saw %d retries, want 0", n)
		}
	}
	if runs.get("a") != 3 {
		t.Errorf("asynq: %d runs, want 3", runs.get("a"))
	}
	// Only the success and the archive count.
	if qi, err := r.insp.GetQueueInfo(r.name); err != nil || qi.FailedTotal != 1 || qi.ProcessedTotal != 2 {
		t.Errorf("asynq: queue %+v, %v; want 1 failed (the archive), 2 processed", qi, err)
	}

	var logs syncBuffer
	q := r.queue("")
	if err := q.SetRateLimit(r.ctx, "api", redisq.RateLimit{N: 1, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r.addJob(q, "r", redisq.MaxAttempts(1), redisq.LimitKey("api"))
	r.addJob(q, "retry-after", redisq.MaxAttempts(1))
	claims := make(chan *redisq.Message, 8)
	r.worker(q, func(_ context.Context, m *redisq.Message) error {
		if m.ID == "retry-after" {
			return redisq.RetryAfter(errNotNow, time.Millisecond)
		}
		claims <- m
		if runs.add("r-"+m.ID) <= 2 {
			return redisq.Snooze(50 * time.Millisecond)
		}
		return nil
	}, redisq.WorkerOptions{Middleware: []redisq.Middleware{redisq.Logging(slog.New(slog.NewTextHandler(&logs, nil)))}})
	r.redisqGone(q, "r") // three runs within the hour of a limit of one a hour
	var prev *redisq.Message
	for range 3 {
		m := recv(r, claims, "redisq's runs")
		if m.Attempts != 1 {
			t.Errorf("redisq: a run after a snooze has attempt %d, want 1", m.Attempts)
		}
		if prev != nil && m.Due.Sub(prev.ClaimedAt) < 50*time.Millisecond {
			t.Errorf("redisq: snoozed for 50ms, due again %v after its claim", m.Due.Sub(prev.ClaimedAt))
		}
		prev = m
	}
	if it := r.redisqState(q, "retry-after", redisq.StateDead); it.Attempts != 1 {
		t.Errorf("redisq: RetryAfter at the last attempt: dead after %d", it.Attempts)
	}
	if st, err := q.Stats(r.ctx); err != nil || st.Snoozed != 2 || st.Nacked != 1 || st.Acked != 1 {
		t.Errorf("redisq: stats %+v, %v; want 2 snoozed, 1 nacked (the RetryAfter), 1 acked", st.StatsCounters, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, " id=r ") && strings.Contains(line, "level=WARN") {
			t.Errorf("redisq.Logging: %s", line)
		}
	}
	if !strings.Contains(logs.String(), `level=INFO msg="redisq: snoozed"`) {
		t.Errorf("redisq.Logging: no snooze logged at Info in\n%s", logs.String())
	}
	if redisq.IsFailure(redisq.Snooze(time.Second)) || !redisq.IsFailure(redisq.RetryAfter(nil, time.Second)) {
		t.Error("redisq.IsFailure: a Snooze is a failure or a RetryAfter is not")
	}
}
