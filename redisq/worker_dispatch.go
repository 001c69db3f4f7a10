package redisq

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// The taking side of a Worker: one dispatcher over its sources (queues,
// ordinary or partitioned: see workSource).
//
// The idle handlers are the worker's to share: a handler goes to one
// source before anything is leased for it, so that a message never waits
// for a handler. Each source has a taker (the goroutine that takes for
// it) and, when it shares the handlers with others, a waiter per Redis
// queue that waits, leasing nothing, until the queue may have due work
// (Queue.waitWork). A source that may have due work is ready; the grant
// step hands each idle handler to a ready source, by smooth weighted
// round robin or by strict priority, and the source's taker takes for the
// handlers it was granted. A take that leaves nothing due makes the
// source not ready: its unused handlers go back to the others and its
// waiters wait again. So an idle source costs what one idle consumer
// does (its waiter blocks on the queue's wake marker), a busy one a claim
// per batch, and nothing polls.
//
// A source alone is always ready: its take waits in Redis itself, as
// Take does, and carries the ack of a finished message when it can (the
// acks of its queue are held between takes for that). Alone and a Queue,
// its handlers also ack their message and claim their next one
// themselves while a backlog lasts (runLane), without the dispatcher.

// dispatch is a message for a handler; more says that more messages were
// due when it was claimed, and that its handler may claim the next one
// itself (see runLane).
type dispatch struct {
	m    *Message
	more bool
}

// WorkerQueue is one of the queues of a Worker over several
// (NewMultiWorker): an ordinary Queue or a Partitioned one, and its share.
type WorkerQueue struct {
	// Queue or Partitioned is the queue; set one of them.
	Queue       *Queue
	Partitioned *Partitioned
	// Weight is the queue's share of the worker's claims while every
	// queue has work: each gets Weight / (the sum of the ready queues'
	// weights) of them, and a queue with no due work leaves its share to
	// the others (0 means 1). With WorkerOptions.StrictPriority the
	// queues' order is their priority and Weight is ignored.
	Weight int
}

// source is one source of a Worker, as its grant step sees it. The fields
// after alone are guarded by the worker's gmu.
type source struct {
	from   workSource
	weight int
	name   string
	alone  bool // the worker's only source: always ready, its take waits

	ready bool // due work may wait: the taker takes when granted handlers
	// pausing: the taker's take failed and it waits before the next; no
	// handler is granted to it meanwhile.
	pausing bool
	// failing: the last take failed; the taker gets one handler at a
	// time (a probe) until a take succeeds.
	failing bool
	got     int // handlers granted to the taker and not yet taken for
	cur     int // smooth weighted round robin's current weight
	// owed counts wake-ups that the waiters consumed for the taker's next
	// take: passed on to another consumer if no take comes.
	owed int
	// notReady is closed when ready turns false; the waiters wait on it
	// while the source is ready.
	notReady chan struct{}
	kick     chan struct{} // capacity 1: got grew
}

// NewMultiWorker returns a Worker running h on the messages of several
// queues, ordinary or partitioned: one pool of opts.Concurrency handlers
// shared by weight (WorkerQueue.Weight) or by strict priority
// (WorkerOptions.StrictPriority: a queue's due work is claimed only while
// no queue before it has any). With one WorkerQueue it is the Worker of
// that queue alone (NewWorker's, for a Queue), which for a Partitioned
// queue takes as Partitioned.TakeBatch does, in due order across the
// partitions.
//
// Every queue costs what one idle consumer of it does while it has no
// work (a blocking wait on its wake marker, one per partition), so an
// idle worker over k queues costs what k idle Workers do; a handler is
// granted to a queue before a message is leased for it. The worker keeps
// the recurring registrations of its queues (every partition's; unless
// opts.NoRecurring), writes its heartbeat to each queue (each partition),
// and acks each message on its own queue, each queue's acks apart (so
// that a slow server holds up only its own). Unlike a Worker over one
// Queue, a worker over several does not ack in its next claim's script,
// nor do its handlers claim their next messages themselves in a backlog
// (which would bypass the shares): each ack is a round trip of its own,
// combined with the others of its queue that finish meanwhile.
//
// It panics on a nil h, no queues, a WorkerQueue with neither or both of
// Queue and Partitioned, a negative Weight, a queue given twice, or a
// negative Concurrency.
func NewMultiWorker(h Handler, opts WorkerOptions, queues ...WorkerQueue) *Worker {
	if len(queues) == 0 {
		panic("redisq: NewMultiWorker with no queues")
	}
	if h == nil {
		panic("redisq: NewMultiWorker with a nil Handler")
	}
	seen := map[string]bool{}
	var srcs []*source
	for i, wq := range queues {
		s := &source{weight: wq.Weight, kick: make(chan struct{}, 1)}
		switch {
		case (wq.Queue == nil) == (wq.Partitioned == nil):
			panic(fmt.Sprintf("redisq: NewMultiWorker: queue %d must set one of Queue and Partitioned", i))
		case s.weight < 0:
			panic(fmt.Sprintf("redisq: NewMultiWorker: queue %d has weight %d", i, s.weight))
		case s.weight == 0:
			s.weight = 1
		}
		if wq.Queue != nil {
			s.from = wq.Queue
		} else {
			s.from = wq.Partitioned
		}
		s.name = s.from.sourceName()
		for _, q := range s.from.queues() {
			if seen[q.name] {
				panic(fmt.Sprintf("redisq: NewMultiWorker: queue %q given twice", q.name))
			}
			seen[q.name] = true
		}
		// Ready at the start: the first takes find out.
		s.ready, s.notReady = true, make(chan struct{})
		srcs = append(srcs, s)
	}
	srcs[0].alone = len(srcs) == 1
	return newWorker(srcs, h, opts)
}

// takeSources is the taking side: a taker per source, and the waiters of
// the sources that share the handlers, until the worker stops or a queue
// is closed.
func (w *Worker) takeSources() {
	w.gmu.Lock()
	w.grantLocked()
	w.gmu.Unlock()
	var wg sync.WaitGroup
	for _, s := range w.srcs {
		wg.Go(func() { w.takeFor(s) })
		if s.alone {
			continue
		}
		for _, q := range s.from.queues() {
			wg.Go(func() { w.waitFor(s, q) })
		}
		if ch, stop := s.from.held(); ch != nil {
			wg.Go(func() { defer stop(); w.watchHeld(s, ch) })
		}
	}
	wg.Wait()
}

// handlerIdle gives back k handlers that finished to the grant step.
func (w *Worker) handlerIdle(k int) {
	if k <= 0 {
		return
	}
	w.gmu.Lock()
	w.free += k
	w.grantLocked()
	w.gmu.Unlock()
}

// grantLocked hands the free handlers to ready sources. w.gmu must be
// held.
func (w *Worker) grantLocked() {
	for w.free > 0 {
		s := w.pickLocked()
		if s == nil {
			return
		}
		w.free--
		s.got++
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// pickLocked chooses the ready source that gets the next handler: the
// first ready one under strict priority, else by smooth weighted round
// robin (nginx's: each ready source gains its weight, the one with the
// most gets the handler and loses the ready sources' total), which spreads
// a queue's share evenly over time. w.gmu must be held.
func (w *Worker) pickLocked() *source {
	var best *source
	total := 0
	for _, s := range w.srcs {
		if !s.ready || s.pausing || s.failing && s.got > 0 {
			continue
		}
		if w.strict {
			return s
		}
		s.cur += s.weight
		total += s.weight
		if best == nil || s.cur > best.cur {
			best = s
		}
	}
	if best != nil {
		best.cur -= total
	}
	return best
}

// higherReadyLocked reports whether a source before s is ready (strict
// priority). w.gmu must be held.
func (w *Worker) higherReadyLocked(s *source) bool {
	for _, o := range w.srcs {
		if o == s {
			return false
		}
		if o.ready && !o.pausing && !o.failing {
			return true
		}
	}
	return false
}

// setReadyLocked marks s ready or not: a source that turns not ready gives
// its granted handlers back and lets its waiters wait. A source alone is
// always ready. w.gmu must be held.
func (w *Worker) setReadyLocked(s *source, ready bool) {
	if s.alone || s.ready == ready {
		return
	}
	s.ready = ready
	if ready {
		s.notReady = make(chan struct{})
	} else {
		w.free += s.got
		s.got = 0
		close(s.notReady)
	}
	w.grantLocked()
}

// awaitGrant waits until handlers are granted to s and returns how many
// (at most MaxBatch); false when the worker stops taking. Under strict
// priority, handlers granted while no queue before s was ready go to that
// queue instead if it is ready now.
func (w *Worker) awaitGrant(s *source) (int, bool) {
	for {
		w.gmu.Lock()
		if s.got > 0 {
			if w.strict && w.higherReadyLocked(s) {
				w.free += s.got
				s.got = 0
				w.grantLocked()
				if s.owed > 0 {
					// No take comes for them now: another consumer acts.
					s.owed = 0
					w.gmu.Unlock()
					s.from.queues()[0].passWake()
					continue
				}
			} else {
				k := min(s.got, MaxBatch)
				s.got -= k
				w.gmu.Unlock()
				return k, true
			}
		}
		w.gmu.Unlock()
		select {
		case <-s.kick:
		case <-w.takeCtx.Done():
			return 0, false
		}
	}
}

// grantedMore returns k plus the handlers granted to s since awaitGrant
// returned, up to MaxBatch (for a take that waited on its own).
func (w *Worker) grantedMore(s *source, k int) int {
	w.gmu.Lock()
	defer w.gmu.Unlock()
	more := min(s.got, MaxBatch-k)
	s.got -= more
	return k + more
}

// takeFor is s's taker: it takes for the handlers granted to s and
// dispatches what it leased, until the worker stops taking. A source
// whose take carries an ack has its queue's acks held between takes, and
// each take carries the first of them (the others go at once).
func (w *Worker) takeFor(s *source) {
	acks := s.from.acksInTake() && s.alone
	var held *groupCommit[*Message]
	if acks {
		held = w.acks[s.from.queues()[0]]
		held.hold(true)
		defer held.hold(false)
	}
	defer func() {
		// Wake-ups consumed for a take that will not come now.
		w.gmu.Lock()
		owed := s.owed
		s.owed = 0
		w.gmu.Unlock()
		if owed > 0 {
			s.from.queues()[0].passWake()
		}
	}()
	lanes := s.from.laneClaims(s.alone)
	fails := 0
	for {
		k, ok := w.awaitGrant(s)
		if !ok {
			return
		}
		var done *Message
		first := func() *Message {
			if acks {
				done, _ = held.takeFirst()
			}
			return done
		}
		granted := k
		grow := func(n int) int {
			g := w.grantedMore(s, n)
			granted += g - n
			return g
		}
		ms, more, err := s.from.take(w.takeCtx, k, grow, first, s.alone)
		if acks {
			held.hold(true)
		}
		if done != nil {
			w.settledByTake(done, err)
		}
		if errors.Is(err, ErrLeaseLost) || unconfirmed(err) {
			err = nil // done's outcome, logged; what was taken is taken
		}
		w.deliver(ms, more && lanes)
		failed := err != nil && w.takeCtx.Err() == nil && !errors.Is(err, ErrClosed)
		w.gmu.Lock()
		w.free += granted - len(ms)
		if err == nil {
			s.owed = 0 // the take acted on them
		}
		// A failed take keeps s ready, since its waiters would not look
		// before the wake cap, but pausing: its handlers go to the other
		// queues until the taker retries.
		w.setReadyLocked(s, failed || more)
		s.failing = failed
		if failed {
			s.pausing = true
			w.free += s.got
			s.got = 0
		}
		w.grantLocked()
		w.gmu.Unlock()
		if failed && acks {
			held.hold(false) // the pause: the acks go at once
		}
		again := w.goOn(err, &fails, "Take", s.name)
		if failed {
			if acks {
				held.hold(true)
			}
			w.gmu.Lock()
			s.pausing = false
			w.grantLocked()
			w.gmu.Unlock()
		}
		if !again {
			return
		}
	}
}

// settledByTake records what a take that carried done's ack did with it
// (err is the take's).
func (w *Worker) settledByTake(done *Message, err error) {
	if w.acked(done, err) || done.acked.Load() { // acked by the take; what followed may have failed
		w.unhold(1)
		return
	}
	w.queueAck(done) // maybe not acked: the ack goroutine settles it
}

// waitFor is the waiter of s's queue q (s's own, or one of its
// partitions): while s is not ready it waits for q to have work, then
// makes s ready.
func (w *Worker) waitFor(s *source, q *Queue) {
	// The first wait follows the start, when s is ready: the taker's take
	// has just looked when it turns not ready, so the wait need not. A
	// Partitioned's take does not tell which partition is empty: its
	// waiters look.
	_, partitioned := s.from.(*Partitioned)
	peek := partitioned
	fails := 0
	for {
		w.gmu.Lock()
		ch := s.notReady
		ready := s.ready
		w.gmu.Unlock()
		if ready {
			select {
			case <-ch:
			case <-w.takeCtx.Done():
				return
			}
		}
		wk, err := q.waitWork(w.takeCtx, peek)
		if !w.goOn(err, &fails, "waiting for work", q.name) {
			return
		}
		if err != nil {
			peek = true
			continue
		}
		peek = partitioned
		owe := wk.owes()
		w.gmu.Lock()
		w.setReadyLocked(s, true)
		// A Partitioned queue's claims are its taker's, whose partition
		// waits may sleep on the same marker: the wake-up goes to them.
		pass := owe && (s.got == 0 || partitioned)
		if owe && !pass {
			s.owed++
		}
		w.gmu.Unlock()
		if pass {
			// No handler for s now: pass the wake-up on to another
			// consumer; the taker takes when a handler is granted.
			q.passWake()
		}
	}
}

// watchHeld makes s ready whenever items claimed for it wait in the
// process for a take (a Partitioned's that came after its last take).
func (w *Worker) watchHeld(s *source, ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		case <-w.takeCtx.Done():
			return
		}
		w.gmu.Lock()
		w.setReadyLocked(s, true)
		w.gmu.Unlock()
	}
}

// deliver hands leased messages to the handlers (which were granted for
// them), or back at once when the worker is stopping; more lets their
// handlers claim their next messages themselves (runLane).
func (w *Worker) deliver(ms []*Message, more bool) {
	if len(ms) == 0 {
		return
	}
	w.mu.Lock()
	w.held += len(ms)
	stopping := w.stoppingLocked()
	w.mu.Unlock()
	if stopping { // taken as Shutdown began: not started
		w.release(ms)
		w.handlerIdle(len(ms))
		return
	}
	for _, m := range ms {
		w.jobs <- dispatch{m: m, more: more}
	}
}

// closedQueue stops the worker because one of its queues was closed: Run
// returns ErrClosed once the running handlers are settled.
func (w *Worker) closedQueue() {
	w.mu.Lock()
	w.phase = max(w.phase, phaseStopping)
	w.err = ErrClosed
	w.mu.Unlock()
	w.cancelTake(ErrClosed)
}

// goOn reports whether a taking goroutine goes on after a step that
// returned err: at once after a success, after a pause (logged at the 1st,
// 2nd, 4th, ... failure in a row of what) after a Redis error; not when
// the worker stops taking, nor after ErrClosed, which stops the worker.
// fails counts the failures in a row.
func (w *Worker) goOn(err error, fails *int, what, queue string) bool {
	switch {
	case err == nil:
		*fails = 0
		return true
	case w.takeCtx.Err() != nil:
		return false
	case errors.Is(err, ErrClosed):
		w.closedQueue()
		return false
	}
	*fails++
	if *fails&(*fails-1) == 0 {
		w.log.Warn("redisq: worker: "+what+" failed; retrying", "queue", queue, "err", err, "failures", *fails)
	}
	return w.pause(*fails)
}

// pause waits after the fails-th failure in a row (10ms, doubling up to
// 1s); false when the worker stops taking meanwhile.
func (w *Worker) pause(fails int) bool {
	t := time.NewTimer(min(10*time.Millisecond<<min(fails-1, 7), time.Second))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.takeCtx.Done():
		return false
	}
}
