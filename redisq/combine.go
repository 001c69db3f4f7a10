package redisq

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// enqueueCombiner joins Enqueue calls of one Queue that overlap in time into
// one script call (group commit). A call made while no other is in flight
// is sent at once, alone, by the enqueue script; calls made meanwhile wait
// in arrival order, and when the round trip in flight returns, the first of
// them sends them all (within the bounds of one enqueue-many script) and
// hands the role on. So a lone caller pays exactly what it did without
// combining, and concurrent callers share round trips and the script's
// per-call cost instead of queueing for the server one by one. The order of
// a batch is the order of arrival: FIFO among equal due times holds between
// calls that do not overlap, as it always has.
//
// Invariant: pending is non-empty only while sending == maxSenders; a
// promoted call (lead) sends the calls after it up to the next promoted one.
type enqueueCombiner struct {
	mu      sync.Mutex
	sending int           // guarded by mu: calls sending a batch or promoted to (at most maxSenders)
	pending []*enqueueReq // guarded by mu: calls waiting to be sent, in arrival order
}

// maxSenders is how many batches of one Queue may be in flight at once.
// One combines the most; with 8 producers on a 2-core machine, 2 measured
// no faster (the code allows more: a sender stops at the next promoted
// call).
const maxSenders = 1

// enqueueReq is one Enqueue call waiting in the combiner.
type enqueueReq struct {
	id      string
	payload []byte
	when    rdb.When

	lead    bool          // guarded by the combiner's mu: promoted to send
	promote chan struct{} // closed when lead is set
	done    chan struct{} // closed when due and err are set
	due     time.Time
	err     error
}

// enqueue runs one Enqueue/EnqueueAfter through the combiner.
func (q *Queue) enqueue(ctx context.Context, id string, payload []byte, when rdb.When) (time.Time, error) {
	if err := checkID(id); err != nil {
		return time.Time{}, err
	}
	if q.isClosed() {
		return time.Time{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	r := &enqueueReq{id: id, payload: payload, when: when, done: make(chan struct{})}
	c := &q.enq
	c.mu.Lock()
	if c.sending < maxSenders {
		c.sending++
		r.lead = true
		c.pending = append(c.pending, r)
		c.mu.Unlock()
		return q.sendEnqueues(ctx, r)
	}
	r.promote = make(chan struct{})
	c.pending = append(c.pending, r)
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.due, r.err
	case <-r.promote:
		return q.sendEnqueues(ctx, r)
	case <-ctx.Done():
	}
	// Never sent when still pending; else in a batch in flight, its outcome
	// unknown to the caller.
	q.leaveEnqueues(r)
	return time.Time{}, ctx.Err()
}

// leaveEnqueues takes a waiting call out of pending, if it is still there,
// handing the sender's role on if it had just been promoted.
func (q *Queue) leaveEnqueues(r *enqueueReq) {
	c := &q.enq
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.pending, r)
	if i < 0 {
		return
	}
	c.pending = slices.Delete(c.pending, i, i+1)
	if r.lead {
		q.handOnLocked()
	}
}

// sendEnqueues is run by the sender r (a lead in pending): it sends r and
// the waiting calls after it that fit one script (up to the next lead),
// hands the role to the next waiting call, and returns r's own outcome. A
// round trip that carries other calls' items is not cut short by r's ctx;
// one that carries r's alone runs under it, as without combining.
func (q *Queue) sendEnqueues(ctx context.Context, r *enqueueReq) (time.Time, error) {
	c := &q.enq
	c.mu.Lock()
	i := slices.Index(c.pending, r)
	j := i + 1
	for j < len(c.pending) && !c.pending[j].lead {
		j++
	}
	ends := rdb.ChunkEnds(j-i, func(k int) int { return len(c.pending[i+k].id) + len(c.pending[i+k].payload) })
	batch := slices.Clone(c.pending[i : i+ends[0]])
	c.pending = slices.Delete(c.pending, i, i+ends[0])
	c.mu.Unlock()

	if len(batch) > 1 {
		ctx = context.WithoutCancel(ctx)
	}
	q.runEnqueues(ctx, batch)

	c.mu.Lock()
	q.handOnLocked()
	c.mu.Unlock()
	return r.due, r.err
}

// handOnLocked passes a sender's role to the first waiting call that is
// not promoted yet, or gives it up when there is none. c.mu must be held.
func (q *Queue) handOnLocked() {
	c := &q.enq
	for _, next := range c.pending {
		if !next.lead {
			next.lead = true
			close(next.promote)
			return
		}
	}
	c.sending--
}

// runEnqueues stores batch by one script call and sets each call's outcome:
// the enqueue script for one call, the enqueue-many script for more.
func (q *Queue) runEnqueues(ctx context.Context, batch []*enqueueReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	if len(batch) == 1 {
		r := batch[0]
		due, ok, err := q.db.Enqueue(ctx, rdb.NewItem{ID: r.id, Payload: r.payload, When: r.when})
		switch {
		case err != nil:
			r.err = err
		case !ok:
			r.err = ErrDuplicate
		default:
			r.due = msTime(due)
		}
		return
	}
	items := make([]rdb.NewItem, len(batch))
	for i, r := range batch {
		items[i] = rdb.NewItem{ID: r.id, Payload: r.payload, When: r.when}
	}
	for i, e := range q.db.EnqueueBatch(ctx, items) {
		batch[i].due, batch[i].err = enqueued(e)
	}
}
