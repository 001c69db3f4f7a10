package redisq

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// The handlers of a Worker: each lane runs one message at a time, extends
// its lease while it runs, and settles it by the handler's result.

// lane is one of the worker's n handlers: its goroutine's running job and
// the timer that extends that job's lease.
type lane struct {
	timer    *time.Timer   // fires tick; guarded by the worker's mu (Reset/Stop)
	cur      *job          // guarded by mu: the running message, or nil
	armed    bool          // guarded by mu: timer set, tick not yet started
	tickWait chan struct{} // guarded by mu: closed by tick for an ending job
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

// runLane runs the handler on d's message, then, while messages are due
// (a backlog: d.more, then each claim's report) and the worker is not
// stopping, acks the message and claims the next one in one script and
// runs it, in this goroutine: in a backlog each handler pays at most one
// round trip per message, as a consumer looping on AckTake does (less: the
// handlers that finish together share one, see claimNext), with no
// hand-off through the taking goroutine. When nothing more is due, the handler goes
// back to wait for the taking goroutine, the only one of the worker that
// waits in Redis.
func (w *Worker) runLane(s *lane, d dispatch) {
	m, more := d.m, d.more
	for {
		if !w.runJob(s, m) {
			return
		}
		w.mu.Lock()
		stopping := w.stoppingLocked()
		w.mu.Unlock()
		if !more || stopping || m.q.isClosed() {
			w.queueAck(m)
			return
		}
		c := w.claimNext(m)
		if c.err != nil { // maybe not acked: the ack goroutine settles it
			w.queueAck(m)
			return
		}
		w.acked(m, c.ackErr)
		w.unhold(1)
		if c.next == nil {
			return
		}
		m, more = c.next, c.more
	}
}

// laneClaim is a handler's ack of its message and claim of its next one,
// in a backlog (runLane), and what it got.
type laneClaim struct {
	done *Message
	// Set by the batch that carried it, before claimNext returns:
	next *Message // claimed for this handler (held), or nil
	more bool     // messages were due beyond the claim's
	// ackErr is done's ack: nil, ErrLeaseLost (not acked), or an
	// ErrNotReplicated (acked on the master, not confirmed by the
	// replicas); next and more are set all the same.
	ackErr error
	err    error // the round trip failed: done may or may not be acked

	mu   sync.Mutex
	sent bool // guarded by mu: its batch returned, the fields above are set
	gone bool // guarded by mu: claimNext gave up waiting (the worker stops)
}

// claimNext acks done and claims the next message for its handler. The
// handlers of one queue that finish while such a round trip is in flight
// go together in the next one (ack_many_claim: one script and one TIME for
// all), so that in a backlog the handlers share round trips instead of
// queueing for the server one by one; a handler alone pays what AckTake
// does. Two round trips may be in flight (spread 2): with one at a time
// the drain measured no faster than one round trip per handler, with two
// a Worker of 4 handlers drained 20,000 items about 1.3x faster for about
// a quarter less server CPU per item (interleaved runs, medians;
// docs/performance.md). It returns when its round trip has, or at once when the worker
// stops taking while it waits: then err is set, and what the round trip
// claims for it is released when it returns.
func (w *Worker) claimNext(done *Message) *laneClaim {
	c := &laneClaim{done: done}
	if err := w.claimsOf(done.q).do(w.takeCtx, c); err != nil {
		c.mu.Lock()
		if !c.sent {
			c.gone = true
			c.mu.Unlock()
			return &laneClaim{done: done, err: context.Cause(w.takeCtx)}
		}
		c.mu.Unlock()
	}
	return c
}

// claimsOf returns the groupCommit of q's handlers' claims.
func (w *Worker) claimsOf(q *Queue) *groupCommit[*laneClaim] {
	w.claimsMu.Lock()
	defer w.claimsMu.Unlock()
	g := w.claims[q]
	if g == nil {
		g = &groupCommit[*laneClaim]{
			// Every call is the worker's, under takeCtx: a stop keeps a
			// batch from being sent, as it does a lone claim (groupCommit
			// would run a batch of several calls under no cancellation).
			// One already sent gets its reply (go-redis stops a read at a
			// context's deadline, and takeCtx has none), and what it
			// claimed for handlers that gave up is released; unless the
			// server stalls past the client's ReadTimeout, when go-redis
			// does not retry under the cancelled ctx and, as with any
			// lost reply, the items wait for their visibility timeout.
			send:   func(_ context.Context, cs []*laneClaim) { w.sendClaims(w.takeCtx, q, cs) },
			limit:  func(cs []*laneClaim) int { return min(len(cs), rdb.ScriptBatch) },
			spread: 2,
		}
		if w.claims == nil {
			w.claims = map[*Queue]*groupCommit[*laneClaim]{}
		}
		w.claims[q] = g
	}
	return g
}

// sendClaims acks the messages of cs and claims one message for each in
// one round trip, and gives each its outcome. A claim whose caller has
// given up (gone) has its message released.
func (w *Worker) sendClaims(ctx context.Context, q *Queue, cs []*laneClaim) {
	dones := make([]*Message, len(cs))
	for i, c := range cs {
		dones[i] = c.done
	}
	ms, next, acked, err := q.ackClaim(ctx, dones)
	w.mu.Lock()
	w.held += len(ms)
	w.mu.Unlock()
	var orphans []*Message
	nr := unconfirmed(err) // the script ran: its items are handed out
	for i, c := range cs {
		c.mu.Lock()
		c.sent = true
		if err != nil && !nr {
			c.err = err
		} else {
			switch {
			case !acked[i]:
				c.ackErr = ErrLeaseLost
			case nr:
				c.ackErr = err
			}
			c.more = next == 0
			if i < len(ms) {
				c.next = ms[i]
			}
		}
		if c.gone && c.next != nil {
			orphans = append(orphans, c.next)
		}
		c.mu.Unlock()
	}
	if len(orphans) > 0 {
		w.release(orphans)
	}
}

// runJob runs the handler on m in the lane's goroutine and settles a
// failure (Nack or DeadLetter) or a lost lease. It reports whether the
// handler succeeded: the caller then acks m.
func (w *Worker) runJob(s *lane, m *Message) bool {
	w.mu.Lock()
	if w.stoppingLocked() { // taken as the worker stopped: hand it back unstarted
		w.mu.Unlock()
		w.release([]*Message{m})
		return false
	}
	if !m.NotAfter.IsZero() && m.ClaimedAt.After(m.NotAfter) {
		w.mu.Unlock()
		w.settle(m, SkipRetry(errors.New(ReasonNotAfter)))
		w.unhold(1)
		return false
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(w.base, messageKey{}, m))
	stop := handlerDeadline(&ctx, m)
	j := &job{m: m, cancel: cancel}
	s.cur, s.armed = j, true
	s.timer.Reset(m.q.opt.visibility / 3)
	w.mu.Unlock()

	err := w.call(ctx, m)
	stop()
	var pe *PanicError
	if errors.As(err, &pe) {
		w.log.Error("redisq: worker: handler panicked", "queue", m.q.name, "id", m.ID,
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
			"queue", m.q.name, "id", m.ID, "attempt", m.Attempts, "result", errText(err))
		w.unhold(1)
		return false
	case err == nil:
		return true
	}
	w.settle(m, err)
	w.unhold(1)
	return false
}

// handlerDeadline gives *ctx the deadline of m's Job: its Timeout from
// now, or its NotAfter time if sooner (on this machine's clock through the
// claim's Redis TIME, m.ClaimedAt, which is about now). It returns the
// function that releases the deadline's timer.
func handlerDeadline(ctx *context.Context, m *Message) context.CancelFunc {
	var dl time.Time
	if m.Timeout > 0 {
		dl = time.Now().Add(m.Timeout)
	}
	if !m.NotAfter.IsZero() {
		if na := time.Now().Add(m.NotAfter.Sub(m.ClaimedAt)); dl.IsZero() || na.Before(dl) {
			dl = na
		}
	}
	if dl.IsZero() {
		return func() {}
	}
	c, cancel := context.WithDeadlineCause(*ctx, dl, ErrJobTimeout)
	*ctx = c
	return cancel
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

// settle gives back a message whose handler did not succeed, by Outcome:
// DeadLetter for a SkipRetryError, NackAfter for a RetryAfterError,
// Snooze for a SnoozeError, else (a panic too) Nack with the backoff; the reason is the error's text (truncated to
// MaxReasonLen). A message that this kills is logged at Warn, whatever the
// middleware: a dead letter waits for an operator.
func (w *Worker) settle(m *Message, herr error) {
	ctx, cancel := context.WithTimeout(w.settles, settleTimeout)
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
	case "snooze":
		var snooze *SnoozeError
		errors.As(herr, &snooze)
		if _, err = m.Snooze(ctx, snooze.Delay); err == nil {
			return
		}
	default: // "error", "panic"
		var r NackResult
		r, err = m.NackWith(ctx, NackReason(reason))
		out = r.Outcome
	}
	switch {
	case unconfirmed(err):
		w.warnUnconfirmed("settling a failed message", m, err)
	case err != nil:
		w.log.Warn("redisq: worker: settling a failed message failed; it is redelivered after its lease",
			"queue", m.q.name, "id", m.ID, "attempt", m.Attempts, "err", err)
	case out == NackDeadLettered:
		why := "skip retry"
		if Outcome(herr) != "skip_retry" {
			why = "max attempts"
		}
		w.log.Warn("redisq: worker: message dead-lettered", "queue", m.q.name, "id", m.ID, "kind", m.Kind,
			"attempt", m.Attempts, "cause", why, "err", reason)
	default:
		var unknown *UnknownKindError
		if errors.As(herr, &unknown) {
			w.log.Warn("redisq: worker: no handler for the message's kind; it is retried", "queue", m.q.name,
				"id", m.ID, "kind", unknown.Kind, "attempt", m.Attempts, "outcome", out.String())
		}
	}
}

// tick extends the lease of the lane's running message; it runs on the
// lane's timer, every third of the visibility timeout while the handler
// runs.
func (w *Worker) tick(s *lane) {
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

	// Each extension is by the visibility timeout of the message's queue,
	// every third of it.
	vis := j.m.q.opt.visibility
	every := vis / 3
	start := time.Now()
	ctx, cancel := context.WithTimeout(w.settles, min(vis, settleTimeout))
	_, err := j.m.extend(ctx, vis)
	cancel()

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
		w.log.Warn("redisq: worker: extending a lease failed; retrying", "queue", j.m.q.name, "id", j.m.ID, "err", err)
		s.armed = true
		s.timer.Reset(max(every/4, time.Millisecond))
	default:
		s.armed = true
		s.timer.Reset(max(every-time.Since(start), 0))
	}
}

// queueAck hands a finished message to be acked: by the next claim's
// script when the taking goroutine is about to claim (it waits for this
// handler to be idle), else together with the others waiting, now.
func (w *Worker) queueAck(m *Message) {
	w.acks[m.q].add(m)
}

// ack acks ms, messages of one Queue, in one round trip (Ack, or AckMany
// of several), retrying a failed round trip twice (an applied ack whose
// reply was lost reports success: see Ack).
func (w *Worker) ack(ms []*Message) {
	ctx, cancel := context.WithTimeout(w.settles, settleTimeout)
	defer cancel()
	errs := make([]error, len(ms))
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			// Given up (the settles of a forced stop ended) while this
			// batch queued behind another: do not send it.
			for i := range errs {
				errs[i] = err
			}
		} else if len(ms) == 1 {
			errs[0] = ms[0].Ack(ctx)
		} else {
			copy(errs, ms[0].q.AckMany(ctx, ms))
		}
		var again []*Message
		var againErrs []error
		for i, err := range errs {
			switch {
			case w.acked(ms[i], err):
			case try < 2 && ctx.Err() == nil:
				again = append(again, ms[i])
				againErrs = append(againErrs, err)
			default:
				w.log.Warn("redisq: worker: ack failed; the message will be redelivered after its lease",
					"queue", ms[i].q.name, "id", ms[i].ID, "err", err)
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

// acked logs what an ack of m that did not plainly succeed came to, and
// reports whether m is settled: acked (err nil), its lease lost (it will
// be redelivered), or acked and not confirmed by the replicas. Any other
// error leaves m maybe unacked: false.
func (w *Worker) acked(m *Message, err error) bool {
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		w.log.Warn("redisq: worker: lease lost before the ack; the message will be redelivered",
			"queue", m.q.name, "id", m.ID, "attempt", m.Attempts)
	case unconfirmed(err):
		w.warnUnconfirmed("ack", m, err)
	default:
		return false
	}
	return true
}

// warnUnconfirmed logs a write of m's (what) that the master applied and
// fewer replicas than WithReplicaAcks asks for confirmed in time: it stands
// unless a failover loses it. Writing it again would only wait for the
// replicas once more, so the worker goes on.
func (w *Worker) warnUnconfirmed(what string, m *Message, err error) {
	w.log.Warn("redisq: worker: "+what+" applied but not confirmed by the replicas; a failover may undo it",
		"queue", m.q.name, "id", m.ID, "attempt", m.Attempts, "err", err)
}
