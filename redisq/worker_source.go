package redisq

import (
	"context"
	"errors"
	"time"
)

// workSource is a queue a Worker takes from, an ordinary Queue or a
// Partitioned one, as the dispatcher (worker_dispatch.go) sees it: the
// seam between the Worker and the storage, so that the Worker has one
// way of taking whatever the kind of queue.
type workSource interface {
	// sourceName names the queue in logs.
	sourceName() string
	// queues are the Redis queues the source takes from: its waiters wait
	// on each, the heartbeat is written to each, and the acks of their
	// messages go to them.
	queues() []*Queue
	// take leases up to n (1..MaxBatch) due items for the handlers granted
	// to the source. When acksInTake, it calls done once, just before it
	// claims, and acks the message done returns (nil: none) in the same
	// round trip. Alone (the worker's only source) it waits until some are
	// due; else it returns soon with what is due (maybe nothing). grow,
	// called at most once after a wait of take's own, returns n plus the
	// handlers granted meanwhile. more reports that items are due beyond
	// these: a backlog.
	take(ctx context.Context, n int, grow func(int) int, done func() *Message, alone bool) (ms []*Message, more bool, err error)
	// acksInTake reports whether take carries an ack.
	acksInTake() bool
	// laneClaims reports whether a handler may ack its message and claim
	// its next one itself while a backlog lasts (runLane), bypassing the
	// dispatcher: only a source alone whose take is a claim does.
	laneClaims(alone bool) bool
	// held returns a channel signalled whenever items claimed for the
	// source wait in the process for a take (nil: never), and the function
	// that stops it.
	held() (<-chan struct{}, func())
	// keeps are the queues whose recurring registrations the worker keeps.
	keeps() []*Queue
}

var (
	_ workSource = (*Queue)(nil)
	_ workSource = (*Partitioned)(nil)
)

func (q *Queue) sourceName() string              { return q.name }
func (q *Queue) queues() []*Queue                { return []*Queue{q} }
func (q *Queue) acksInTake() bool                { return true }
func (q *Queue) laneClaims(alone bool) bool      { return alone }
func (q *Queue) held() (<-chan struct{}, func()) { return nil, func() {} }
func (q *Queue) keeps() []*Queue                 { return []*Queue{q} }

// take is a Worker's claim on q. Alone, it waits as Take does; when this
// Queue's next due time is a few milliseconds away it waits for it here
// first, taking the handlers granted meanwhile (grow) and the acks of
// those that finished (done, after the wait), so that the claim that
// follows takes work for all of them and carries an ack.
func (q *Queue) take(ctx context.Context, n int, grow func(int) int, done func() *Message, alone bool) ([]*Message, bool, error) {
	if !alone {
		return q.claimDue(ctx, n, done())
	}
	claimNow, err := q.waitDueSoon(ctx, q.opt.visibility/4)
	if err != nil {
		return nil, false, err
	}
	d := done()
	if claimNow {
		n = min(grow(n), MaxBatch)
		if !q.isClosed() {
			ms, next, err := q.claim(ctx, n, d)
			return ms, next == 0, err
		}
	}
	ms, err := q.takeBatch(ctx, n, d)
	return ms, n > 1 && len(ms) == n, err
}

// claimDue leases up to n (1..MaxBatch) due items without waiting for any,
// acking done (nil: none) in the first claim, and running claims back to
// back while items are due (as takeBatch does). more reports that items
// are due beyond these (or were left behind by a full reclaim batch):
// claim again. The errors are claim's.
func (q *Queue) claimDue(ctx context.Context, n int, done *Message) (ms []*Message, more bool, err error) {
	ctx, leave, err := q.enterTake(ctx)
	if err != nil {
		if done != nil { // Ack works after Close
			if aerr := done.Ack(context.WithoutCancel(ctx)); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}
		return nil, false, err
	}
	defer leave()
	ms, next, err := q.claim(ctx, n, done)
	for err == nil && len(ms) > 0 && len(ms) < n && next == 0 && ctx.Err() == nil {
		var again []*Message
		again, next, err = q.claim(ctx, n-len(ms), nil)
		if err != nil || len(again) == 0 {
			// What was leased is returned; a failure shows at the next claim.
			next, err = 0, nil
			break
		}
		ms = append(ms, again...)
	}
	if err != nil && ctx.Err() != nil && !unconfirmed(err) {
		err = context.Cause(ctx)
	}
	return ms, next == 0 && err == nil, err
}

// ackClaim acks dones (messages of q, at most rdb.ScriptBatch) and claims
// one item for each in one round trip, for handlers that ack and claim
// their next in a backlog (runLane): acked[i] reports whether dones[i]
// was acked (false: its lease was lost). One done goes by the script of
// AckTake, whose lost lease claims nothing; several by claimAcking. Like
// claim, it returns what it leased with an ErrNotReplicated.
func (q *Queue) ackClaim(ctx context.Context, dones []*Message) (ms []*Message, next time.Duration, acked []bool, err error) {
	if len(dones) > 1 {
		return q.claimAcking(ctx, dones)
	}
	ms, next, err = q.claim(ctx, 1, dones[0])
	if errors.Is(err, ErrLeaseLost) {
		return nil, next, []bool{false}, nil
	}
	return ms, next, []bool{true}, err
}

func (p *Partitioned) sourceName() string         { return p.name }
func (p *Partitioned) queues() []*Queue           { return p.parts }
func (p *Partitioned) acksInTake() bool           { return false }
func (p *Partitioned) laneClaims(alone bool) bool { return false }
func (p *Partitioned) held() (<-chan struct{}, func()) {
	return p.tk.watchHeld()
}
func (p *Partitioned) keeps() []*Queue { return p.parts }

// partTakeWait bounds a Partitioned queue's take in a Worker over several
// queues: the handlers granted to it go back to the others if nothing
// comes by then (its waiter's wake-up was for an item that another
// consumer took).
const partTakeWait = 20 * time.Millisecond

// take is a Worker's take on p, as Partitioned.TakeBatch, which merges the
// partitions in due order: alone it waits until items come; else for
// partTakeWait at most.
func (p *Partitioned) take(ctx context.Context, n int, _ func(int) int, _ func() *Message, alone bool) ([]*Message, bool, error) {
	if alone {
		ms, err := p.TakeBatch(ctx, n)
		return ms, len(ms) == n || p.tk.heldLen() > 0, err
	}
	tctx, cancel := context.WithTimeout(ctx, partTakeWait)
	defer cancel()
	ms, err := p.TakeBatch(tctx, n)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil // nothing came: not ready
	}
	// Items the take's claims brought beyond these wait for the next one.
	return ms, len(ms) == n || p.tk.heldLen() > 0, err
}
