package redisq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Handler handles one message for a Worker. It returns nil when the work is
// done (the worker acks the message), or an error: the worker then Nacks it
// with the queue's backoff and the error's text as the reason, unless the
// error wraps a SkipRetryError (dead-lettered at once) or a RetryAfterError
// (redelivered after its delay). A panic is recovered and treated as an
// error (see PanicError). ctx carries the message (MessageFromContext) and
// is cancelled when the message's lease is lost (the cause wraps
// ErrLeaseLost) or when a Shutdown runs out of time (ErrWorkerStopped);
// either way the worker drops the handler's result. The handler must not
// settle the message itself (Ack, Nack, Release): the worker does.
type Handler func(ctx context.Context, m *Message) error

// DefaultConcurrency is the number of handlers a Worker runs at once when
// WorkerOptions.Concurrency is 0: enough to overlap handlers that wait on
// I/O, and within go-redis' default pool (10 connections per CPU). Set it
// to what your handlers can run in parallel.
const DefaultConcurrency = 10

// WorkerOptions configures NewWorker. The zero value is ready to use.
type WorkerOptions struct {
	// Concurrency is how many handlers run at once (default
	// DefaultConcurrency). The worker takes work for idle handlers only,
	// so a message is never leased while it waits for a handler.
	Concurrency int
	// Logger receives the worker's own records: panics (with their stack),
	// messages whose lease was lost, settle and Take failures (default: the
	// Queue's logger, see WithLogger). Logging(logger) adds one record per
	// handled message.
	Logger *slog.Logger
	// Middleware wraps the handler, Middleware[0] outermost: each sees the
	// message, the handler's ctx and its error (a panic as a *PanicError).
	Middleware []Middleware
	// NoRecurring: do not keep the queue's recurring registrations
	// (Queue.KeepRecurring), which a worker does while it takes work.
	NoRecurring bool
	// ShutdownTimeout is how long the running handlers may take to finish
	// once Run's ctx has ended (default DefaultShutdownTimeout) before
	// their contexts are cancelled and their messages handed back. A
	// negative value cancels them at once. Shutdown(ctx) sets its own
	// bound instead.
	ShutdownTimeout time.Duration
	// Heartbeat is how often the worker records that it is alive and what
	// its handlers run (Queue.Workers; default DefaultHeartbeat, 5 s): one
	// short script each time. A negative value writes none.
	Heartbeat time.Duration
	// Name labels the worker in Queue.Workers, dqctl and the dashboard
	// (default: the host name).
	Name string
}

// DefaultShutdownTimeout is WorkerOptions.ShutdownTimeout when it is 0:
// asynq's default, under the grace period of common orchestrators
// (Docker's 10 s, Kubernetes' 30 s) so that what is unfinished is handed
// back before the process is killed.
const DefaultShutdownTimeout = 8 * time.Second

// ErrWorkerStopped is the cause of the cancellation of a handler's context
// when a Worker stops before the handler returns: Shutdown's context ended,
// or the ShutdownTimeout after the end of Run's did. The message has been
// handed back (Message.Release) by then.
var ErrWorkerStopped = errors.New("redisq: worker stopped")

// SkipRetryError is a handler error that no retry can fix: the worker
// dead-letters the message at once, with the handler's error text as the
// reason. Make one with SkipRetry; find one with errors.As.
type SkipRetryError struct {
	Err error // the cause; may be nil
}

// SkipRetry wraps err so that the worker dead-letters the message at once
// instead of retrying it. The dead item's reason is the text of the error
// the handler returns (which may wrap this one further); a nil err is
// allowed ("redisq: skip retry").
func SkipRetry(err error) error { return &SkipRetryError{Err: err} }

func (e *SkipRetryError) Error() string {
	if e.Err == nil {
		return "redisq: skip retry"
	}
	return e.Err.Error()
}

func (e *SkipRetryError) Unwrap() error { return e.Err }

// RetryAfterError is a handler error that asks for a redelivery after
// Delay instead of the queue's backoff (Message.NackAfter); the attempt
// counts, so max attempts still dead-letters the message. Make one with
// RetryAfter; find one with errors.As.
type RetryAfterError struct {
	Err   error // the cause; may be nil
	Delay time.Duration
}

// RetryAfter wraps err so that the worker redelivers the message d after
// Redis TIME (d < 0 means 0) instead of after the backoff, with the error's
// text as the Nack reason. A nil err is allowed ("redisq: retry after d"),
// for "not now" without a failure. SkipRetry wins when an error wraps both.
func RetryAfter(err error, d time.Duration) error {
	return &RetryAfterError{Err: err, Delay: max(d, 0)}
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return "redisq: retry after " + e.Delay.String()
	}
	return e.Err.Error()
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// PanicError is the error a Worker makes of a handler's panic: middleware
// sees it as the handler's error, the worker logs it with its stack, and
// the message is Nacked with the reason "panic: " and the value.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the panicking goroutine's stack (runtime/debug.Stack)
}

func (e *PanicError) Error() string { return fmt.Sprint("panic: ", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

type messageKey struct{}

// MessageFromContext returns the message a Worker's handler is running for,
// from the handler's ctx (or one derived from it).
func MessageFromContext(ctx context.Context) (*Message, bool) {
	m, ok := ctx.Value(messageKey{}).(*Message)
	return m, ok
}

// settleTimeout bounds one Ack, Nack, DeadLetter, Release or lease extension
// of a Worker: they run on a context of their own, so that a message is
// settled after its handler's ctx or Run's has ended.
const settleTimeout = 10 * time.Second

// Worker runs a Handler on the messages of one Queue with a fixed number of
// concurrent handlers: the loop of Take, run, Ack or Nack, lease extension,
// panic recovery and shutdown that every consumer otherwise writes.
//
// One goroutine waits for work for all idle handlers: while nothing is
// due it is the worker's only waiter in Redis (one blocked connection; an
// idle worker costs what one idle Take does), and each of its claims
// leases work for every idle handler at once (TakeBatch) and acks a
// finished message in the same script (AckTake). When this Queue's next
// due time is a few milliseconds away, it waits for it locally, so that
// the claim then carries the ack of a message finished meanwhile. While a
// backlog lasts (a claim leaves due work behind), each handler acks its
// message and claims its next one in one script and runs it itself, with
// no hand-off. Other acks go together (AckMany) from a goroutine of their
// own. So a busy worker pays one round trip per message or less. A failed
// message is settled (Nack, DeadLetter) by its handler's goroutine before
// that handler takes more work. A message is leased only for an idle
// handler, never to wait for one.
//
// While it takes work, the worker keeps the queue's recurring
// registrations going (Queue.KeepRecurring; WorkerOptions.NoRecurring turns
// it off): with any number of workers, each occurrence is enqueued once.
//
// Connections: the waiting goroutine holds one of the wait client's (see
// WithWaitClient) while it blocks; the handlers' claims, acks and lease
// extensions use the main client, up to Concurrency + 2 connections at
// once. Size PoolSize accordingly.
//
// While a handler runs, its lease is extended by the visibility timeout
// every third of it (by the worker, not through Message.Extend, so
// Message.Deadline keeps the claim's deadline); if an extension finds the
// lease lost, the handler's ctx is cancelled with a cause wrapping
// ErrLeaseLost and its result is dropped, since another consumer may hold
// the message by then.
//
// Delivery stays at-least-once: a worker process that dies leaves its
// messages leased until their visibility timeout, then they are
// redelivered (Attempts counts the lost one), so handlers must be
// idempotent.
type Worker struct {
	q     *Queue
	h     Handler
	n     int
	log   *slog.Logger
	vis   time.Duration // the queue's visibility timeout: each extension's length
	every time.Duration // extend a running handler's lease this often
	// recurring: Run keeps the queue's recurring registrations
	// (WorkerOptions.NoRecurring unset).
	recurring bool
	grace     time.Duration // after Run's ctx ends, before a forced stop (< 0: none)
	id        string        // in the heartbeat
	name      string        // in the heartbeat
	beatEvery time.Duration // heartbeat period (<= 0: none)

	jobs chan dispatch // claimed messages for the handlers (capacity n)
	idle chan struct{} // one token per idle handler (capacity n)
	// acks sends the finished messages' acks together (AckMany), held
	// while the taking goroutine is between claims, so that its next claim
	// carries one (AckTake).
	acks      *groupCommit[*Message]
	done      chan struct{} // closed when Run has returned (or will, without starting)
	ended     chan struct{} // closed when Run's goroutines have returned
	quiet     chan struct{} // closed when nothing is taken nor held any more
	forceOnce sync.Once

	mu         sync.Mutex
	ran        bool // guarded by mu: Run was called
	doneClosed bool // guarded by mu: done is closed
	stopping   bool // guarded by mu: no new work (Shutdown, Run's ctx, Close)
	fetchDone  bool // guarded by mu: the taking goroutine has returned
	quietDone  bool // guarded by mu: quiet is closed
	held       int  // guarded by mu: messages taken and not yet settled or released
	slots      []*slot
	base       context.Context // handlers' and settles' parent: Run's values, not its cancellation
	takeCtx    context.Context
	cancelTake context.CancelCauseFunc
	err        error // guarded by mu: what Run returns
}

// slot is one handler's goroutine and its lease extension timer.
type slot struct {
	timer    *time.Timer   // fires tick; guarded by the worker's mu (Reset/Stop)
	cur      *job          // guarded by mu: the running message, or nil
	armed    bool          // guarded by mu: timer set, tick not yet started
	tickWait chan struct{} // guarded by mu: closed by tick for an ending job
}

// dispatch is a message for a handler; more says that more messages were
// due when it was claimed.
type dispatch struct {
	m    *Message
	more bool
}

// job is one handler run.
type job struct {
	m         *Message
	cancel    context.CancelCauseFunc
	state     jobState // guarded by the worker's mu
	extending bool     // guarded by mu: an extension is in flight
	lost      bool     // guarded by mu: an extension found the lease lost
}

type jobState int

const (
	jobRunning   jobState = iota
	jobFinishing          // the handler returned: its goroutine settles it
	jobReleased           // a forced stop handed the message back
)

// NewWorker returns a Worker running h (wrapped in opts.Middleware) on q's
// messages. Start it with Run. It panics on a nil q or h or a negative
// Concurrency.
func NewWorker(q *Queue, h Handler, opts WorkerOptions) *Worker {
	if q == nil || h == nil {
		panic("redisq: NewWorker with a nil Queue or Handler")
	}
	n := opts.Concurrency
	if n < 0 {
		panic(fmt.Sprintf("redisq: NewWorker with Concurrency %d", n))
	}
	if n == 0 {
		n = DefaultConcurrency
	}
	log := opts.Logger
	if log == nil {
		log = q.opt.logger
	}
	grace := opts.ShutdownTimeout
	if grace == 0 {
		grace = DefaultShutdownTimeout
	}
	beat := opts.Heartbeat
	if beat == 0 {
		beat = DefaultHeartbeat
	}
	name := opts.Name
	if name == "" {
		name = hostName()
	}
	h = recoverPanics(h)
	for i := len(opts.Middleware) - 1; i >= 0; i-- {
		if opts.Middleware[i] != nil {
			h = opts.Middleware[i](h)
		}
	}
	w := &Worker{
		q:         q,
		h:         h,
		n:         n,
		recurring: !opts.NoRecurring,
		grace:     grace,
		id:        newWorkerID(),
		name:      name,
		beatEvery: beat,
		log:       log,
		vis:       q.opt.visibility,
		every:     q.opt.visibility / 3,
		jobs:      make(chan dispatch, n),
		idle:      make(chan struct{}, n),
		done:      make(chan struct{}),
		ended:     make(chan struct{}),
		quiet:     make(chan struct{}),
	}
	for range n {
		w.idle <- struct{}{}
	}
	w.acks = &groupCommit[*Message]{send: func(_ context.Context, ms []*Message) {
		w.ack(ms)
		w.unhold(len(ms))
	}}
	return w
}

// Run runs the worker until its ctx ends, Shutdown is called or the Queue
// is closed, and returns only when every goroutine it started has
// returned: the taking goroutine, the handlers (however long they take to
// honour their cancelled ctx) and the acks. It returns nil when stopped by
// ctx or Shutdown, or ErrClosed when the Queue was closed (the handlers
// running then are settled first). The end of ctx is a graceful shutdown,
// so that the context of signal.NotifyContext can be given as it is:
// taking stops at once, the running handlers get
// WorkerOptions.ShutdownTimeout (default 8 s) to finish and have their
// messages settled, and those still running then are stopped as by a
// Shutdown whose context ended (their contexts cancelled with cause
// ErrWorkerStopped, their messages handed back at once). Handlers'
// contexts carry ctx's values, not its cancellation. Run panics if called
// twice; after Shutdown it returns nil at once.
//
// Redis errors do not stop Run: a failed Take is logged and retried after
// a pause (10ms, doubling up to 1s); a failed Ack, Nack or extension is
// logged, and the message is redelivered after its lease.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.ran {
		w.mu.Unlock()
		panic("redisq: Worker.Run called twice")
	}
	w.ran = true
	if w.stopping { // Shutdown came first
		w.closeDoneLocked()
		w.mu.Unlock()
		return nil
	}
	w.base = context.WithoutCancel(ctx)
	w.takeCtx, w.cancelTake = context.WithCancelCause(w.base)
	w.slots = make([]*slot, w.n)
	for i := range w.slots {
		s := &slot{}
		s.timer = time.AfterFunc(time.Hour, func() { w.tick(s) })
		s.timer.Stop()
		w.slots[i] = s
	}
	w.mu.Unlock()

	stopped := make(chan struct{})
	unwatch := context.AfterFunc(ctx, func() { defer close(stopped); w.stopGracefully() })
	var wg sync.WaitGroup
	for _, s := range w.slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range w.jobs {
				w.runSlot(s, d)
				w.idle <- struct{}{}
			}
		}()
	}
	beatStop, beaten := make(chan struct{}), make(chan struct{})
	go func() { defer close(beaten); w.heartbeat(beatStop) }()

	// The recurring keeper runs while the worker takes work.
	keepCtx, stopKeep := context.WithCancel(w.takeCtx)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		if w.recurring {
			_ = w.q.KeepRecurring(keepCtx) // nil, or ErrClosed as fetch sees it
		}
	}()
	w.fetch()
	stopKeep()
	<-kept
	close(w.jobs)
	wg.Wait()
	w.acks.flush()
	close(beatStop)
	<-beaten
	close(w.ended)
	if !unwatch() {
		<-stopped
	}
	w.cancelTake(nil)
	w.mu.Lock()
	err := w.err
	w.closeDoneLocked()
	w.mu.Unlock()
	return err
}

func (w *Worker) closeDoneLocked() {
	if !w.doneClosed {
		w.doneClosed = true
		close(w.done)
	}
}

// Shutdown stops the worker: it takes no more work at once (a Take waiting
// for work returns), lets the running handlers finish and settles their
// messages, and returns nil when Run has returned. If ctx ends first, it
// cancels the handlers' contexts (cause ErrWorkerStopped), hands every
// message still held back at once with Message.Release (no attempt
// counted; another consumer gets it within a round trip, not after the
// visibility timeout), waits for the messages being settled (a Release,
// Ack or Nack that Redis does not answer gives up after 10 s), and returns
// ctx.Err(); Run returns once the handlers have returned. The results of
// handlers cancelled this way are dropped. Shutdown before Run makes Run
// return at once. It may be called more than once, and concurrently.
func (w *Worker) Shutdown(ctx context.Context) error {
	if !w.stop(false) {
		return nil
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	w.stop(true)
	select {
	case <-w.quiet:
	case <-w.done:
	}
	return ctx.Err()
}

// stopGracefully is the end of Run's ctx: it ends taking, lets the
// handlers run for the worker's grace period, then stops them (unless Run
// has ended by then).
func (w *Worker) stopGracefully() {
	if !w.stop(w.grace < 0) || w.grace < 0 {
		return
	}
	t := time.NewTimer(w.grace)
	defer t.Stop()
	select {
	case <-w.ended:
	case <-t.C:
		w.log.Warn("redisq: worker: handlers still running at the end of the shutdown timeout; stopping them and handing their messages back",
			"queue", w.q.name, "shutdown_timeout", w.grace)
		w.stop(true)
	}
}

// stop ends taking and, with force, cancels the running handlers and
// releases their messages (returning when that is done). It reports
// whether Run had started.
func (w *Worker) stop(force bool) bool {
	w.mu.Lock()
	w.stopping = true
	started := w.ran
	cancel := w.cancelTake
	if !started { // Run, if called later, returns at once
		w.closeDoneLocked()
		w.mu.Unlock()
		return false
	}
	w.mu.Unlock()
	if cancel == nil { // Run saw stopping and returned
		return true
	}
	cancel(ErrWorkerStopped)
	if force {
		w.forceOnce.Do(w.hardStop)
	}
	return true
}

// hardStop cancels every running handler and releases its message.
func (w *Worker) hardStop() {
	w.mu.Lock()
	var js []*job
	for _, s := range w.slots {
		if j := s.cur; j != nil && j.state == jobRunning {
			j.state = jobReleased
			js = append(js, j)
		}
	}
	w.mu.Unlock()
	ms := make([]*Message, len(js))
	for i, j := range js {
		j.cancel(ErrWorkerStopped)
		ms[i] = j.m
	}
	w.release(ms)
}

// release hands ms back (Message.Release, concurrently) and stops holding
// them.
func (w *Worker) release(ms []*Message) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(w.base, settleTimeout)
			defer cancel()
			if err := m.Release(ctx); err != nil && !errors.Is(err, ErrLeaseLost) {
				w.log.Warn("redisq: worker: releasing a message failed; it is redelivered after its lease",
					"queue", w.q.name, "id", m.ID, "err", err)
			}
		}()
	}
	wg.Wait()
	w.unhold(len(ms))
}

// unhold records that n held messages were settled, released or dropped.
func (w *Worker) unhold(n int) {
	if n == 0 {
		return
	}
	w.mu.Lock()
	w.held -= n
	w.checkQuietLocked()
	w.mu.Unlock()
}

func (w *Worker) checkQuietLocked() {
	if w.fetchDone && w.held == 0 && !w.quietDone {
		w.quietDone = true
		close(w.quiet)
	}
}

// fetch is the taking goroutine: it claims work for the idle handlers
// until the worker stops or the Queue is closed. It is the only one of the
// worker that waits in Redis (in takeBatch); the handlers claim for
// themselves only while a backlog lasts (runSlot).
func (w *Worker) fetch() {
	defer func() {
		w.mu.Lock()
		w.fetchDone = true
		w.checkQuietLocked()
		w.mu.Unlock()
	}()
	// Between two claims, finished messages wait for the next claim to
	// ack them (a hold); while a claim or a pause runs, they are acked at
	// once.
	defer w.acks.hold(false)
	w.acks.hold(true)
	fails := 0
	for {
		select {
		case <-w.idle:
		case <-w.takeCtx.Done():
			return
		}
		k := w.morePermits(1)
		// When this Queue's next due time is a few milliseconds away,
		// wait for it here rather than in Take, and take the permits
		// and acks of the handlers that finish meanwhile: the claim that
		// follows carries an ack and takes work for all of them.
		at, mine := w.q.timerWait()
		claimNow := false
		if mine {
			if d := time.Until(at); d <= localWaitMax && d < w.vis/4 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-w.takeCtx.Done():
					t.Stop()
					w.q.timerWaitDone(at, true)
					return
				}
				claimNow = true
				k = w.morePermits(k)
			}
			w.q.timerWaitDone(at, false)
		}
		// The first finished message is acked by this claim's script; any
		// others together, now.
		done, _ := w.acks.takeFirst()
		var ms []*Message
		var err error
		more := false // messages are due beyond these: a backlog
		if claimNow && !w.q.isClosed() {
			var next time.Duration
			ms, next, err = w.q.claim(w.takeCtx, k, done)
			more = next == 0
		} else {
			ms, err = w.q.takeBatch(w.takeCtx, k, done)
			more = k > 1 && len(ms) == k
		}
		w.acks.hold(true)
		if done != nil {
			switch {
			case err == nil:
				w.unhold(1)
			case errors.Is(err, ErrLeaseLost):
				w.log.Warn("redisq: worker: lease lost before the ack; the message will be redelivered",
					"queue", w.q.name, "id", done.ID, "attempt", done.Attempts)
				w.unhold(1)
			default: // maybe not acked: the ack goroutine settles it
				w.queueAck(done)
			}
		}
		for range k - len(ms) {
			w.idle <- struct{}{}
		}
		if len(ms) > 0 {
			w.mu.Lock()
			w.held += len(ms)
			stopping := w.stopping
			w.mu.Unlock()
			if stopping { // claimed as Shutdown began: not started
				w.release(ms)
			} else {
				// In a backlog the handlers claim their next messages
				// themselves (see runSlot).
				for _, m := range ms {
					w.jobs <- dispatch{m, more}
				}
			}
		}
		switch {
		case err == nil || errors.Is(err, ErrLeaseLost):
			fails = 0
		case w.takeCtx.Err() != nil:
			return
		case errors.Is(err, ErrClosed):
			w.mu.Lock()
			w.stopping = true
			w.err = ErrClosed
			w.mu.Unlock()
			return
		default:
			fails++
			if fails&(fails-1) == 0 { // 1, 2, 4, 8, ... failures in a row
				w.log.Warn("redisq: worker: Take failed; retrying", "queue", w.q.name, "err", err, "failures", fails)
			}
			w.acks.hold(false)
			t := time.NewTimer(min(10*time.Millisecond<<min(fails-1, 7), time.Second))
			select {
			case <-t.C:
			case <-w.takeCtx.Done():
				t.Stop()
				return
			}
			w.acks.hold(true)
		}
	}
}

// morePermits returns k plus the idle handlers' tokens available now, up
// to the worker's concurrency (and MaxBatch).
func (w *Worker) morePermits(k int) int {
	for k < min(w.n, MaxBatch) {
		select {
		case <-w.idle:
			k++
		default:
			return k
		}
	}
	return k
}

// runSlot runs the handler on d's message, then, while messages are due
// (a backlog: d.more, then each claim's report) and the worker is not
// stopping, acks the message and claims the next one in one script and
// runs it, in this goroutine: in a backlog each handler pays one round trip
// per message, as a consumer looping on AckTake does, with no hand-off
// through the taking goroutine. When nothing more is due, the handler goes
// back to wait for the taking goroutine, the only one of the worker that
// waits in Redis.
func (w *Worker) runSlot(s *slot, d dispatch) {
	m, more := d.m, d.more
	for {
		if !w.runJob(s, m) {
			return
		}
		w.mu.Lock()
		stopping := w.stopping
		w.mu.Unlock()
		if !more || stopping || w.q.isClosed() {
			w.queueAck(m)
			return
		}
		ms, next, err := w.q.claim(w.takeCtx, 1, m)
		switch {
		case err == nil:
			w.unhold(1)
		case errors.Is(err, ErrLeaseLost):
			w.log.Warn("redisq: worker: lease lost before the ack; the message will be redelivered",
				"queue", w.q.name, "id", m.ID, "attempt", m.Attempts)
			w.unhold(1)
			return
		default: // maybe not acked: the ack goroutine settles it
			w.queueAck(m)
			return
		}
		if len(ms) == 0 {
			return
		}
		w.mu.Lock()
		w.held += len(ms)
		w.mu.Unlock()
		m, more = ms[0], next == 0
	}
}

// runJob runs the handler on m in the slot's goroutine and settles a
// failure (Nack or DeadLetter) or a lost lease. It reports whether the
// handler succeeded: the caller then acks m.
func (w *Worker) runJob(s *slot, m *Message) bool {
	w.mu.Lock()
	if w.stopping { // taken as the worker stopped: hand it back unstarted
		w.mu.Unlock()
		w.release([]*Message{m})
		return false
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(w.base, messageKey{}, m))
	j := &job{m: m, cancel: cancel}
	s.cur, s.armed = j, true
	s.timer.Reset(w.every)
	w.mu.Unlock()

	err := w.call(ctx, m)
	var pe *PanicError
	if errors.As(err, &pe) {
		w.log.Error("redisq: worker: handler panicked", "queue", w.q.name, "id", m.ID,
			"attempt", m.Attempts, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}

	w.mu.Lock()
	state := j.state
	if state == jobRunning {
		j.state = jobFinishing
	}
	var wait chan struct{}
	if s.armed && !s.timer.Stop() || j.extending {
		// An extension is starting or running: wait for it, so that none
		// runs after the handler has returned.
		wait = make(chan struct{})
		s.tickWait = wait
	}
	s.armed = false
	s.cur = nil
	lost := j.lost
	w.mu.Unlock()
	if wait != nil {
		<-wait
		w.mu.Lock()
		lost = j.lost
		w.mu.Unlock()
	}
	cancel(nil)

	switch {
	case state == jobReleased:
		return false // hardStop released it and unholds it
	case lost:
		w.log.Warn("redisq: worker: lease lost while the handler ran; result dropped",
			"queue", w.q.name, "id", m.ID, "attempt", m.Attempts, "result", errText(err))
		w.unhold(1)
		return false
	case err == nil:
		return true
	}
	w.settle(m, err)
	w.unhold(1)
	return false
}

func errText(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// call runs the wrapped handler, turning a panic of middleware into a
// *PanicError too (recoverPanics catches the handler's own).
func (w *Worker) call(ctx context.Context, m *Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return w.h(ctx, m)
}

// recoverPanics turns a panic of h into a *PanicError returned by h, so
// that middleware sees it as the handler's error.
func recoverPanics(h Handler) Handler {
	return func(ctx context.Context, m *Message) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		return h(ctx, m)
	}
}

// settle gives back a message whose handler failed, by Outcome: DeadLetter
// for a SkipRetryError, NackAfter for a RetryAfterError, else (a panic
// too) Nack with the backoff; the reason is the error's text (truncated to
// MaxReasonLen). A message that this kills is logged at Warn, whatever the
// middleware: a dead letter waits for an operator.
func (w *Worker) settle(m *Message, herr error) {
	ctx, cancel := context.WithTimeout(w.base, settleTimeout)
	defer cancel()
	reason := herr.Error()
	var out NackOutcome
	var err error
	switch Outcome(herr) {
	case "skip_retry":
		out, err = m.DeadLetter(ctx, reason)
	case "retry_after":
		var later *RetryAfterError
		errors.As(herr, &later)
		var r NackResult
		r, err = m.NackWith(ctx, NackDelay(later.Delay), NackReason(reason))
		out = r.Outcome
	default: // "error", "panic"
		var r NackResult
		r, err = m.NackWith(ctx, NackReason(reason))
		out = r.Outcome
	}
	switch {
	case err != nil:
		w.log.Warn("redisq: worker: settling a failed message failed; it is redelivered after its lease",
			"queue", w.q.name, "id", m.ID, "attempt", m.Attempts, "err", err)
	case out == NackDeadLettered:
		why := "skip retry"
		if Outcome(herr) != "skip_retry" {
			why = "max attempts"
		}
		w.log.Warn("redisq: worker: message dead-lettered", "queue", w.q.name, "id", m.ID,
			"attempt", m.Attempts, "cause", why, "err", reason)
	}
}

// tick extends the lease of the slot's running message; it runs on the
// slot's timer, every third of the visibility timeout while the handler
// runs.
func (w *Worker) tick(s *slot) {
	w.mu.Lock()
	s.armed = false
	j := s.cur
	if j == nil || j.state != jobRunning {
		if s.tickWait != nil {
			close(s.tickWait)
			s.tickWait = nil
		}
		w.mu.Unlock()
		return
	}
	j.extending = true
	w.mu.Unlock()

	start := time.Now()
	ctx, cancel := context.WithTimeout(w.base, min(w.vis, settleTimeout))
	_, ok, err := w.q.db.Extend(ctx, j.m.lease(), delayUS(w.vis))
	cancel()
	if err == nil && !ok {
		err = ErrLeaseLost
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	j.extending = false
	if s.tickWait != nil {
		close(s.tickWait)
		s.tickWait = nil
	}
	if j.state != jobRunning || s.cur != j {
		return
	}
	switch {
	case errors.Is(err, ErrLeaseLost):
		j.lost = true
		j.cancel(fmt.Errorf("redisq: worker: the lease of %q was lost while its handler ran: %w", j.m.ID, ErrLeaseLost))
	case err != nil:
		// The lease has at least 2/3 of the visibility timeout left at
		// the first try: try again soon.
		w.log.Warn("redisq: worker: extending a lease failed; retrying", "queue", w.q.name, "id", j.m.ID, "err", err)
		s.armed = true
		s.timer.Reset(max(w.every/4, time.Millisecond))
	default:
		s.armed = true
		s.timer.Reset(max(w.every-time.Since(start), 0))
	}
}

// queueAck hands a finished message to be acked: by the next claim's
// script when the taking goroutine is about to claim (it waits for this
// handler to be idle), else together with the others waiting, now.
func (w *Worker) queueAck(m *Message) { w.acks.add(m) }

// ack acks ms, retrying a failed round trip twice (an applied ack whose
// reply was lost reports success: see Ack).
func (w *Worker) ack(ms []*Message) {
	ctx, cancel := context.WithTimeout(w.base, settleTimeout)
	defer cancel()
	errs := make([]error, len(ms))
	for try := 0; ; try++ {
		if len(ms) == 1 {
			errs[0] = ms[0].Ack(ctx)
		} else {
			errs = w.q.AckMany(ctx, ms)
		}
		var again []*Message
		var againErrs []error
		for i, err := range errs {
			switch {
			case err == nil:
			case errors.Is(err, ErrLeaseLost):
				w.log.Warn("redisq: worker: lease lost before the ack; the message will be redelivered",
					"queue", w.q.name, "id", ms[i].ID, "attempt", ms[i].Attempts)
			case try < 2 && ctx.Err() == nil:
				again = append(again, ms[i])
				againErrs = append(againErrs, err)
			default:
				w.log.Warn("redisq: worker: ack failed; the message will be redelivered after its lease",
					"queue", w.q.name, "id", ms[i].ID, "err", err)
			}
		}
		if len(again) == 0 {
			return
		}
		t := time.NewTimer(50 * time.Millisecond << try)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		ms, errs = again, againErrs
	}
}
