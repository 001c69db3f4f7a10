package fromasynq

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

// run is what a handler saw of its ctx.
type run struct {
	id       string
	start    time.Time
	deadline time.Time
	hasDL    bool
	err      error // ctx.Err() once it ended
	cause    error // context.Cause(ctx) once it ended
}

func started(id string, ctx context.Context) run {
	dl, ok := ctx.Deadline()
	return run{id: id, start: time.Now(), deadline: dl, hasDL: ok}
}

// TestFromAsynqTimeout: asynq's Timeout(d) and redisq's Timeout(d) end the
// handler's ctx d after the run starts (redisq: with the cause
// ErrJobTimeout), and a handler that returns the ctx's error is retried.
// asynq fails the run at the timeout even if the handler goes on and then
// returns nil, and may start its retry while it still runs; redisq waits
// for the handler and settles what it returns. asynq's timeout is whole
// seconds, cut down: Timeout(1.5s) is 1 s, and Timeout(500ms) is stored as
// 0 and runs with the 30 min default.
func TestFromAsynqTimeout(t *testing.T) {
	r := newRig(t)
	seen := make(chan run, 8)
	var mu sync.Mutex
	var reported []error

	// "timeout": returns when its ctx ends. "ignore": the first run waits
	// for the test whatever its ctx, later ones return nil. "short": a
	// sub-second timeout.
	handler := func(runs *counter, release chan struct{}) func(ctx context.Context, id string) error {
		return func(ctx context.Context, id string) error {
			s := started(id, ctx)
			n := runs.add(id)
			switch {
			case id == "short":
				seen <- s
				return nil
			case id == "ignore" && n > 1:
				seen <- s
				return nil
			}
			<-ctx.Done()
			s.err, s.cause = ctx.Err(), context.Cause(ctx)
			seen <- s
			if id == "ignore" {
				<-release
				return nil
			}
			return ctx.Err()
		}
	}

	release := make(chan struct{})
	handle := handler(&counter{}, release)
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("timeout"), asynq.Timeout(time.Second), asynq.MaxRetry(0))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("ignore"), asynq.Timeout(time.Second), asynq.MaxRetry(1))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("short"), asynq.Timeout(500*time.Millisecond))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return handle(ctx, id)
	}), func(c *asynq.Config) {
		c.ErrorHandler = asynq.ErrorHandlerFunc(func(ctx context.Context, _ *asynq.Task, err error) {
			if id, _ := asynq.GetTaskID(ctx); id == "ignore" {
				mu.Lock()
				reported = append(reported, err)
				mu.Unlock()
			}
		})
	})
	got := map[string][]run{}
	for range 4 { // timeout, ignore twice, short
		s := recv(r, seen, "asynq's runs")
		got[s.id] = append(got[s.id], s)
	}
	close(release) // the first run of "ignore" returns nil: too late
	if s := got["timeout"][0]; !errors.Is(s.err, context.DeadlineExceeded) || s.deadline.Sub(s.start) > time.Second {
		t.Errorf("asynq Timeout(1s): ctx ended by %v, deadline %v after the start", s.err, s.deadline.Sub(s.start))
	}
	if info := r.asynqState("timeout", asynq.TaskStateArchived); !strings.Contains(info.LastErr, "deadline exceeded") {
		t.Errorf("asynq: the timed-out task archived with %q", info.LastErr)
	}
	if g := got["ignore"]; len(g) != 2 || g[0].err == nil || g[1].err != nil {
		t.Errorf("asynq: runs of the handler ignoring its ctx: %+v, want the retry started while the first run went on", g)
	}
	r.asynqGone("ignore")
	mu.Lock()
	if len(reported) != 1 || !errors.Is(reported[0], context.DeadlineExceeded) {
		t.Errorf("asynq: ErrorHandler got %v for the handler that returned nil late, want DeadlineExceeded", reported)
	}
	mu.Unlock()
	if s := got["short"][0]; s.deadline.Sub(s.start) < 29*time.Minute {
		t.Errorf("asynq Timeout(500ms): deadline %v after the start, want 30 min", s.deadline.Sub(s.start))
	}
	if info := r.enqueue(asynq.NewTask("job", nil), asynq.Queue(r.sub("idle")), asynq.Timeout(1500*time.Millisecond)); info.Timeout != time.Second {
		t.Errorf("asynq: Timeout(1.5s) stored as %v, want 1s", info.Timeout)
	}

	runs, releaseR := &counter{}, make(chan struct{})
	handleR := handler(runs, releaseR)
	q := r.queue("")
	r.addJob(q, "timeout", redisq.Timeout(200*time.Millisecond), redisq.MaxAttempts(1))
	r.addJob(q, "ignore", redisq.Timeout(200*time.Millisecond), redisq.MaxAttempts(2))
	r.addJob(q, "short", redisq.Timeout(500*time.Millisecond))
	r.worker(q, func(ctx context.Context, m *redisq.Message) error { return handleR(ctx, m.ID) }, redisq.WorkerOptions{})
	got = map[string][]run{}
	for range 3 { // timeout, ignore's first, short
		s := recv(r, seen, "redisq's runs")
		got[s.id] = append(got[s.id], s)
	}
	s := got["timeout"][0]
	if !errors.Is(s.err, context.DeadlineExceeded) || !errors.Is(s.cause, redisq.ErrJobTimeout) || s.deadline.Sub(s.start) > 200*time.Millisecond {
		t.Errorf("redisq Timeout(200ms): ctx ended by %v (cause %v), deadline %v after the start", s.err, s.cause, s.deadline.Sub(s.start))
	}
	if it := r.redisqState(q, "timeout", redisq.StateDead); !strings.Contains(it.DeadReason, "deadline exceeded") {
		t.Errorf("redisq: the timed-out item dead with %q", it.DeadReason)
	}
	// The first run of "ignore" has seen its ctx end and still runs: its
	// item stays leased to it, and nothing runs it again meanwhile.
	if it := r.item(q, "ignore"); it.State != redisq.StateInFlight || it.Attempts != 1 || runs.get("ignore") != 1 {
		t.Errorf("redisq: the item of a handler past its timeout: %v, attempts %d, %d runs; want in flight, 1, 1", it.State, it.Attempts, runs.get("ignore"))
	}
	close(releaseR)
	r.redisqGone(q, "ignore") // its nil acked it
	if runs.get("ignore") != 1 {
		t.Errorf("redisq: the handler ignoring its ctx ran %d times, want 1", runs.get("ignore"))
	}
	if s := got["short"][0]; !s.hasDL || s.deadline.Sub(s.start) > 500*time.Millisecond {
		t.Errorf("redisq Timeout(500ms): deadline %v after the start", s.deadline.Sub(s.start))
	}
}

// TestFromAsynqDefaultTimeout: a task without Timeout or Deadline runs
// under asynq's default timeout, 30 min; a redisq job without Timeout has
// none (its ctx has no deadline), and JobKind's Defaults give a kind one.
func TestFromAsynqDefaultTimeout(t *testing.T) {
	r := newRig(t)
	seen := make(chan run, 2)

	if info := r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("a")); info.Timeout != 30*time.Minute {
		t.Errorf("asynq: default Timeout %v, want 30m", info.Timeout)
	}
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		seen <- started("a", ctx)
		return nil
	}), nil)
	if s := recv(r, seen, "asynq's run"); !s.hasDL || s.deadline.Sub(s.start) <= 29*time.Minute || s.deadline.Sub(s.start) > 30*time.Minute {
		t.Errorf("asynq: the handler's ctx ends %v after its start, want 30 min", s.deadline.Sub(s.start))
	}

	q := r.queue("")
	plain := redisq.JobKind[struct{}]{Name: "plain"}
	bounded := redisq.JobKind[struct{}]{Name: "bounded", Defaults: []redisq.JobOption{redisq.Timeout(30 * time.Minute)}}
	if _, err := plain.EnqueueAfter(r.ctx, q, "plain", struct{}{}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := bounded.EnqueueAfter(r.ctx, q, "bounded", struct{}{}, 0); err != nil {
		t.Fatal(err)
	}
	r.worker(q, func(ctx context.Context, m *redisq.Message) error {
		seen <- started(m.ID, ctx)
		return nil
	}, redisq.WorkerOptions{})
	for range 2 {
		s := recv(r, seen, "redisq's runs")
		switch {
		case s.id == "plain" && s.hasDL:
			t.Errorf("redisq: a job without Timeout has a deadline %v after its start", s.deadline.Sub(s.start))
		case s.id == "bounded" && (!s.hasDL || s.deadline.Sub(s.start) <= 29*time.Minute || s.deadline.Sub(s.start) > 30*time.Minute):
			t.Errorf("redisq: a kind with a default Timeout(30m): deadline %v after its start", s.deadline.Sub(s.start))
		}
	}
}

// TestFromAsynqDeadline: asynq's Deadline(t) and redisq's NotAfter(t) end a
// running handler's ctx at t. After t asynq does not run the handler but
// still retries the task, each retry a failure, until its retries are
// spent, then archives it; redisq dead-letters the job unrun at its first
// claim after t, with the reason ReasonNotAfter, whatever its attempts
// left. asynq keeps t in whole seconds, cut down.
func TestFromAsynqDeadline(t *testing.T) {
	r := newRig(t)
	ended := make(chan run, 4)
	handler := func(runs *counter) func(ctx context.Context, id string) error {
		return func(ctx context.Context, id string) error {
			runs.add(id)
			s := started(id, ctx)
			<-ctx.Done()
			s.err, s.cause = ctx.Err(), context.Cause(ctx)
			ended <- s
			return ctx.Err()
		}
	}
	runs := &counter{}
	handle := handler(runs)

	// Deadlines are whole seconds in asynq: this one is 0.5 to 1.5 s away.
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("running"), asynq.MaxRetry(3),
		asynq.Deadline(time.Now().Add(1500*time.Millisecond).Truncate(time.Second)))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("late"), asynq.MaxRetry(2), asynq.Deadline(time.Now().Add(-time.Minute)))
	at := time.Now().Add(time.Hour).Truncate(time.Second).Add(900 * time.Millisecond)
	if info := r.enqueue(asynq.NewTask("job", nil), asynq.Queue(r.sub("idle")), asynq.Deadline(at)); !info.Deadline.Equal(at.Truncate(time.Second)) {
		t.Errorf("asynq: Deadline(%v) stored as %v, want the whole second before", at, info.Deadline)
	}
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return handle(ctx, id)
	}), nil)
	if s := recv(r, ended, "asynq's run"); s.id != "running" || !errors.Is(s.err, context.DeadlineExceeded) {
		t.Errorf("asynq: run %s ended by %v, want running's deadline", s.id, s.err)
	}
	for id, retries := range map[string]int{"running": 3, "late": 2} {
		info := r.asynqState(id, asynq.TaskStateArchived)
		if want := map[string]int{"running": 1, "late": 0}[id]; runs.get(id) != want || info.Retried != retries || !strings.Contains(info.LastErr, "deadline exceeded") {
			t.Errorf("asynq %s: %d runs, archived after %d retries with %q; want %d runs, %d retries", id, runs.get(id), info.Retried, info.LastErr, want, retries)
		}
	}

	runs = &counter{}
	handleR := handler(runs)
	// Past the deadline, the retries still wait asynq's retry delays: by
	// default some 20 days in all for its 25.
	var total time.Duration
	for n := range 25 {
		total += asynq.DefaultRetryDelayFunc(n, errors.New("x"), nil)
	}
	if total < 20*24*time.Hour || total > 21*24*time.Hour {
		t.Errorf("asynq: 25 default retry delays add up to %v, want some 20 days", total)
	}

	q := r.queue("")
	r.addJob(q, "running", redisq.MaxAttempts(4), redisq.NotAfter(time.Now().Add(300*time.Millisecond)))
	r.addJob(q, "late", redisq.MaxAttempts(3), redisq.NotAfter(time.Now().Add(-time.Minute)))
	r.worker(q, func(ctx context.Context, m *redisq.Message) error { return handleR(ctx, m.ID) }, redisq.WorkerOptions{})
	if s := recv(r, ended, "redisq's run"); s.id != "running" || !errors.Is(s.err, context.DeadlineExceeded) || !errors.Is(s.cause, redisq.ErrJobTimeout) {
		t.Errorf("redisq: run %s ended by %v (cause %v), want running's NotAfter", s.id, s.err, s.cause)
	}
	for id, attempts := range map[string]int{"running": 2, "late": 1} {
		it := r.redisqState(q, id, redisq.StateDead)
		if want := map[string]int{"running": 1, "late": 0}[id]; runs.get(id) != want || it.Attempts != attempts || it.DeadReason != redisq.ReasonNotAfter {
			t.Errorf("redisq %s: %d runs, dead after %d attempts with %q; want %d runs, %d attempts, ReasonNotAfter", id, runs.get(id), it.Attempts, it.DeadReason, want, attempts)
		}
	}
}
