package redisq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A Worker over several queues, or over a Partitioned one (NewMultiWorker).
//
// Over several queues, the idle handlers are the worker's to share: a
// handler goes to one queue before anything is leased for it, so that a
// message still never waits for a handler. Each queue has a taker (the
// goroutine that claims for it) and a waiter per Redis queue (one, or one
// per partition) that waits, leasing nothing, until the queue may have
// due work (Queue.waitWork). A queue that may have due work is ready; the
// grant step hands each idle handler to a ready queue, by smooth weighted
// round robin or by strict priority, and the queue's taker claims for the
// handlers it was granted (Queue.claimDue, or Partitioned.TakeBatch).
// A claim that leaves nothing due makes the queue not ready: its
// unused handlers go back to the others and its waiters wait again. So an
// idle queue costs what one idle consumer does (its waiter blocks on the
// queue's wake marker), a busy one a claim per batch, and nothing polls.
//
// Over one Partitioned queue and nothing else, the worker's taking
// goroutine takes as Partitioned.TakeBatch does, which merges the
// partitions in due order.

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

// source is one queue of a Worker over several, as its grant step sees
// it. The fields after name are guarded by the worker's gmu.
type source struct {
	q      *Queue       // an ordinary queue, or nil
	p      *Partitioned // or a partitioned one
	waits  []*Queue     // what the waiters wait on: q, or p's partitions
	weight int
	name   string

	ready bool // due work may wait: the taker claims when granted handlers
	// pausing: the taker's claim failed and it waits before the next; no
	// handler is granted to it meanwhile.
	pausing bool
	// failing: the last claim failed; the taker gets one handler at a
	// time (a probe) until a claim succeeds.
	failing bool
	got     int // handlers granted to the taker and not yet claimed for
	cur     int // smooth weighted round robin's current weight
	// owed counts wake-ups that the waiters consumed for the taker's next
	// claim: passed on to another consumer if no claim comes.
	owed int
	// notReady is closed when ready turns false; the waiters wait on it
	// while the queue is ready.
	notReady chan struct{}
	kick     chan struct{} // capacity 1: got grew
}

// partTakeWait bounds a Partitioned queue's claim in a Worker over several
// queues: the handlers granted to it go back to the others if nothing
// comes by then (its waiter's wake-up was for an item that another
// consumer took).
const partTakeWait = 20 * time.Millisecond

// NewMultiWorker returns a Worker running h on the messages of several
// queues, ordinary or partitioned: one pool of opts.Concurrency handlers
// shared by weight (WorkerQueue.Weight) or by strict priority
// (WorkerOptions.StrictPriority: a queue's due work is claimed only while
// no queue before it has any). With one WorkerQueue it is NewWorker for
// that queue, or for a Partitioned one a Worker taking as
// Partitioned.TakeBatch does, in due order across the partitions.
//
// Every queue costs what one idle consumer of it does while it has no
// work (a blocking wait on its wake marker, one per partition), so an
// idle worker over k queues costs what k idle Workers do; a handler is
// granted to a queue before a message is leased for it. The worker keeps
// the recurring registrations of its ordinary queues (unless
// opts.NoRecurring), writes its heartbeat to each queue (each partition),
// and acks each message on its own queue. Unlike a Worker over one Queue,
// a worker over several does not ack in its next claim's script: each ack
// is a round trip of its own, combined with the others of its queue that
// finish meanwhile (each queue's acks apart, so that a slow server holds
// up only its own).
//
// It panics on a nil h, no queues, a WorkerQueue with neither or both of
// Queue and Partitioned, a negative Weight, a queue given twice, or a
// negative Concurrency.
func NewMultiWorker(h Handler, opts WorkerOptions, queues ...WorkerQueue) *Worker {
	if len(queues) == 0 {
		panic("redisq: NewMultiWorker with no queues")
	}
	if len(queues) == 1 && queues[0].Queue != nil && queues[0].Partitioned == nil && queues[0].Weight >= 0 {
		return NewWorker(queues[0].Queue, h, opts)
	}
	if h == nil {
		panic("redisq: NewMultiWorker with a nil Handler")
	}
	seen := map[string]bool{}
	var srcs []*source
	for i, wq := range queues {
		s := &source{q: wq.Queue, p: wq.Partitioned, weight: wq.Weight, kick: make(chan struct{}, 1)}
		switch {
		case (s.q == nil) == (s.p == nil):
			panic(fmt.Sprintf("redisq: NewMultiWorker: queue %d must set one of Queue and Partitioned", i))
		case s.weight < 0:
			panic(fmt.Sprintf("redisq: NewMultiWorker: queue %d has weight %d", i, s.weight))
		case s.weight == 0:
			s.weight = 1
		}
		if s.q != nil {
			s.name, s.waits = s.q.name, []*Queue{s.q}
		} else {
			s.name, s.waits = s.p.name, s.p.parts
		}
		for _, q := range s.waits {
			if seen[q.name] {
				panic(fmt.Sprintf("redisq: NewMultiWorker: queue %q given twice", q.name))
			}
			seen[q.name] = true
		}
		// Ready at the start: the first claims find out.
		s.ready, s.notReady = true, make(chan struct{})
		srcs = append(srcs, s)
	}
	first := srcs[0].waits[0]
	w := newWorker(first, h, opts)
	w.q = nil
	w.srcs = srcs
	w.strict = opts.StrictPriority
	w.free = w.n
	w.queueAcks = map[*Queue]*groupCommit[*Message]{}
	for _, s := range srcs {
		for _, q := range s.waits {
			w.queueAcks[q] = w.newAcks()
		}
		w.beatQs = append(w.beatQs, s.waits...)
		if s.q != nil && w.recurring {
			w.keepQs = append(w.keepQs, s.q)
		}
	}
	return w
}

// multi reports whether the worker takes from sources (NewMultiWorker)
// rather than from one Queue.
func (w *Worker) multi() bool { return w.srcs != nil }

// takeSources is the taking side of a worker over sources: a taker per
// source (or, for one Partitioned queue alone, its blocking take) and the
// waiters, until the worker stops or a queue is closed.
func (w *Worker) takeSources() {
	if len(w.srcs) == 1 && w.srcs[0].p != nil {
		w.takePartitioned(w.srcs[0].p)
		return
	}
	w.gmu.Lock()
	w.grantLocked()
	w.gmu.Unlock()
	var wg sync.WaitGroup
	for _, s := range w.srcs {
		wg.Add(1)
		go func() { defer wg.Done(); w.takeFor(s) }()
		for _, q := range s.waits {
			wg.Add(1)
			go func() { defer wg.Done(); w.waitFor(s, q) }()
		}
		if s.p != nil {
			wg.Add(1)
			go func() { defer wg.Done(); w.watchHeld(s) }()
		}
	}
	wg.Wait()
}

// handlerIdle gives back a handler that finished: to the taking goroutine
// (one Queue) or to the grant step.
func (w *Worker) handlerIdle(k int) {
	if k <= 0 {
		return
	}
	if !w.multi() || len(w.srcs) == 1 && w.srcs[0].p != nil {
		for range k {
			w.idle <- struct{}{}
		}
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
// its granted handlers back and lets its waiters wait. w.gmu must be held.
func (w *Worker) setReadyLocked(s *source, ready bool) {
	if s.ready == ready {
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
					// No claim comes for them now: another consumer acts.
					s.owed = 0
					w.gmu.Unlock()
					s.waits[0].passWake()
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

// takeFor is s's taker: it claims for the handlers granted to s and
// dispatches what it leased, until the worker stops taking.
func (w *Worker) takeFor(s *source) {
	defer func() {
		// Wake-ups consumed for a claim that will not come now.
		w.gmu.Lock()
		owed := s.owed
		s.owed = 0
		w.gmu.Unlock()
		if owed > 0 {
			s.waits[0].passWake()
		}
	}()
	fails := 0
	for {
		k, ok := w.awaitGrant(s)
		if !ok {
			return
		}
		var ms []*Message
		var more bool
		var err error
		if s.q != nil {
			ms, more, err = s.q.claimDue(w.takeCtx, k)
		} else {
			ctx, cancel := context.WithTimeout(w.takeCtx, partTakeWait)
			ms, err = s.p.TakeBatch(ctx, k)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) && w.takeCtx.Err() == nil {
				err = nil // nothing came: not ready
			}
			// Items the take's claims brought beyond these wait for the
			// next one.
			more = len(ms) == k || s.p.tk.heldLen() > 0
		}
		w.deliver(ms)
		failed := err != nil && w.takeCtx.Err() == nil && !errors.Is(err, ErrClosed)
		w.gmu.Lock()
		w.free += k - len(ms)
		if err == nil {
			s.owed = 0 // the claim acted on them
		}
		// A failed claim keeps s ready, since its waiters would not look
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
		again := w.goOn(err, &fails, "Take", s.name)
		if failed {
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

// waitFor is the waiter of s's queue q (s's own, or one of its
// partitions): while s is not ready it waits for q to have work, then
// makes s ready.
func (w *Worker) waitFor(s *source, q *Queue) {
	// The first wait follows the start, when s is ready: the taker's claim
	// has just looked when it turns not ready, so the wait need not.
	peek := s.p != nil // a Partitioned's take does not tell which partition is empty
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
		owe := wk.owes()
		if !w.goOn(err, &fails, "waiting for work", q.name) {
			return
		}
		if err != nil {
			peek = true
			continue
		}
		peek = s.p != nil
		w.gmu.Lock()
		w.setReadyLocked(s, true)
		// A Partitioned queue's claims are its taker's, whose partition
		// waits may sleep on the same marker: the wake-up goes to them.
		pass := owe && (s.got == 0 || s.p != nil)
		if owe && !pass {
			s.owed++
		}
		w.gmu.Unlock()
		if pass {
			// No handler for s now: pass the wake-up on to another
			// consumer; the taker claims when a handler is granted.
			q.passWake()
		}
	}
}

// watchHeld makes a Partitioned source ready whenever its queue holds
// claimed items that no take has (they came after the last take returned).
func (w *Worker) watchHeld(s *source) {
	ch, stop := s.p.tk.watchHeld()
	defer stop()
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

// takePartitioned is the taking side of a worker over one Partitioned
// queue: each idle handler waits in a Partitioned.Take of its own, as
// concurrent consumers do, so the queue's taker merges the partitions for
// every idle handler at once (the taker batches their claims).
func (w *Worker) takePartitioned(p *Partitioned) {
	var wg sync.WaitGroup
	for range w.n {
		wg.Add(1)
		go func() { defer wg.Done(); w.takePartitionedOne(p) }()
	}
	wg.Wait()
}

// takePartitionedOne takes p's items, one per idle handler, until the
// worker stops taking.
func (w *Worker) takePartitionedOne(p *Partitioned) {
	fails := 0
	for {
		select {
		case <-w.idle:
		case <-w.takeCtx.Done():
			return
		}
		ms, err := p.TakeBatch(w.takeCtx, 1)
		w.deliver(ms)
		if len(ms) == 0 {
			w.idle <- struct{}{}
		}
		if !w.goOn(err, &fails, "Take", p.name) {
			return
		}
	}
}

// deliver hands leased messages to the handlers (which were idle for
// them), or back at once when the worker is stopping.
func (w *Worker) deliver(ms []*Message) {
	if len(ms) == 0 {
		return
	}
	w.mu.Lock()
	w.held += len(ms)
	stopping := w.stoppingLocked()
	w.mu.Unlock()
	if stopping { // claimed as Shutdown began: not started
		w.release(ms)
		w.handlerIdle(len(ms))
		return
	}
	for _, m := range ms {
		w.jobs <- dispatch{m: m}
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
