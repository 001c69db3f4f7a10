package main

// The -redis scenario with its cancellers in separate processes, checked:
// every order is paid or cancelled exactly once across the processes, none
// is delivered before its deadline by the Redis clock, and nothing is left
// in the queue.
//
// With workers > 0 the cancellers are this test binary re-executed with
// workerEnv set (see TestMain). Each worker writes one JSON line per
// cancellation to its stdout, which the test reads; the test closes the
// workers' stdin to stop them.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// workerEnv, set to "ADDR QUEUE", makes the test binary a worker process
// cancelling the orders of QUEUE on the Redis server at ADDR.
const workerEnv = "ORDERTIMEOUT_WORKER"

// TestRedisExactlyOnce runs the scenario with the canceller in this
// process and in two worker processes, against a redis-server of its own.
// It is skipped when redis-server is not on PATH (unlike redisq's own
// tests, which fail).
func TestRedisExactlyOnce(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH: skipping the -redis scenario (apt-get install -y redis-server)")
	}
	addr := redistest.New(t).Addr
	for _, workers := range []int{0, 2} {
		t.Run("workers="+strconv.Itoa(workers), func(t *testing.T) {
			rep, err := runExactlyOnce(t.Context(), redisScenario{
				addr: addr, orders: 200, timeout: 100 * time.Millisecond, paidFrac: 0.6, workers: workers,
			})
			t.Logf("\n%s", rep)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.finished || rep.placed != 200 || rep.placed != rep.paid+rep.expired {
				t.Fatalf("placed %d, paid %d, expired %d: want 200 placed = paid + expired", rep.placed, rep.paid, rep.expired)
			}
			if rep.paid == 0 || rep.expired == 0 {
				t.Errorf("paid %d, expired %d: want some of each", rep.paid, rep.expired)
			}
			if len(rep.perWorker) != workers {
				t.Fatalf("%d per-worker counts for %d workers", len(rep.perWorker), workers)
			}
			if workers > 0 {
				sum := 0
				for _, n := range rep.perWorker {
					sum += n
				}
				if sum != rep.expired {
					t.Errorf("workers cancelled %v, sum %d != expired %d", rep.perWorker, sum, rep.expired)
				}
			}
			// runExactlyOnce deleted the queue: the server holds no key.
			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			if n, err := c.DBSize(context.Background()).Result(); err != nil || n != 0 {
				t.Errorf("after the run: %d keys (%v), want 0", n, err)
			}
		})
	}
}

type redisScenario struct {
	addr     string
	orders   int
	timeout  time.Duration
	paidFrac float64
	workers  int // 0: the canceller is a goroutine of this process
}

// redisReport is the outcome of runExactlyOnce.
type redisReport struct {
	result
	finished  bool   // the scenario ran to the end (result is complete)
	perWorker []int  // cancellations per worker process
	checks    string // what the final verification found
}

func (r redisReport) String() string {
	if !r.finished {
		return ""
	}
	var b strings.Builder
	fmt.Fprintln(&b, r.result)
	if len(r.perWorker) > 0 {
		parts := make([]string, len(r.perWorker))
		for i, n := range r.perWorker {
			parts[i] = fmt.Sprintf("worker %d cancelled %d", i+1, n)
		}
		fmt.Fprintln(&b, strings.Join(parts, ", "))
	}
	fmt.Fprintln(&b, r.checks)
	return b.String()
}

// cancellation is what a canceller reports for one expired order.
type cancellation struct {
	Order int `json:"order"`
	// Late is the instant the canceller received the order, on the Redis
	// clock (see redisClock), minus its deadline.
	Late time.Duration `json:"late"`
	// ByRedis is Message.ClaimedAt - Message.Due: both Redis TIME, in whole
	// milliseconds. redisq promises it is never negative (never early).
	ByRedis time.Duration `json:"by_redis"`
}

func newCancellation(clock redisClock, m *redisq.Message, o orderPayload, took time.Time) cancellation {
	return cancellation{Order: o.Order, Late: clock.at(took).Sub(m.Due), ByRedis: m.ClaimedAt.Sub(m.Due)}
}

// runExactlyOnce runs the scenario on a fresh queue at sc.addr, verifies the
// outcome and deletes the queue's keys. The error reports a failure to run
// or a failed verification; the report is complete whenever finished is set.
func runExactlyOnce(ctx context.Context, sc redisScenario) (rep redisReport, err error) {
	c := redis.NewClient(&redis.Options{Addr: sc.addr})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return rep, fmt.Errorf("redis %s: %w", sc.addr, err)
	}
	// A name of its own per run: runs never see each other's items, even
	// against the same server at the same time. Its keys are deleted at the end.
	name := fmt.Sprintf("ordertimeout-%d-%d", os.Getpid(), time.Now().UnixNano())
	q, err := redisq.New(ctx, c, name)
	if err != nil {
		return rep, err
	}
	defer func() {
		_ = q.Close()
		err = errors.Join(err, deleteQueue(q))
	}()
	clock, err := calibrate(ctx, c)
	if err != nil {
		return rep, err
	}
	t := newTally(sc.workers)

	// The cancellers, started before the first order is placed.
	var stopCancellers func() error
	if sc.workers == 0 {
		stopCancellers = startCanceller(ctx, q, clock, t)
	} else if stopCancellers, err = startWorkers(ctx, sc.addr, name, sc.workers, t); err != nil {
		return rep, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stopCancellers()
		}
	}()

	// Deadlines: EnqueueAfter makes the item due delay after the Redis
	// server's TIME and returns that due time, which is the deadline the
	// queue enforces (an item is claimed only once Redis TIME has reached
	// it). A deadline computed here would be on another clock: Redis usually
	// runs on another host, and even on this one each order reaches Redis a
	// little after the run starts. Lateness measured against it would be
	// clock skew and placement time, not the queue's. So the deadline is the
	// due time, carried by the message (Message.Due), and each canceller
	// maps its own receive instant onto the Redis clock.
	paid, err := placeOrders(ctx, q, sc.orders, sc.timeout, sc.paidFrac, newEventLog(false))
	if err != nil {
		return rep, err
	}
	for _, id := range paid {
		t.pay(id)
	}
	rep.placed, rep.paid = sc.orders, len(paid)

	// Wait until every unpaid order has been cancelled (bounded: a canceller
	// that died would leave its order leased for the visibility timeout).
	// Every deadline is at most sc.timeout away once the payments are done.
	waitErr := t.waitFor(ctx, rep.placed-rep.paid, sc.timeout+10*time.Second)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	stopped = true
	stopErr := stopCancellers()

	t.mu.Lock()
	rep.expired = t.cancels
	rep.late = t.late
	rep.perWorker = t.perWorker
	t.mu.Unlock()
	rep.finished = true
	return rep, errors.Join(waitErr, stopErr, verify(ctx, q, &rep, t))
}

// verify checks the outcome and fills rep.checks: placed == paid + expired,
// every order paid or cancelled exactly once, none delivered early by the
// Redis clock, the queue empty, its counters consistent and its audit clean.
func verify(ctx context.Context, q *redisq.Queue, rep *redisReport, t *tally) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var bad []string
	if rep.placed != rep.paid+rep.expired {
		bad = append(bad, fmt.Sprintf("placed %d != paid %d + expired %d", rep.placed, rep.paid, rep.expired))
	}
	if len(t.dups) > 0 {
		bad = append(bad, fmt.Sprintf("orders cancelled more than once: %v", t.dups))
	}
	if len(t.early) > 0 {
		bad = append(bad, fmt.Sprintf("orders delivered before their deadline by Redis TIME: %v", t.early))
	}
	var neither, both []int
	for id := range rep.placed {
		_, cancelled := t.by[id]
		switch {
		case t.paid[id] && cancelled:
			both = append(both, id)
		case !t.paid[id] && !cancelled:
			neither = append(neither, id)
		}
	}
	if len(both) > 0 {
		bad = append(bad, fmt.Sprintf("orders both paid and cancelled: %v", both))
	}
	if len(neither) > 0 {
		bad = append(bad, fmt.Sprintf("%d orders neither paid nor cancelled", len(neither)))
	}

	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	if st.Scheduled != 0 || st.InFlight != 0 || st.Dead != 0 {
		bad = append(bad, fmt.Sprintf("queue not empty: scheduled %d, in flight %d, dead %d", st.Scheduled, st.InFlight, st.Dead))
	}
	// Counters: a successful Cancel counts as cancelled, a Cancel of an
	// in-flight order does not (the canceller's Ack deletes it).
	want := map[string]int{"enqueued": rep.placed, "cancelled": rep.paid, "delivered": rep.expired, "acked": rep.expired}
	for _, k := range []string{"enqueued", "cancelled", "delivered", "acked", "nacked", "expired", "dead"} {
		if got := st.Counters[k]; got != int64(want[k]) {
			bad = append(bad, fmt.Sprintf("counter %s is %d, want %d", k, got, want[k]))
		}
	}
	a, err := q.Audit(ctx)
	if err != nil {
		return err
	}
	if !a.OK() || a.Items != 0 {
		bad = append(bad, fmt.Sprintf("audit: %d items left, problems %v (+%d)", a.Items, a.Problems, a.More))
	}

	if len(bad) > 0 {
		rep.checks = "check FAILED: " + strings.Join(bad, "; ")
		return errors.New("verification failed")
	}
	exactly := "exactly once"
	if len(rep.perWorker) > 0 {
		exactly = "exactly once across the workers"
	}
	rep.checks = fmt.Sprintf("checked: every order paid or cancelled %s, none early by Redis TIME; "+
		"queue empty (scheduled %d, in flight %d, dead %d, audit OK); counters enqueued %d, cancelled %d, delivered %d, acked %d",
		exactly, st.Scheduled, st.InFlight, st.Dead,
		st.Counters["enqueued"], st.Counters["cancelled"], st.Counters["delivered"], st.Counters["acked"])
	return nil
}

// startCanceller runs one canceller goroutine in this process.
func startCanceller(ctx context.Context, q *redisq.Queue, clock redisClock, t *tally) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		err := cancelOrders(ctx, q, func(m *redisq.Message, o orderPayload, took time.Time) {
			t.cancelled(0, newCancellation(clock, m, o, took))
		})
		if err != nil {
			t.fail(fmt.Errorf("canceller: %w", err))
		}
		errc <- err
	}()
	return func() error { cancel(); return <-errc }
}

// workerLine is one JSON line a worker writes to its stdout.
type workerLine struct {
	Ready     bool          `json:"ready,omitempty"`  // first line: consuming
	Cancel    *cancellation `json:"cancel,omitempty"` // one per cancelled order
	Done      bool          `json:"done,omitempty"`   // last line, with the count
	Cancelled int           `json:"cancelled,omitempty"`
}

// worker is the body of a worker process (workerEnv set): a canceller on
// queue that reports to its parent through stdout. It stops when its stdin
// is closed (the parent's signal, also when the parent dies) or on
// SIGINT/SIGTERM, and returns the exit code.
func worker(addr, queue string) int {
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "ordertimeout worker (pid %d): %v\n", os.Getpid(), err)
		return 1
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return fail(err)
	}
	q, err := redisq.New(ctx, c, queue)
	if err != nil {
		return fail(err)
	}
	defer q.Close()
	clock, err := calibrate(ctx, c)
	if err != nil {
		return fail(err)
	}
	out := json.NewEncoder(os.Stdout) // unbuffered: one write per line
	if err := out.Encode(workerLine{Ready: true}); err != nil {
		return fail(err)
	}
	n := 0
	err = cancelOrders(ctx, q, func(m *redisq.Message, o orderPayload, took time.Time) {
		n++
		cn := newCancellation(clock, m, o, took)
		_ = out.Encode(workerLine{Cancel: &cn})
	})
	_ = out.Encode(workerLine{Done: true, Cancelled: n})
	if err != nil {
		return fail(err)
	}
	return 0
}

// workerProc is the parent's handle on one worker process.
type workerProc struct {
	n     int // 1-based
	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{} // closed when its stdout is drained
	// Set by the reader before done is closed:
	final   int  // count from its "done" line
	sawDone bool // it wrote the "done" line
	err     error
}

// startWorkers starts n worker processes on queue and waits until each is
// consuming. Their reports go to t. stop closes their stdin, waits for them
// to exit (killing any that take over 10s) and checks they exited cleanly
// and reported consistently.
func startWorkers(ctx context.Context, addr, queue string, n int, t *tally) (stop func() error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var stopping atomic.Bool
	ready := make(chan error, n)
	var ws []*workerProc
	stop = func() error {
		stopping.Store(true)
		for _, w := range ws {
			_ = w.stdin.Close() // EOF: the worker's cue to finish
		}
		var errs []error
		for _, w := range ws {
			select {
			case <-w.done:
			case <-time.After(10 * time.Second):
				_ = w.cmd.Process.Kill()
				<-w.done
				errs = append(errs, fmt.Errorf("worker %d did not stop within 10s; killed", w.n))
			}
			if err := w.cmd.Wait(); err != nil {
				errs = append(errs, fmt.Errorf("worker %d: %w", w.n, err))
			}
			t.mu.Lock()
			got := t.perWorker[w.n-1]
			t.mu.Unlock()
			switch {
			case w.err != nil:
				errs = append(errs, fmt.Errorf("worker %d: %w", w.n, w.err))
			case !w.sawDone:
				errs = append(errs, fmt.Errorf("worker %d exited without its final report", w.n))
			case w.final != got:
				errs = append(errs, fmt.Errorf("worker %d says it cancelled %d, reported %d", w.n, w.final, got))
			}
		}
		return errors.Join(errs...)
	}
	for k := 1; k <= n; k++ {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), workerEnv+"="+addr+" "+queue)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			_ = stdin.Close()
			return nil, errors.Join(err, stop())
		}
		if err := cmd.Start(); err != nil {
			_ = stdin.Close()
			return nil, errors.Join(fmt.Errorf("starting worker %d: %w", k, err), stop())
		}
		w := &workerProc{n: k, cmd: cmd, stdin: stdin, done: make(chan struct{})}
		ws = append(ws, w)
		go w.read(stdout, ready, &stopping, t)
	}
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	for range n {
		select {
		case err := <-ready:
			if err != nil {
				return nil, errors.Join(err, stop())
			}
		case <-timeout.C:
			return nil, errors.Join(errors.New("workers not ready within 15s"), stop())
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), stop())
		}
	}
	return stop, nil
}

// read consumes the worker's stdout until EOF.
func (w *workerProc) read(stdout io.Reader, ready chan<- error, stopping *atomic.Bool, t *tally) {
	defer close(w.done)
	isReady := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var l workerLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			w.err = fmt.Errorf("bad report %q: %w", sc.Text(), err)
			continue
		}
		switch {
		case l.Ready:
			isReady = true
			ready <- nil
		case l.Cancel != nil:
			t.cancelled(w.n, *l.Cancel)
		case l.Done:
			w.sawDone, w.final = true, l.Cancelled
		}
	}
	if w.err == nil {
		w.err = sc.Err()
	}
	switch {
	case !isReady:
		ready <- fmt.Errorf("worker %d exited before it was ready", w.n)
	case !stopping.Load():
		t.fail(fmt.Errorf("worker %d exited early", w.n))
	}
}

// tally collects the payments and cancellations of a run.
type tally struct {
	mu        sync.Mutex
	changed   chan struct{} // a token after each cancellation or failure
	paid      map[int]bool
	by        map[int]int // cancelled order -> canceller (0: this process, k: worker k)
	cancels   int         // cancellation reports, duplicates included
	late      []time.Duration
	dups      []int // orders cancelled more than once
	early     []int // orders delivered before their due time by Redis TIME
	perWorker []int
	err       error // a canceller failed
}

func newTally(workers int) *tally {
	return &tally{
		changed:   make(chan struct{}, 1),
		paid:      map[int]bool{},
		by:        map[int]int{},
		perWorker: make([]int, workers),
	}
}

func (t *tally) pay(id int) {
	t.mu.Lock()
	t.paid[id] = true
	t.mu.Unlock()
}

func (t *tally) cancelled(w int, c cancellation) {
	t.mu.Lock()
	t.cancels++
	if _, dup := t.by[c.Order]; dup {
		t.dups = append(t.dups, c.Order)
	} else {
		t.by[c.Order] = w
	}
	t.late = append(t.late, c.Late)
	if c.ByRedis < 0 {
		t.early = append(t.early, c.Order)
	}
	if w > 0 {
		t.perWorker[w-1]++
	}
	t.mu.Unlock()
	t.signal()
}

func (t *tally) fail(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.mu.Unlock()
	t.signal()
}

func (t *tally) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until want cancellations have been reported, a canceller
// failed, ctx is done or d has passed.
func (t *tally) waitFor(ctx context.Context, want int, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		t.mu.Lock()
		n, err := t.cancels, t.err
		t.mu.Unlock()
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		select {
		case <-t.changed:
		case <-timer.C:
			return fmt.Errorf("only %d of %d unpaid orders cancelled within %v", n, want, d.Round(time.Millisecond))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// redisClock reads the Redis server's clock in this process: the Redis TIME
// at a local instant, plus the local monotonic time elapsed since. It is
// calibrated on the TIME round trip with the smallest RTT, assuming the
// server read its clock halfway through, so it is right to within half that
// RTT (tens of µs on loopback). Each worker process calibrates its own.
type redisClock struct {
	local time.Time // a local instant (with its monotonic reading)
	redis time.Time // Redis TIME at that instant
	rtt   time.Duration
}

func calibrate(ctx context.Context, c *redis.Client) (redisClock, error) {
	var best redisClock
	for i := range 50 {
		t0 := time.Now()
		rt, err := c.Time(ctx).Result()
		rtt := time.Since(t0)
		if err != nil {
			return redisClock{}, err
		}
		if i == 0 || rtt < best.rtt {
			best = redisClock{local: t0.Add(rtt / 2), redis: rt, rtt: rtt}
		}
	}
	return best, nil
}

// at maps the local instant t onto the Redis clock.
func (k redisClock) at(t time.Time) time.Time { return k.redis.Add(t.Sub(k.local)) }
