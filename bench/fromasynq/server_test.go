package fromasynq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

type ctxKey struct{}

// TestFromAsynqServer: asynq's Server and Config are redisq's Worker and
// WorkerOptions. Concurrency defaults to the number of CPUs in asynq and
// to 10 in redisq; asynq's BaseContext is the ctx given to Run, whose
// values (not its cancellation) the handlers' contexts carry; both give the
// handlers 8 s to finish at a shutdown by default; asynq's Logger is a
// *slog.Logger (WithLogger, WorkerOptions.Logger), which gets the worker's
// own records, a dead letter among them at Warn, as asynq's gets its
// archive; asynq's Inspector.Servers is Queue.Workers.
func TestFromAsynqServer(t *testing.T) {
	r := newRig(t)
	values := make(chan any, 2)
	base := context.WithValue(context.Background(), ctxKey{}, "base")

	alog := &asynqLogger{}
	r.enqueue(asynq.NewTask("job", nil))
	r.enqueue(asynq.NewTask("bad", nil), asynq.TaskID("bad"))
	srv := r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		if task.Type() == "bad" {
			return fmt.Errorf("bad: %w", asynq.SkipRetry)
		}
		values <- ctx.Value(ctxKey{})
		return nil
	}), func(c *asynq.Config) {
		c.Concurrency = 0
		c.BaseContext = func() context.Context { return base }
		c.ShutdownTimeout = 0
		c.Logger = alog
		c.LogLevel = asynq.WarnLevel
	})
	if v := recv(r, values, "asynq's handler"); v != "base" {
		t.Errorf("asynq: the handler's ctx has %v, want BaseContext's value", v)
	}
	r.asynqState("bad", asynq.TaskStateArchived)
	r.eventually("asynq's log of the archive", func() bool { return strings.Contains(alog.String(), "WARN Retry exhausted for task id=bad") })
	var servers []*asynq.ServerInfo
	r.eventually("asynq's server listed", func() bool {
		all, err := r.insp.Servers()
		servers = servers[:0]
		for _, s := range all {
			if _, ok := s.Queues[r.name]; ok {
				servers = append(servers, s)
			}
		}
		return err == nil && len(servers) == 1
	})
	if got := servers[0].Concurrency; got != runtime.NumCPU() {
		t.Errorf("asynq: default Concurrency %d, want NumCPU %d", got, runtime.NumCPU())
	}
	// asynq exports no name for its default: read the server's own.
	shutdown := time.Duration(reflect.ValueOf(srv).Elem().FieldByName("processor").Elem().FieldByName("shutdownTimeout").Int())
	if shutdown != 8*time.Second {
		t.Errorf("asynq: default ShutdownTimeout %v, want 8s", shutdown)
	}

	var logs syncBuffer
	q := r.queue("", redisq.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if _, err := q.EnqueueAfter(r.ctx, "job", nil, 0); err != nil {
		t.Fatal(err)
	}
	r.addJob(q, "bad")
	w := redisq.NewWorker(q, func(ctx context.Context, m *redisq.Message) error {
		if m.ID == "bad" {
			return redisq.SkipRetry(errors.New("bad"))
		}
		values <- ctx.Value(ctxKey{})
		return nil
	}, redisq.WorkerOptions{})
	done := make(chan error, 1)
	go func() { done <- w.Run(base) }()
	t.Cleanup(func() {
		if err := w.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if v := recv(r, values, "redisq's handler"); v != "base" {
		t.Errorf("redisq: the handler's ctx has %v, want Run's ctx's value", v)
	}
	var workers []redisq.WorkerInfo
	r.eventually("redisq's worker listed", func() bool {
		var err error
		workers, err = q.Workers(r.ctx)
		return err == nil && len(workers) == 1
	})
	if got := workers[0].Concurrency; got != 10 || redisq.DefaultConcurrency != 10 {
		t.Errorf("redisq: default Concurrency %d, DefaultConcurrency %d, want 10", got, redisq.DefaultConcurrency)
	}
	r.redisqState(q, "bad", redisq.StateDead)
	r.eventually("redisq's log of the dead letter", func() bool {
		return strings.Contains(logs.String(), `level=WARN msg="redisq: worker: message dead-lettered" queue=`+q.Name()+` id=bad`)
	})
	if redisq.DefaultShutdownTimeout != 8*time.Second {
		t.Errorf("redisq: DefaultShutdownTimeout %v, want 8s", redisq.DefaultShutdownTimeout)
	}
}

// TestFromAsynqShutdown: asynq's Server.Shutdown is redisq's
// Worker.Shutdown (or the end of Run's ctx, bounded by
// WorkerOptions.ShutdownTimeout): both stop taking work, let running
// handlers finish and settle their jobs; a handler still running at the
// bound has its ctx cancelled and its job handed back at once, without an
// attempt counted.
func TestFromAsynqShutdown(t *testing.T) {
	r := newRig(t)
	running := make(chan string, 4)
	release := make(chan struct{})
	causes := make(chan error, 2)
	handle := func(ctx context.Context, id string) error {
		running <- id
		if id == "graceful" {
			<-release
			return nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}
	shutdown := func(stop func()) chan struct{} {
		done := make(chan struct{})
		go func() { stop(); close(done) }()
		return done
	}

	// asynq, graceful
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("graceful"))
	h := asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return handle(ctx, id)
	})
	srv := r.asynqServer(h, nil)
	recv(r, running, "asynq's graceful handler")
	done := shutdown(srv.Shutdown)
	release <- struct{}{}
	recv(r, done, "asynq's graceful Shutdown")
	if _, err := r.insp.GetTaskInfo(r.name, "graceful"); !errors.Is(err, asynq.ErrTaskNotFound) {
		t.Errorf("asynq: the task that finished during Shutdown: %v, want gone", err)
	}
	// asynq, past the bound
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("stuck"))
	srv = r.asynqServer(h, func(c *asynq.Config) { c.ShutdownTimeout = 100 * time.Millisecond })
	recv(r, running, "asynq's stuck handler")
	srv.Shutdown()
	if err := recv(r, causes, "asynq's handler's ctx"); !errors.Is(err, context.Canceled) {
		t.Errorf("asynq: the stuck handler's ctx ended with %v, want Canceled", err)
	}
	if info := r.task("stuck"); info.State != asynq.TaskStatePending || info.Retried != 0 {
		t.Errorf("asynq: the stuck task after Shutdown: %v, retried %d, want pending, 0", info.State, info.Retried)
	}

	// redisq, graceful
	q := r.queue("", redisq.WithVisibilityTimeout(time.Minute))
	rh := func(ctx context.Context, m *redisq.Message) error { return handle(ctx, m.ID) }
	if _, err := q.EnqueueAfter(r.ctx, "graceful", nil, 0); err != nil {
		t.Fatal(err)
	}
	w := r.worker(q, rh, redisq.WorkerOptions{})
	recv(r, running, "redisq's graceful handler")
	errs := make(chan error, 1)
	done = shutdown(func() { errs <- w.Shutdown(context.Background()) })
	release <- struct{}{}
	recv(r, done, "redisq's graceful Shutdown")
	if err := <-errs; err != nil {
		t.Errorf("redisq: graceful Shutdown: %v", err)
	}
	if _, err := q.Get(r.ctx, "graceful"); !errors.Is(err, redisq.ErrNotFound) {
		t.Errorf("redisq: the item that finished during Shutdown: %v, want gone", err)
	}
	// redisq, past the bound
	if _, err := q.EnqueueAfter(r.ctx, "stuck", nil, 0); err != nil {
		t.Fatal(err)
	}
	w = r.worker(q, rh, redisq.WorkerOptions{})
	recv(r, running, "redisq's stuck handler")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := w.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("redisq: Shutdown past its bound: %v, want DeadlineExceeded", err)
	}
	if err := recv(r, causes, "redisq's handler's ctx"); !errors.Is(err, redisq.ErrWorkerStopped) {
		t.Errorf("redisq: the stuck handler's ctx ended with %v, want ErrWorkerStopped", err)
	}
	if it := r.item(q, "stuck"); it.State != redisq.StateScheduled || it.Attempts != 0 {
		t.Errorf("redisq: the stuck item after Shutdown: %v, attempts %d, want scheduled, 0", it.State, it.Attempts)
	}
}

// TestFromAsynqServeMux: asynq's ServeMux is redisq's Mux. asynq routes a
// task to the handler of the longest pattern its type begins with
// ("email" handles "email:welcome"); redisq routes by the whole kind. A
// job with no handler is retried and, at the last attempt, archived (dead)
// in both.
func TestFromAsynqServeMux(t *testing.T) {
	r := newRig(t)
	handled := make(chan string, 4)

	mux := asynq.NewServeMux()
	mux.HandleFunc("email", func(_ context.Context, task *asynq.Task) error {
		handled <- task.Type()
		return nil
	})
	r.enqueue(asynq.NewTask("email:welcome", nil), asynq.TaskID("welcome"))
	r.enqueue(asynq.NewTask("sms", nil), asynq.TaskID("sms"), asynq.MaxRetry(1))
	r.asynqServer(mux, nil)
	if got := recv(r, handled, "asynq's email handler"); got != "email:welcome" {
		t.Errorf("asynq: the email handler got %q", got)
	}
	if info := r.asynqState("sms", asynq.TaskStateArchived); info.Retried != 1 || !strings.Contains(info.LastErr, "handler not found") {
		t.Errorf("asynq: a task with no handler archived after %d retries, error %q", info.Retried, info.LastErr)
	}

	q := r.queue("")
	rmux := redisq.NewMux()
	rmux.HandleFunc("email", func(_ context.Context, m *redisq.Message) error {
		handled <- m.Kind
		return nil
	})
	for id, kind := range map[string]string{"welcome": "email:welcome", "email": "email"} {
		if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: id, Job: redisq.Job{Kind: kind, MaxAttempts: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	r.worker(q, rmux.Serve, redisq.WorkerOptions{})
	if got := recv(r, handled, "redisq's email handler"); got != "email" {
		t.Errorf("redisq: the email handler got %q", got)
	}
	it := r.redisqState(q, "welcome", redisq.StateDead)
	if it.Attempts != 2 || !strings.Contains(it.DeadReason, `no handler for kind "email:welcome"`) {
		t.Errorf("redisq: an item with no handler dead after %d attempts, reason %q", it.Attempts, it.DeadReason)
	}
	if len(handled) != 0 {
		t.Errorf("redisq: the email handler got %q too", <-handled)
	}
}

// failure is what an asynq ErrorHandler or a redisq middleware saw.
type failure struct {
	kind  string
	err   string
	panic bool
	retry int // retries before this run
}

// TestFromAsynqErrorHandler: asynq's ErrorHandler (and a ServeMux.Use
// middleware) is a redisq Middleware: it sees each run's job and error, a
// panic as asynq's IsPanicError, redisq's *PanicError; redisq.Logging logs
// each failure at Warn.
func TestFromAsynqErrorHandler(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	var entered []string
	var failed []failure
	sawAll := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(failed) >= n }
	}
	runs := &counter{}
	work := func(kind, id string) error {
		if runs.add(id) > 1 {
			return nil
		}
		if kind == "panic" {
			panic("oops")
		}
		return errors.New("boom")
	}
	want := []failure{{"boom", "boom", false, 0}, {"panic", "oops", true, 0}}
	check := func(who string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(failed) != 2 || len(entered) != 4 {
			t.Errorf("%s: entered %v, failures %+v, want 4 runs and 2 failures", who, entered, failed)
			return
		}
		for _, w := range want {
			found := false
			for _, f := range failed {
				found = found || (f.kind == w.kind && strings.Contains(f.err, w.err) && f.panic == w.panic && f.retry == w.retry)
			}
			if !found {
				t.Errorf("%s: no failure like %+v in %+v", who, w, failed)
			}
		}
		entered, failed = nil, nil
	}

	mux := asynq.NewServeMux()
	mux.Use(func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			mu.Lock()
			entered = append(entered, task.Type())
			mu.Unlock()
			return next.ProcessTask(ctx, task)
		})
	})
	for _, kind := range []string{"boom", "panic"} {
		mux.HandleFunc(kind, func(ctx context.Context, task *asynq.Task) error {
			id, _ := asynq.GetTaskID(ctx)
			return work(task.Type(), id)
		})
		r.enqueue(asynq.NewTask(kind, nil), asynq.TaskID("a-"+kind), asynq.MaxRetry(1))
	}
	r.asynqServer(mux, func(c *asynq.Config) {
		c.ErrorHandler = asynq.ErrorHandlerFunc(func(ctx context.Context, task *asynq.Task, err error) {
			retried, _ := asynq.GetRetryCount(ctx)
			mu.Lock()
			failed = append(failed, failure{task.Type(), err.Error(), asynq.IsPanicError(err), retried})
			mu.Unlock()
		})
	})
	r.eventually("asynq's failures", sawAll(2))
	r.asynqGone("a-boom")
	r.asynqGone("a-panic")
	check("asynq")

	var logs syncBuffer
	q := r.queue("")
	for _, kind := range []string{"boom", "panic"} {
		if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: "r-" + kind, Job: redisq.Job{Kind: kind, MaxAttempts: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	reportErrors := func(next redisq.Handler) redisq.Handler {
		return func(ctx context.Context, m *redisq.Message) error {
			mu.Lock()
			entered = append(entered, m.Kind)
			mu.Unlock()
			err := next(ctx, m)
			if err != nil {
				var pe *redisq.PanicError
				mu.Lock()
				failed = append(failed, failure{m.Kind, err.Error(), errors.As(err, &pe), m.Attempts - 1})
				mu.Unlock()
			}
			return err
		}
	}
	r.worker(q, func(_ context.Context, m *redisq.Message) error { return work(m.Kind, m.ID) }, redisq.WorkerOptions{
		Middleware: []redisq.Middleware{reportErrors, redisq.Logging(slog.New(slog.NewTextHandler(&logs, nil)))},
	})
	r.eventually("redisq's failures", sawAll(2))
	r.redisqGone(q, "r-boom")
	r.redisqGone(q, "r-panic")
	check("redisq")
	for _, line := range []string{`level=WARN msg="redisq: handler failed"` + ` queue=` + q.Name() + ` id=r-boom`, `outcome=panic`} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("redisq.Logging: no %q in\n%s", line, logs.String())
		}
	}
}

// asynqLogger is an asynq.Logger writing "LEVEL message" lines.
type asynqLogger struct{ syncBuffer }

func (l *asynqLogger) log(level string, args []any) {
	fmt.Fprintln(&l.syncBuffer, level, fmt.Sprint(args...))
}
func (l *asynqLogger) Debug(args ...any) { l.log("DEBUG", args) }
func (l *asynqLogger) Info(args ...any)  { l.log("INFO", args) }
func (l *asynqLogger) Warn(args ...any)  { l.log("WARN", args) }
func (l *asynqLogger) Error(args ...any) { l.log("ERROR", args) }
func (l *asynqLogger) Fatal(args ...any) { l.log("FATAL", args) }

// syncBuffer is a bytes.Buffer for several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestFromAsynqContext: asynq's GetTaskID, GetRetryCount, GetMaxRetry and
// GetQueueName read the handler's ctx; redisq's MessageFromContext(ctx)
// gives the Message: m.ID, m.Attempts - 1, m.AttemptLimit() - 1 and
// m.QueueName(). m.MaxAttempts is the job's own option: 0 when the job
// has none and the queue's applies, which AttemptLimit gives.
func TestFromAsynqContext(t *testing.T) {
	r := newRig(t)
	type info struct {
		id, queue          string
		retried, maxRetry  int
		maxAttemptsOfQueue bool
	}
	got := make(chan info, 4)
	runs := &counter{}

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("ctx-1"), asynq.MaxRetry(3))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		if runs.add(id) == 1 {
			return errors.New("once")
		}
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		queue, _ := asynq.GetQueueName(ctx)
		got <- info{id: id, queue: queue, retried: retried, maxRetry: maxRetry}
		return nil
	}), nil)
	want := info{id: "ctx-1", queue: r.name, retried: 1, maxRetry: 3}
	if g := recv(r, got, "asynq's second run"); g != want {
		t.Errorf("asynq: %+v, want %+v", g, want)
	}

	q := r.queue("", redisq.WithMaxAttempts(7))
	for _, id := range []string{"ctx-1", "ctx-2"} {
		j := redisq.Job{Kind: "job"}
		if id == "ctx-1" {
			j.MaxAttempts = 4
		}
		if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: id, Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	r.worker(q, func(ctx context.Context, _ *redisq.Message) error {
		m, ok := redisq.MessageFromContext(ctx)
		if !ok {
			return redisq.SkipRetry(errors.New("no message in the ctx"))
		}
		if runs.add("r-"+m.ID) == 1 {
			return errors.New("once")
		}
		got <- info{id: m.ID, queue: m.QueueName(), retried: m.Attempts - 1, maxRetry: m.AttemptLimit() - 1, maxAttemptsOfQueue: m.MaxAttempts == 0}
		return nil
	}, redisq.WorkerOptions{})
	for range 2 {
		g := recv(r, got, "redisq's second runs")
		want := info{id: "ctx-1", queue: r.name, retried: 1, maxRetry: 3}
		if g.id == "ctx-2" {
			want = info{id: "ctx-2", queue: r.name, retried: 1, maxRetry: 6, maxAttemptsOfQueue: true}
		}
		if g != want {
			t.Errorf("redisq: %+v, want %+v", g, want)
		}
	}
}
