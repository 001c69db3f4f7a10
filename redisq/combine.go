package redisq

import (
	"context"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// Enqueue calls of one Queue that overlap in time are combined (group
// commit, see groupCommit): a call made while no other is in flight is
// sent at once, alone, by the enqueue script; calls made meanwhile wait in
// arrival order and go together by one enqueue-many script, within the
// bounds of one (rdb.ChunkEnds), when the round trip in flight returns,
// or at once when enqueueSpread of them wait (up to enqueueSpread round
// trips in flight), so that many producers are not bound by the latency of
// one round trip at a time. The order of a batch is the order of arrival:
// FIFO among equal due times holds between calls that do not overlap, as
// it always has.

// enqueueReq is one Enqueue call and, once sent, its outcome.
type enqueueReq struct {
	id      string
	payload []byte
	when    rdb.When
	job     rdb.Job
	due     time.Time
	err     error
}

// newEnqueues returns q's enqueue combiner.
func (q *Queue) newEnqueues() *groupCommit[*enqueueReq] {
	return &groupCommit[*enqueueReq]{
		send:   q.runEnqueues,
		spread: enqueueSpread,
		limit: func(rs []*enqueueReq) int {
			return rdb.ChunkEnds(len(rs), func(k int) int { return len(rs[k].id) + len(rs[k].payload) + rs[k].job.ArgLen() })[0]
		},
	}
}

// enqueue runs one Enqueue/EnqueueAfter through the combiner.
func (q *Queue) enqueue(ctx context.Context, id string, payload []byte, when rdb.When, j rdb.Job) (time.Time, error) {
	if err := checkID(id); err != nil {
		return time.Time{}, err
	}
	if q.isClosed() {
		return time.Time{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	r := &enqueueReq{id: id, payload: payload, when: when, job: j}
	if err := q.enq.do(ctx, r); err != nil {
		return time.Time{}, err
	}
	return r.due, r.err
}

// runEnqueues stores batch by one script call and sets each call's outcome:
// the enqueue script for one call, the enqueue-many script for more.
func (q *Queue) runEnqueues(ctx context.Context, batch []*enqueueReq) {
	if len(batch) == 1 {
		r := batch[0]
		r.due, r.err = enqueued(q.db.Enqueue(ctx, rdb.NewItem{ID: r.id, Payload: r.payload, When: r.when, Job: r.job}))
		return
	}
	items := make([]rdb.NewItem, len(batch))
	for i, r := range batch {
		items[i] = rdb.NewItem{ID: r.id, Payload: r.payload, When: r.when, Job: r.job}
	}
	for i, e := range q.db.EnqueueBatch(ctx, items) {
		batch[i].due, batch[i].err = enqueued(e)
	}
}

// enqueueSpread is the combiner's spread: with 8 producers on a quiet
// 2-core machine, 4 was the fastest of 1 (one round trip at a time), 2, 3,
// 4, 6 and 8 (docs/performance.md, "Enqueue round trips").
const enqueueSpread = 4
