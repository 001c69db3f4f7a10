package main

// The -redis and -workers modes: the scenario of run on the Redis backend.
//
// An order is an item "order-N" in a redisq queue, due when its payment
// timeout passes. Paying is Cancel: it pays the order when it removes it
// while still scheduled (CancelRemoved); CancelMarked or ErrNotFound mean a
// canceller has already taken it (the order expired first). A canceller is a consumer blocked in Take: it
// cancels each order it receives and Acks it, which deletes the item.
//
// With -workers N the cancellers are N processes: this binary re-executed
// with the hidden flag -worker-of QUEUE. Each worker writes one JSON line per
// cancellation to its stdout, which the parent reads; the parent closes the
// workers' stdin to stop them. The parent then checks that every order was
// paid or cancelled exactly once, across processes, and that nothing is left
// in the queue.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

type redisScenario struct {
	addr     string
	orders   int
	timeout  time.Duration
	paidFrac float64
	verbose  bool
	workers  int    // 0: the canceller is a goroutine of this process
	metrics  string // serve Prometheus metrics here ("": no)
}

// redisReport is the outcome of runRedis.
type redisReport struct {
	result
	finished  bool   // the scenario ran to the end (result is complete)
	perWorker []int  // cancellations per worker process (-workers)
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

// orderPayload is an order's payload in the queue. Its deadline is the
// item's due time (Message.Due), which Redis computed; see runRedis.
type orderPayload struct {
	Order     int   `json:"order"`
	TimeoutMS int64 `json:"timeout_ms"`
}

func orderID(n int) string { return fmt.Sprintf("order-%d", n) }

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

// runRedis runs the scenario on a fresh queue at sc.addr, prints the events,
// verifies the outcome and deletes the queue's keys. The error reports a
// failure to run or a failed verification; the report is complete whenever
// finished is set.
func runRedis(ctx context.Context, sc redisScenario) (rep redisReport, err error) {
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
	_, stopMetrics, err := serveMetrics(sc.metrics, dqprom.NewRedisCollector(q))
	if err != nil {
		return rep, err
	}
	defer stopMetrics()
	clock, err := calibrate(ctx, c)
	if err != nil {
		return rep, err
	}
	log := newEventLog(sc.verbose)
	t := newTally(sc.workers)

	// The cancellers, started before the first order is placed.
	var stopCancellers func() error
	who := "a goroutine blocked in Take"
	if sc.workers == 0 {
		stopCancellers = startCanceller(ctx, q, clock, t, log)
	} else {
		who = fmt.Sprintf("%d worker processes blocked in Take", sc.workers)
		if stopCancellers, err = startWorkers(ctx, sc.addr, name, sc.workers, t, log); err != nil {
			return rep, err
		}
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stopCancellers()
		}
	}()
	fmt.Printf("queue %s on redis %s, orders cancelled by %s\n", name, sc.addr, who)

	// Place the orders: the same orders, timeouts and payers as run (same
	// seed), with timeouts in whole milliseconds, redisq's resolution.
	//
	// Deadlines: EnqueueAfter makes the item due delay after the Redis
	// server's TIME and returns that due time, which is the deadline the
	// queue enforces (an item is claimed only once Redis TIME has reached
	// it). A deadline computed here, like run's start.Add(d), would be on
	// another clock: Redis usually runs on another host, and even on this
	// one each order reaches Redis a little after start. Lateness measured
	// against it would be clock skew and placement time, not the queue's.
	// So the deadline is the due time, carried by the message (Message.Due),
	// and each canceller maps its own receive instant onto the Redis clock.
	//
	// The payment service: a customer who pays does so at a random moment
	// before the deadline, counted from when the order was placed. Placing
	// takes one round trip per order (about 100ms for 2,000 on loopback, not
	// microseconds as in run), so the service runs while orders are still
	// being placed, on an in-process schedule: the core delayqueue. Paying
	// is Cancel, which succeeds only while the order is still scheduled.
	pays := delayqueue.New[int]()
	payDone := make(chan error, 1)
	var paying sync.WaitGroup
	paying.Go(func() { payDone <- payOrders(ctx, q, pays, t, log) })
	defer func() { pays.Close(); paying.Wait() }()

	rng := rand.New(rand.NewPCG(1, 2))
	var lastDue time.Time
	for id := range sc.orders {
		d := (time.Duration(rng.Int64N(int64(sc.timeout))) + time.Millisecond).Truncate(time.Millisecond)
		payload, _ := json.Marshal(orderPayload{Order: id, TimeoutMS: d.Milliseconds()})
		due, err := q.EnqueueAfter(ctx, orderID(id), payload, d)
		if err != nil {
			return rep, fmt.Errorf("placing order %d: %w", id, err)
		}
		placedAt := time.Now()
		if due.After(lastDue) {
			lastDue = due
		}
		rep.placed++
		log.printf("placed", "order %5d  placed, pay within %v", id, d)
		if rng.Float64() < sc.paidFrac {
			_, _ = pays.Offer(id, placedAt.Add(time.Duration(rng.Int64N(int64(d)))))
		}
	}
	// Wait out the payments, then stop the payment service.
	for pays.Len() > 0 {
		_, at, _ := pays.Peek()
		select {
		case err := <-payDone: // it stopped early: a Redis error
			return rep, err
		case <-time.After(time.Until(at) + time.Millisecond):
		case <-ctx.Done():
			return rep, ctx.Err()
		}
	}
	pays.Close()
	if err := <-payDone; err != nil {
		return rep, err
	}
	t.mu.Lock()
	rep.paid = len(t.paid)
	t.mu.Unlock()

	// Wait until every unpaid order has been cancelled (bounded: a canceller
	// that died would leave its order leased for the visibility timeout).
	waitErr := t.waitFor(ctx, rep.placed-rep.paid, lastDue.Sub(clock.now())+10*time.Second)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	stopped = true
	stopErr := stopCancellers()
	log.close()

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

// payOrders is the payment service: it pays each order when pays says so
// and records the payments that succeed, until pays is closed. Cancel
// reports CancelMarked (a canceller holds the order; Cancel marked it so it
// will not be retried) or ErrNotFound (already cancelled and acked) when the
// canceller got there first: the order expired before it was paid.
func payOrders(ctx context.Context, q *redisq.Queue, pays *delayqueue.Queue[int], t *tally, log *eventLog) error {
	for {
		id, err := pays.Take(ctx)
		if err != nil {
			if errors.Is(err, delayqueue.ErrClosed) {
				return nil
			}
			return err
		}
		switch out, err := q.Cancel(ctx, orderID(id)); {
		case err == nil && out == redisq.CancelRemoved:
			t.pay(id)
			log.printf("paid", "order %5d  paid, timeout cancelled", id)
		case err == nil, errors.Is(err, redisq.ErrNotFound):
		default:
			return fmt.Errorf("paying order %d: %w", id, err)
		}
	}
}

// cancelOrders is a canceller: it takes each expired order, cancels it and
// Acks it, and reports it, until ctx is done or the queue is closed.
func cancelOrders(ctx context.Context, q *redisq.Queue, clock redisClock, report func(cancellation)) error {
	for {
		m, err := q.Take(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, redisq.ErrClosed) {
				return nil
			}
			return err
		}
		late := clock.now().Sub(m.Due)
		var o orderPayload
		if err := json.Unmarshal(m.Payload, &o); err != nil {
			return fmt.Errorf("%s: bad payload: %w", m.ID, err)
		}
		// A real service would cancel the order here (release its stock,
		// mark it cancelled where status is still unpaid); then Ack deletes
		// the item. Ack even if ctx is done meanwhile: the order is ours.
		actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = m.Ack(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("ack %s: %w", m.ID, err)
		}
		report(cancellation{Order: o.Order, Late: late, ByRedis: m.ClaimedAt.Sub(m.Due)})
	}
}

// startCanceller runs one canceller goroutine in this process.
func startCanceller(ctx context.Context, q *redisq.Queue, clock redisClock, t *tally, log *eventLog) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		err := cancelOrders(ctx, q, clock, func(c cancellation) { t.cancelled(0, c, log) })
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

// worker is the body of a worker process (hidden flag -worker-of QUEUE):
// a canceller on queue that reports to its parent through stdout. It stops
// when its stdin is closed (the parent's signal, also when the parent dies)
// or on SIGINT/SIGTERM, and returns the exit code.
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
	err = cancelOrders(ctx, q, clock, func(cn cancellation) {
		n++
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
// consuming. Their reports go to t and log. stop closes their stdin, waits
// for them to exit (killing any that take over 10s) and checks they exited
// cleanly and reported consistently.
func startWorkers(ctx context.Context, addr, queue string, n int, t *tally, log *eventLog) (stop func() error, err error) {
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
		cmd := exec.Command(exe, "-"+workerFlag, queue, "-redis", addr)
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
		go w.read(stdout, ready, &stopping, t, log)
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
func (w *workerProc) read(stdout io.Reader, ready chan<- error, stopping *atomic.Bool, t *tally, log *eventLog) {
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
			t.cancelled(w.n, *l.Cancel, log)
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

func (t *tally) cancelled(w int, c cancellation, log *eventLog) {
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
	by := ""
	if w > 0 {
		by = fmt.Sprintf(" by worker %d", w)
	}
	log.printf("expired", "order %5d  payment timed out, cancelled %v after its deadline%s", c.Order, c.Late.Round(time.Microsecond), by)
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

func (k redisClock) now() time.Time { return k.redis.Add(time.Since(k.local)) }

// deleteQueue removes every key of the queue (Destroy works after Close).
func deleteQueue(q *redisq.Queue) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.Destroy(ctx); err != nil && !errors.Is(err, redisq.ErrNoQueue) {
		return fmt.Errorf("deleting queue %s: %w", q.Name(), err)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
