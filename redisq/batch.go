package redisq

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// EnqueueItem is one item for Add, EnqueueMany and ScheduleItem.
type EnqueueItem struct {
	ID      string
	Payload []byte
	// At is the absolute due time (the caller's clock, rounded up and
	// clamped as in Enqueue). When At is the zero Time, the item is due
	// After past Redis TIME instead, as with EnqueueAfter (After <= 0: due
	// now).
	At    time.Time
	After time.Duration
	// Job is the item's kind, headers and options (see Job).
	Job Job
}

// when is the item's due time as the storage layer takes it.
func (it *EnqueueItem) when() rdb.When {
	if it.At.IsZero() {
		return rdb.When{After: true, V: delayUS(it.After)}
	}
	return rdb.When{V: dueMS(it.At)}
}

// EnqueueResult is what EnqueueMany did with one item.
type EnqueueResult struct {
	// Due is the stored due time (Redis clock) when the item was stored.
	Due time.Time
	// Err is nil when the item was stored, ErrDuplicate when its id exists
	// in any state or repeats an earlier item of the same call (nothing
	// changed for it), ErrUniqueHeld when its unique key's window is held
	// (by an earlier enqueue or item of the call; nothing changed), or the error of the round trip that carried it (the
	// item may or may not have been stored; retrying with the same id is
	// safe).
	Err error
}

// EnqueueMany schedules items as Enqueue/EnqueueAfter would, one after the
// other in slice order (FIFO among equal due times), in one round trip: one
// script per 200 items or 64 KiB of ids and payloads, pipelined, each
// applied atomically and in order. It returns one
// result per item, in order, and the first error of a failed script or of
// the round trip (nil when every item got an answer, duplicates included).
// An empty id or a Job that cannot be stored (see Job) anywhere returns an error before anything is sent; ErrClosed
// after Close. The complexity is O(k log n) for k items.
func (q *Queue) EnqueueMany(ctx context.Context, items []EnqueueItem) ([]EnqueueResult, error) {
	for i := range items {
		if err := checkID(items[i].ID); err != nil {
			return nil, err
		}
		if err := items[i].Job.check(); err != nil {
			return nil, err
		}
	}
	if q.isClosed() {
		return nil, ErrClosed
	}
	res := make([]EnqueueResult, len(items))
	if len(items) == 0 {
		return res, nil
	}
	in := make([]rdb.NewItem, len(items))
	for i, it := range items {
		in[i] = rdb.NewItem{ID: it.ID, Payload: it.Payload, When: it.when(), Job: it.Job.stored()}
	}
	var first error
	for i, e := range q.db.EnqueueMany(ctx, in) {
		res[i].Due, res[i].Err = enqueued(e)
		if e.Err != nil && first == nil {
			first = e.Err
		}
	}
	return res, first
}

// enqueued is the outcome of one item of an enqueue script: its due time,
// ErrDuplicate, ErrUniqueHeld, or the error of the script that carried it.
func enqueued(e rdb.Enqueued) (time.Time, error) {
	switch {
	case e.Err != nil:
		return time.Time{}, e.Err
	case e.Dup:
		return time.Time{}, ErrDuplicate
	case e.Held:
		return time.Time{}, ErrUniqueHeld
	}
	return msTime(e.Due), nil
}

// AckMany acknowledges msgs in one pipelined round trip: one script per 200
// messages, which reads Redis TIME and updates the counters once.
// It returns one error per message, each with Ack's meaning; all nil on full
// success. A message listed twice is acked once. A message taken from
// another queue (another name) is not acked: its error says so. A nil
// element gets an error of its own and the others are acked.
func (q *Queue) AckMany(ctx context.Context, msgs []*Message) []error {
	errs := make([]error, len(msgs))
	if slices.Contains(msgs, nil) {
		var rest []*Message
		var at []int
		for i, m := range msgs {
			if m == nil {
				errs[i] = fmt.Errorf("redisq: AckMany: message %d is nil", i)
				continue
			}
			rest, at = append(rest, m), append(at, i)
		}
		for j, err := range q.AckMany(ctx, rest) {
			errs[at[j]] = err
		}
		return errs
	}
	if len(msgs) == 0 {
		return errs
	}
	ls := make([]rdb.Lease, len(msgs))
	for i, m := range msgs {
		ls[i] = rdb.Lease{ID: m.ID, Token: m.token, Foreign: m.q.db.Keys.Items != q.db.Keys.Items, Result: m.result}
	}
	for i, a := range q.db.AckMany(ctx, ls) {
		switch {
		case a.Err != nil:
			errs[i] = a.Err
		case ls[i].Foreign:
			errs[i] = fmt.Errorf("redisq: AckMany: message %q is from queue %q, not %q", msgs[i].ID, msgs[i].q.name, q.name)
		case !a.OK:
			errs[i] = ErrLeaseLost
		}
	}
	return errs
}
