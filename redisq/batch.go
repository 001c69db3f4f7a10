package redisq

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// enqueueBatch and batchBytes bound one enqueue-many or ack-many script: at
// most enqueueBatch items and, after a chunk's first item, at most
// batchBytes of ids and payloads (storing a payload copies it, so the cost
// grows with its size; an item larger than that goes alone, as Enqueue
// would store it). About 2ms of server CPU on a small VM. EnqueueMany and
// AckMany send larger inputs as several scripts in one pipelined round trip.
const (
	enqueueBatch = 200
	batchBytes   = 64 << 10
)

// chunkEnds splits n items, item i weighing size(i) bytes, into chunks for
// one script each, within enqueueBatch and batchBytes, and returns the end
// (exclusive) of each chunk in order.
func chunkEnds(n int, size func(int) int) []int {
	var ends []int
	lo, bytes := 0, 0
	for i := range n {
		b := size(i)
		if i > lo && (i-lo == enqueueBatch || bytes+b > batchBytes) {
			ends = append(ends, i)
			lo, bytes = i, 0
		}
		bytes += b
	}
	return append(ends, n)
}

// EnqueueItem is one item for EnqueueMany.
type EnqueueItem struct {
	ID      string
	Payload []byte
	// At is the absolute due time (the caller's clock, rounded up and
	// clamped as in Enqueue). When At is the zero Time, the item is due
	// After past Redis TIME instead, as with EnqueueAfter (After <= 0: due
	// now).
	At    time.Time
	After time.Duration
}

// EnqueueResult is what EnqueueMany did with one item.
type EnqueueResult struct {
	// Due is the stored due time (Redis clock) when the item was stored.
	Due time.Time
	// Err is nil when the item was stored, ErrDuplicate when its id exists
	// in any state or repeats an earlier item of the same call (nothing
	// changed for it), or the error of the round trip that carried it (the
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
// An empty id anywhere returns an error before anything is sent; ErrClosed
// after Close. The complexity is O(k log n) for k items.
func (q *Queue) EnqueueMany(ctx context.Context, items []EnqueueItem) ([]EnqueueResult, error) {
	for _, it := range items {
		if err := checkID(it.ID); err != nil {
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
	ends := chunkEnds(len(items), func(i int) int { return len(items[i].ID) + len(items[i].Payload) })
	var argss [][]interface{}
	for c, hi := range ends {
		chunk := items[chunkStart(ends, c):hi]
		args := make([]interface{}, 0, 2+4*len(chunk))
		args = append(args, q.mpref, len(chunk))
		for _, it := range chunk {
			if it.At.IsZero() {
				args = append(args, it.ID, it.Payload, "after", delayUS(it.After))
			} else {
				args = append(args, it.ID, it.Payload, "at", dueMS(it.At))
			}
		}
		argss = append(argss, args)
	}
	cmds := q.runChunks(ctx, scriptEnqueueMany, argss)
	var first error
	for c, cmd := range cmds {
		chunk := res[chunkStart(ends, c):ends[c]]
		r, err := cmd.Slice()
		if err == nil && len(r) != len(chunk)+1 {
			err = errors.New("redisq: enqueue many: malformed reply")
		}
		if err != nil {
			for i := range chunk {
				chunk[i].Err = err
			}
			if first == nil {
				first = err
			}
			continue
		}
		for i := range chunk {
			chunk[i].Due, chunk[i].Err = enqueuedItem(r[i+1])
		}
	}
	return res, first
}

// enqueuedItem reads one item's entry of the enqueue-many script's reply:
// its due time, or ErrDuplicate for nil (Lua false).
func enqueuedItem(v interface{}) (time.Time, error) {
	if v == nil || v == false {
		return time.Time{}, ErrDuplicate
	}
	return msTime(toInt(v)), nil
}

// chunkStart is where chunk c of chunkEnds' ends begins.
func chunkStart(ends []int, c int) int {
	if c == 0 {
		return 0
	}
	return ends[c-1]
}

// runChunks runs s once per element of argss, in order, in one pipelined
// round trip, and returns the commands for their replies. It sends EVAL, not
// EVALSHA: a pipelined EVALSHA that got NOSCRIPT (after a restart or SCRIPT
// FLUSH) while a later one succeeded would have to be re-run after it, out
// of order. The script text costs a few KB per chunk of up to 200 items, and
// Redis caches the compiled script by its SHA.
func (q *Queue) runChunks(ctx context.Context, s *redis.Script, argss [][]interface{}) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(argss))
	_, _ = q.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, args := range argss {
			cmds[i] = s.Eval(ctx, p, q.keys, args...)
		}
		return nil
	})
	return cmds
}
