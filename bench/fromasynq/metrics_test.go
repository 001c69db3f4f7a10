package fromasynq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// TestFromAsynqMetrics: asynq's x/metrics exports Inspector.GetQueueInfo;
// dqprom exports Queue.Stats. One job that succeeds, one that fails once
// then succeeds, one that is dead-lettered at once: asynq counts 4 runs
// processed (asynq_tasks_processed_total), 2 failed
// (asynq_tasks_failed_total), 1 archived; redisq counts 4 deliveries
// (redisq_delivered_total), 2 acked (redisq_acked_total), 2 nacked
// (redisq_nacked_total), 1 dead-lettered (redisq_dead_lettered_total), 1
// dead (redisq_items{state="dead"}). asynq's queue size, tasks by state,
// latency (of the oldest pending task) and pause are redisq's items by
// state (redisq_items, redisq_due_items), the oldest overdue job's wait
// (redisq_oldest_overdue_seconds) and pause (redisq_queue_paused).
func TestFromAsynqMetrics(t *testing.T) {
	r := newRig(t)
	handler := func(runs *counter) func(id string) error {
		return func(id string) error {
			n := runs.add(id)
			switch {
			case id == "fail":
				return errors.New("fail")
			case id == "retry" && n == 1:
				return errors.New("once")
			}
			return nil
		}
	}

	for id, retries := range map[string]int{"ok": 0, "retry": 1, "fail": 0} {
		r.enqueue(asynq.NewTask("job", nil), asynq.TaskID(id), asynq.MaxRetry(retries))
	}
	handle := handler(&counter{})
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return handle(id)
	}), nil)
	r.asynqGone("ok")
	r.asynqGone("retry")
	r.asynqState("fail", asynq.TaskStateArchived)
	if qi, err := r.insp.GetQueueInfo(r.name); err != nil || qi.ProcessedTotal != 4 || qi.FailedTotal != 2 || qi.Archived != 1 || qi.Size != 1 {
		t.Errorf("asynq: %+v, %v; want 4 processed, 2 failed, 1 archived", qi, err)
	}

	handleR := handler(&counter{})
	q := r.queue("")
	r.addJob(q, "ok")
	r.addJob(q, "retry", redisq.MaxAttempts(2))
	r.addJob(q, "fail", redisq.MaxAttempts(1))
	r.worker(q, func(_ context.Context, m *redisq.Message) error { return handleR(m.ID) }, redisq.WorkerOptions{})
	r.redisqGone(q, "ok")
	r.redisqGone(q, "retry")
	r.redisqState(q, "fail", redisq.StateDead)
	st, err := q.Stats(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (redisq.StatsCounters{Enqueued: 3, Delivered: 4, Acked: 2, Nacked: 2, DeadLettered: 1}); st.StatsCounters != want || st.Dead != 1 {
		t.Errorf("redisq: %+v, %d dead; want %+v, 1 dead", st.StatsCounters, st.Dead, want)
	}

	// The gauges, on a paused queue with a job due a while ago and one
	// due in an hour: asynq's size, tasks by state, latency and pause.
	idle := r.sub("idle")
	r.enqueue(asynq.NewTask("job", nil), asynq.Queue(idle))
	r.enqueue(asynq.NewTask("job", nil), asynq.Queue(idle), asynq.ProcessIn(time.Hour))
	if err := r.insp.PauseQueue(idle); err != nil {
		t.Fatal(err)
	}
	r.eventually("asynq's latency", func() bool {
		qi, err := r.insp.GetQueueInfo(idle)
		return err == nil && qi.Latency >= time.Second
	})
	if qi, err := r.insp.GetQueueInfo(idle); err != nil || qi.Size != 2 || qi.Pending != 1 || qi.Scheduled != 1 || !qi.Paused {
		t.Errorf("asynq: %+v, %v; want size 2, 1 pending, 1 scheduled, paused", qi, err)
	}
	qi := r.queue(idle)
	if err := qi.Enqueue(r.ctx, "due", nil, time.Now().Add(-2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := qi.EnqueueAfter(r.ctx, "later", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := qi.Pause(r.ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := qi.Stats(r.ctx); err != nil || st.Scheduled != 2 || st.DueBacklog != 1 || st.OldestOverdue < time.Second || !st.Paused {
		t.Errorf("redisq: %+v, %v; want 2 scheduled, 1 due for a second or more, paused", st, err)
	}
}

// TestFromAsynqRateLimit: asynq has no rate limit (its wiki's pattern is a
// limiter in each process, an IsFailure that excuses its error and a
// RetryDelayFunc that waits for it). redisq's SetRateLimit(ctx, key,
// RateLimit{N, Per}) limits the starts of the jobs of a LimitKey across
// every process, by the Redis clock: no Per holds more than N claims;
// SetQueueRateLimit limits the whole queue's, whatever their keys;
// SetRateLimit(ctx, "", l) limits only the jobs without a key.
func TestFromAsynqRateLimit(t *testing.T) {
	r := newRig(t)
	const n, per = 2, 500 * time.Millisecond
	rc2 := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rc2.Close() })
	q1 := r.queue("")
	q2, err := redisq.New(r.ctx, rc2, r.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q2.Close() })
	if err := q1.SetRateLimit(r.ctx, "smtp", redisq.RateLimit{N: n, Per: per}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		r.addJob(q1, fmt.Sprint("mail-", i), redisq.LimitKey("smtp"))
	}
	claims := make(chan time.Time, 8)
	for _, q := range []*redisq.Queue{q1, q2} {
		r.worker(q, func(_ context.Context, m *redisq.Message) error {
			claims <- m.ClaimedAt
			return nil
		}, redisq.WorkerOptions{})
	}
	spaced := func(what string) {
		t.Helper()
		var at []time.Time
		for range 6 {
			at = append(at, recv(r, claims, what))
		}
		slices.SortFunc(at, time.Time.Compare)
		for i := 0; i+n < len(at); i++ {
			if d := at[i+n].Sub(at[i]); d < per {
				t.Errorf("redisq %s: claims %d and %d are %v apart: %d in less than %v", what, i, i+n, d, n+1, per)
			}
		}
	}
	spaced("key's claims")

	whole := r.queue(r.sub("whole"))
	if err := whole.SetQueueRateLimit(r.ctx, redisq.RateLimit{N: n, Per: per}); err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"a", "a", "b", "b", "", ""} {
		r.addJob(whole, fmt.Sprint("job-", i), redisq.LimitKey(key))
	}
	r.worker(whole, func(_ context.Context, m *redisq.Message) error {
		claims <- m.ClaimedAt
		return nil
	}, redisq.WorkerOptions{})
	spaced("queue's claims")

	none := r.queue(r.sub("none"))
	if err := none.SetRateLimit(r.ctx, "", redisq.RateLimit{N: 1, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"", "", "a", "a"} {
		r.addJob(none, fmt.Sprint("job-", i), redisq.LimitKey(key))
	}
	r.worker(none, func(context.Context, *redisq.Message) error { return nil }, redisq.WorkerOptions{})
	for _, id := range []string{"job-2", "job-3"} {
		r.redisqGone(none, id) // keyed: not limited
	}
	// Of the jobs without a key, one runs and the other waits for its slot,
	// an hour away.
	r.eventually("one job without a key run, the other waiting", func() bool {
		gone, waiting := 0, 0
		for _, id := range []string{"job-0", "job-1"} {
			it, err := none.Get(r.ctx, id)
			switch {
			case errors.Is(err, redisq.ErrNotFound):
				gone++
			case err == nil && it.State == redisq.StateScheduled && it.RateSlot.Sub(it.Due) > 59*time.Minute:
				waiting++
			}
		}
		return gone == 1 && waiting == 1
	})
}
