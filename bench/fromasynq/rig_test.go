package fromasynq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// redisAddr is the address of the redis-server that TestMain starts for
// every test of the package: each test has queues of its own on it.
var redisAddr string

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the fromasynq tests need redis-server on PATH: apt-get install -y redis-server")
		os.Exit(1)
	}
	srv, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: starting redis-server:", err)
		os.Exit(1)
	}
	redisAddr = srv.Addr
	code := m.Run()
	if code == 0 {
		// Every asynq server, scheduler and redisq worker a test starts
		// is stopped by its cleanup, and each of them waits for its own
		// goroutines, so none may be left.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: goroutines left after the tests:", err)
			code = 1
		}
	}
	srv.Close()
	os.Exit(code)
}

// wait is how long a test waits for an event before it fails: long, so
// that a busy machine does not fail a test that would pass; a test that
// passes waits for the event, not for this.
const wait = 30 * time.Second

// rig is one test's asynq and redisq on the shared server, under names of
// its own.
type rig struct {
	t    *testing.T
	ctx  context.Context
	rc   *redis.Client
	name string // the test's queue name (asynq and redisq alike), unique in the process
	ac   *asynq.Client
	insp *asynq.Inspector
}

var names atomic.Int64

// newRig makes the test parallel and returns its rig.
func newRig(t *testing.T) *rig {
	t.Parallel()
	rc := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 64})
	t.Cleanup(func() { _ = rc.Close() })
	name := strings.ToLower(strings.TrimPrefix(t.Name(), "TestFromAsynq"))
	name = strings.NewReplacer("/", "-", " ", "-").Replace(name)
	r := &rig{
		t:    t,
		ctx:  t.Context(),
		rc:   rc,
		name: fmt.Sprintf("%s-%d", name, names.Add(1)),
		ac:   asynq.NewClientFromRedisClient(rc),
		insp: asynq.NewInspectorFromRedisClient(rc),
	}
	return r
}

// sub returns a queue name of the test's own, derived from its name.
func (r *rig) sub(s string) string { return r.name + "-" + s }

// asynqConfig is the server configuration of the tests: quick to notice
// work (asynq polls its queues: TaskCheckInterval, DelayedTaskCheckInterval),
// retries after 1 ms, silent. set changes it before the server is made.
func (r *rig) asynqConfig(set func(*asynq.Config)) asynq.Config {
	cfg := asynq.Config{
		Concurrency:              4,
		Queues:                   map[string]int{r.name: 1},
		TaskCheckInterval:        10 * time.Millisecond,
		DelayedTaskCheckInterval: 10 * time.Millisecond,
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return time.Millisecond },
		LogLevel:                 asynq.FatalLevel,
		ShutdownTimeout:          10 * time.Second,
	}
	if set != nil {
		set(&cfg)
	}
	return cfg
}

// asynqServer starts an asynq server running h with the tests'
// configuration changed by set (nil: none), and shuts it down when the
// test ends.
func (r *rig) asynqServer(h asynq.Handler, set func(*asynq.Config)) *asynq.Server {
	r.t.Helper()
	srv := asynq.NewServerFromRedisClient(r.rc, r.asynqConfig(set))
	if err := srv.Start(h); err != nil {
		r.t.Fatalf("asynq server: %v", err)
	}
	r.t.Cleanup(srv.Shutdown)
	return srv
}

// enqueue enqueues task with asynq in the test's queue (unless opts name
// another).
func (r *rig) enqueue(task *asynq.Task, opts ...asynq.Option) *asynq.TaskInfo {
	r.t.Helper()
	info, err := r.ac.EnqueueContext(r.ctx, task, append([]asynq.Option{asynq.Queue(r.name)}, opts...)...)
	if err != nil {
		r.t.Fatalf("asynq enqueue: %v", err)
	}
	return info
}

// task returns the asynq task id of the test's queue, failing the test
// unless it exists.
func (r *rig) task(id string) *asynq.TaskInfo {
	r.t.Helper()
	info, err := r.insp.GetTaskInfo(r.name, id)
	if err != nil {
		r.t.Fatalf("asynq GetTaskInfo(%s): %v", id, err)
	}
	return info
}

// asynqState waits until asynq's task id is in state.
func (r *rig) asynqState(id string, state asynq.TaskState) *asynq.TaskInfo {
	r.t.Helper()
	var info *asynq.TaskInfo
	r.eventually(fmt.Sprintf("asynq task %s %v", id, state), func() bool {
		var err error
		info, err = r.insp.GetTaskInfo(r.name, id)
		return err == nil && info.State == state
	})
	return info
}

// asynqGone waits until asynq's task id no longer exists.
func (r *rig) asynqGone(id string) {
	r.t.Helper()
	r.eventually("asynq task "+id+" gone", func() bool {
		_, err := r.insp.GetTaskInfo(r.name, id)
		return errors.Is(err, asynq.ErrTaskNotFound)
	})
}

// queue opens the redisq queue name (the test's own by default: "") with
// a 1 ms backoff and opts after it.
func (r *rig) queue(name string, opts ...redisq.Option) *redisq.Queue {
	r.t.Helper()
	if name == "" {
		name = r.name
	}
	q, err := redisq.New(r.ctx, r.rc, name, append([]redisq.Option{
		redisq.WithBackoff(time.Millisecond, time.Millisecond),
		redisq.WithLogger(slog.New(slog.DiscardHandler)),
	}, opts...)...)
	if err != nil {
		r.t.Fatalf("redisq.New: %v", err)
	}
	r.t.Cleanup(func() { _ = q.Close() })
	return q
}

// worker runs w until the test ends, then shuts it down and checks that
// Run returned nil.
func (r *rig) run(w *redisq.Worker) *redisq.Worker {
	r.t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Run(context.WithoutCancel(r.ctx)) }()
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			r.t.Errorf("redisq Worker.Shutdown: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				r.t.Errorf("redisq Worker.Run: %v", err)
			}
		case <-time.After(wait): // a handler of the test hangs
			r.t.Errorf("redisq Worker.Run did not return %v after Shutdown", wait)
		}
	})
	return w
}

// worker starts a Worker over q running h.
func (r *rig) worker(q *redisq.Queue, h redisq.Handler, opts redisq.WorkerOptions) *redisq.Worker {
	r.t.Helper()
	if opts.Concurrency == 0 {
		opts.Concurrency = 4
	}
	return r.run(redisq.NewWorker(q, h, opts))
}

// item returns redisq's item id of q, failing the test unless it exists.
func (r *rig) item(q *redisq.Queue, id string) redisq.Item {
	r.t.Helper()
	it, err := q.Get(r.ctx, id)
	if err != nil {
		r.t.Fatalf("redisq Get(%s): %v", id, err)
	}
	return it
}

// redisqState waits until q's item id is in state.
func (r *rig) redisqState(q *redisq.Queue, id string, state redisq.State) redisq.Item {
	r.t.Helper()
	var it redisq.Item
	r.eventually(fmt.Sprintf("redisq item %s %v", id, state), func() bool {
		var err error
		it, err = q.Get(r.ctx, id)
		return err == nil && it.State == state
	})
	return it
}

// redisqGone waits until q's item id no longer exists.
func (r *rig) redisqGone(q *redisq.Queue, id string) {
	r.t.Helper()
	r.eventually("redisq item "+id+" gone", func() bool {
		_, err := q.Get(r.ctx, id)
		return errors.Is(err, redisq.ErrNotFound)
	})
}

// eventually waits until cond holds, failing the test after wait.
func (r *rig) eventually(what string, cond func() bool) {
	r.t.Helper()
	for deadline := time.Now().Add(wait); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("waited %v for %s", wait, what)
		}
	}
}

// recv waits for a value on ch.
func recv[T any](r *rig, ch <-chan T, what string) T {
	r.t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		r.t.Fatalf("waited %v for %s", wait, what)
		panic("unreachable")
	}
}

// counter counts the runs of a handler, by key.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[key]++
	return c.n[key]
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}
