package redisq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultConcurrency is the number of handlers a Worker runs at once when
// WorkerOptions.Concurrency is 0: enough to overlap handlers that wait on
// I/O, and within go-redis' default pool (10 connections per CPU). Set it
// to what your handlers can run in parallel.
const DefaultConcurrency = 10

// WorkerOptions configures NewWorker and NewMultiWorker. The zero value is
// ready to use.
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
	// StrictPriority makes a Worker over several queues (NewMultiWorker)
	// claim from a queue only while no queue before it has due work,
	// instead of sharing the handlers by weight.
	StrictPriority bool
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

// settleTimeout bounds one Ack, Nack, DeadLetter, Release or lease extension
// of a Worker: they run on a context of their own, so that a message is
// settled after its handler's ctx or Run's has ended.
const settleTimeout = 10 * time.Second

// Worker runs a Handler on the messages of one Queue with a fixed number of
// concurrent handlers: the loop of Take, run, Ack or Nack, lease extension,
// panic recovery and shutdown that every consumer otherwise writes.
// NewMultiWorker makes one over several queues, by weight or strict
// priority, or over a Partitioned queue; what follows is a worker over
// one Queue, and NewMultiWorker says what differs.
//
// One goroutine waits for work for all idle handlers (an idle worker
// costs what one idle Take does, plus its heartbeat: WorkerOptions.
// Heartbeat; how it takes: worker_dispatch.go) and each claim leases work for every idle
// handler at once and acks a finished message in the same script; while a
// backlog lasts, each handler acks its message and claims the next in one
// script, shared by the handlers that finish meanwhile. So a busy worker
// pays one round trip per message or less, and a
// message is leased only for an idle handler, never to wait for one (how:
// docs/redisq-design.md#the-worker). A failed message is settled (Nack,
// DeadLetter) by its handler's goroutine before that handler takes more
// work.
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
	h   Handler
	n   int
	log *slog.Logger
	// The queues it takes from, in priority order (see
	// worker_dispatch.go): NewWorker's one, or NewMultiWorker's.
	srcs   []*source
	strict bool     // srcs by strict priority, not by weight
	beatQs []*Queue // the heartbeat is written to each
	keepQs []*Queue // whose recurring registrations Run keeps
	// recurring: Run keeps the queue's recurring registrations
	// (WorkerOptions.NoRecurring unset).
	recurring bool
	grace     time.Duration // after Run's ctx ends, before a forced stop (< 0: none)
	id        string        // in the heartbeat
	name      string        // in the heartbeat
	beatEvery time.Duration // heartbeat period (<= 0: none)

	jobs chan dispatch // claimed messages for the handlers (capacity n)
	// acks sends the finished messages' acks, one groupCommit per Redis
	// queue (each a round trip of AckMany for those that finish together),
	// so that a queue whose server is slow or down does not hold up the
	// others' acks. A source alone whose take carries an ack holds its
	// queue's between takes (see takeFor).
	acks map[*Queue]*groupCommit[*Message]
	// claimsMu guards claims: per queue, the handlers' acks and next
	// claims in a backlog, combined (see claimNext).
	claimsMu  sync.Mutex
	claims    map[*Queue]*groupCommit[*laneClaim]
	done      chan struct{} // closed when Run has returned (or will, without starting)
	ended     chan struct{} // closed when Run's goroutines have returned
	quiet     chan struct{} // closed when nothing is taken nor held any more
	doneOnce  sync.Once     // closes done
	quietOnce sync.Once     // closes quiet
	forceOnce sync.Once     // runs hardStop

	// gmu guards the grant step: the sources' state (see source) and
	// free.
	gmu  sync.Mutex
	free int // handlers idle and not granted to a source

	mu    sync.Mutex
	phase workerPhase // guarded by mu
	held  int         // guarded by mu: messages taken and not yet settled or released
	err   error       // guarded by mu: what Run returns
	// Set by Run before it starts a goroutine, read-only after:
	lanes      []*lane
	base       context.Context // handlers' parent: Run's values, not its cancellation
	takeCtx    context.Context // the taking goroutine's: ends when the worker stops taking
	cancelTake context.CancelCauseFunc
	// settles is the parent of every Ack, Nack, Release and extension: it
	// ends settleTimeout after a forced stop (hardStop), so that the
	// settles Redis does not answer then are given up together, not one
	// settleTimeout after another; and when Run returns.
	settles    context.Context
	endSettles context.CancelFunc
	// releasing counts hardStop's releases in flight: Run waits for them
	// before it ends settles, since a forced stop by Shutdown runs in
	// Shutdown's goroutine and Run may return before they are sent.
	releasing sync.WaitGroup
}

// workerPhase is where a Worker is in its life; it only moves forward.
type workerPhase int

const (
	phaseNew      workerPhase = iota // Run not called
	phaseStopped                     // stopped before Run: Run returns at once
	phaseRunning                     // Run takes work
	phaseStopping                    // no new work (Shutdown, Run's ctx, a closed Queue)
	phaseDrained                     // the taking goroutine has returned (or Run returned at once)
)

// stoppingLocked reports whether the worker takes no new work. w.mu must
// be held.
func (w *Worker) stoppingLocked() bool { return w.phase == phaseStopped || w.phase >= phaseStopping }

// NewWorker returns a Worker running h (wrapped in opts.Middleware) on q's
// messages. Start it with Run. It panics on a nil q or h or a negative
// Concurrency.
func NewWorker(q *Queue, h Handler, opts WorkerOptions) *Worker {
	if q == nil || h == nil {
		panic("redisq: NewWorker with a nil Queue or Handler")
	}
	return NewMultiWorker(h, opts, WorkerQueue{Queue: q})
}

// newWorker is the Worker over srcs: the first source's first queue gives
// the default logger.
func newWorker(srcs []*source, h Handler, opts WorkerOptions) *Worker {
	n := opts.Concurrency
	if n < 0 {
		panic(fmt.Sprintf("redisq: NewWorker with Concurrency %d", n))
	}
	if n == 0 {
		n = DefaultConcurrency
	}
	log := opts.Logger
	if log == nil {
		log = srcs[0].from.queues()[0].opt.logger
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
		h:         h,
		n:         n,
		srcs:      srcs,
		strict:    opts.StrictPriority,
		free:      n,
		recurring: !opts.NoRecurring,
		grace:     grace,
		id:        newWorkerID(),
		name:      name,
		beatEvery: beat,
		log:       log,
		jobs:      make(chan dispatch, n),
		acks:      map[*Queue]*groupCommit[*Message]{},
		done:      make(chan struct{}),
		ended:     make(chan struct{}),
		quiet:     make(chan struct{}),
	}
	for _, s := range srcs {
		for _, q := range s.from.queues() {
			w.acks[q] = w.newAcks()
		}
		w.beatQs = append(w.beatQs, s.from.queues()...)
		if w.recurring {
			w.keepQs = append(w.keepQs, s.from.keeps()...)
		}
	}
	return w
}

// newAcks returns a groupCommit sending acks with w.ack.
func (w *Worker) newAcks() *groupCommit[*Message] {
	return &groupCommit[*Message]{send: func(_ context.Context, ms []*Message) {
		w.ack(ms)
		w.unhold(len(ms))
	}}
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
	switch w.phase {
	case phaseStopped: // Shutdown came first
		w.phase = phaseDrained
		w.closeDoneLocked()
		w.mu.Unlock()
		return nil
	case phaseNew:
		w.phase = phaseRunning
	default:
		w.mu.Unlock()
		panic("redisq: Worker.Run called twice")
	}
	w.base = context.WithoutCancel(ctx)
	w.takeCtx, w.cancelTake = context.WithCancelCause(w.base)
	w.settles, w.endSettles = context.WithCancel(w.base)
	w.lanes = make([]*lane, w.n)
	for i := range w.lanes {
		s := &lane{}
		s.timer = time.AfterFunc(time.Hour, func() { w.tick(s) })
		s.timer.Stop()
		w.lanes[i] = s
	}
	w.mu.Unlock()

	stopped := make(chan struct{})
	unwatch := context.AfterFunc(ctx, func() { defer close(stopped); w.stopGracefully() })
	var wg sync.WaitGroup
	for _, s := range w.lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range w.jobs {
				w.runLane(s, d)
				w.handlerIdle(1)
			}
		}()
	}
	beatStop, beaten := make(chan struct{}), make(chan struct{})
	go func() { defer close(beaten); w.heartbeat(beatStop) }()

	// The recurring keepers run while the worker takes work.
	keepCtx, stopKeep := context.WithCancel(w.takeCtx)
	var kept sync.WaitGroup
	for _, q := range w.keepQs {
		kept.Add(1)
		go func() {
			defer kept.Done()
			_ = q.KeepRecurring(keepCtx) // nil, or ErrClosed as the taking side sees it
		}()
	}
	w.takeSources()
	w.mu.Lock()
	w.phase = phaseDrained // the taking side has returned
	w.checkQuietLocked()
	w.mu.Unlock()
	stopKeep()
	kept.Wait()
	close(w.jobs)
	wg.Wait()
	for _, g := range w.acks {
		g.flush()
	}
	close(beatStop)
	<-beaten
	close(w.ended)
	if !unwatch() {
		<-stopped
	}
	w.cancelTake(nil)
	w.releasing.Wait() // bounded: hardStop ends settles settleTimeout after it starts
	w.endSettles()
	w.mu.Lock()
	err := w.err
	w.closeDoneLocked()
	w.mu.Unlock()
	return err
}

// queueNames names the worker's queues, for its log records.
func (w *Worker) queueNames() string {
	names := make([]string, len(w.srcs))
	for i, s := range w.srcs {
		names[i] = s.name
	}
	return strings.Join(names, ",")
}

func (w *Worker) closeDoneLocked() { w.doneOnce.Do(func() { close(w.done) }) }

// Shutdown stops the worker: it takes no more work at once (a Take waiting
// for work returns), lets the running handlers finish and settles their
// messages, and returns nil when Run has returned. If ctx ends first, it
// cancels the handlers' contexts (cause ErrWorkerStopped), hands every
// message still held back at once with Message.Release (no attempt
// counted; another consumer gets it within a round trip, not after the
// visibility timeout), waits for the messages being settled (those that
// Redis does not answer are given up 10 s after ctx ends; a round trip
// under way then ends at the client's ReadTimeout, or its DialTimeout for
// a new connection), and returns
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
			"queue", w.queueNames(), "shutdown_timeout", w.grace)
		w.stop(true)
	}
}

// stop ends taking and, with force, cancels the running handlers and
// releases their messages (returning when that is done). It reports
// whether Run had started.
func (w *Worker) stop(force bool) bool {
	w.mu.Lock()
	switch w.phase {
	case phaseNew, phaseStopped: // Run, if called later, returns at once
		w.phase = phaseStopped
		w.closeDoneLocked()
		w.mu.Unlock()
		return false
	case phaseRunning:
		w.phase = phaseStopping
	}
	cancel := w.cancelTake
	w.mu.Unlock()
	if cancel == nil { // Run saw the stop and returned
		return true
	}
	cancel(ErrWorkerStopped)
	if force {
		w.forceOnce.Do(w.hardStop)
	}
	return true
}

// hardStop cancels every running handler and releases its message, and
// gives every settle, from now on, settleTimeout in all.
func (w *Worker) hardStop() {
	time.AfterFunc(settleTimeout, w.endSettles)
	w.mu.Lock()
	var js []*job
	for _, s := range w.lanes {
		if j := s.cur; j != nil && j.state == jobRunning {
			j.state = jobReleased
			js = append(js, j)
		}
	}
	if len(js) == 0 {
		w.mu.Unlock()
		return
	}
	// Added under mu with the jobs' state, so before their lanes return
	// and Run can wait.
	w.releasing.Add(1)
	defer w.releasing.Done()
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
			ctx, cancel := context.WithTimeout(w.settles, settleTimeout)
			defer cancel()
			err := m.Release(ctx)
			switch {
			case unconfirmed(err):
				w.warnUnconfirmed("release", m, err)
			case err != nil && !errors.Is(err, ErrLeaseLost):
				w.log.Warn("redisq: worker: releasing a message failed; it is redelivered after its lease",
					"queue", m.q.name, "id", m.ID, "err", err)
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
	if w.phase == phaseDrained && w.held == 0 {
		w.quietOnce.Do(func() { close(w.quiet) })
	}
}
