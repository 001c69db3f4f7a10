package redisq

import (
	"errors"
	"time"
)

// The taking side of a Worker: one goroutine claims work for the idle
// handlers and dispatches it to them.

// dispatch is a message for a handler; more says that more messages were
// due when it was claimed.
type dispatch struct {
	m    *Message
	more bool
}

// fetch is the taking goroutine: it claims work for the idle handlers
// until the worker stops or the Queue is closed. It is the only one of the
// worker that waits in Redis (in takeBatch); the handlers claim for
// themselves only while a backlog lasts (runLane).
func (w *Worker) fetch() {
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
		claimNow, err := w.q.waitDueSoon(w.takeCtx, w.q.opt.visibility/4)
		if err != nil {
			return
		}
		if claimNow {
			k = w.morePermits(k)
		}
		// The first finished message is acked by this claim's script; any
		// others together, now.
		done, _ := w.acks.takeFirst()
		var ms []*Message
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
			case unconfirmed(err):
				w.warnUnconfirmed("ack", done, err)
				w.unhold(1)
			case done.acked.Load(): // acked by the claim; what followed failed
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
			stopping := w.stoppingLocked()
			w.mu.Unlock()
			if stopping { // claimed as Shutdown began: not started
				w.release(ms)
			} else {
				// In a backlog the handlers claim their next messages
				// themselves (see runLane).
				for _, m := range ms {
					w.jobs <- dispatch{m, more}
				}
			}
		}
		switch {
		case err == nil || errors.Is(err, ErrLeaseLost) || unconfirmed(err):
			// An unconfirmed ack took its messages all the same.
			fails = 0
		case w.takeCtx.Err() != nil:
			return
		case errors.Is(err, ErrClosed):
			w.mu.Lock()
			w.phase = max(w.phase, phaseStopping)
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
