package redisq

import (
	"context"
	"errors"
	"fmt"
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
	var chunks []chunk
	for c, hi := range ends {
		part := items[chunkStart(ends, c):hi]
		ch := chunk{make([]string, 0, len(part)), make([]interface{}, 0, 2+4*len(part))}
		ch.args = append(ch.args, q.mpref, len(part))
		for _, it := range part {
			ch.keys = append(ch.keys, q.itemKey(it.ID))
			if it.At.IsZero() {
				ch.args = append(ch.args, it.ID, it.Payload, "after", delayUS(it.After))
			} else {
				ch.args = append(ch.args, it.ID, it.Payload, "at", dueMS(it.At))
			}
		}
		chunks = append(chunks, ch)
	}
	cmds := q.runChunks(ctx, scriptEnqueueMany, chunks)
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

// chunk is one script call of a batch: the keys it declares besides the
// script's own, and its arguments (ARGV, the item hash prefix first).
type chunk struct {
	keys []string
	args []interface{}
}

// runChunks runs s once per chunk, in order, and returns the commands for
// their replies. On one server they go in one pipelined round trip as EVAL,
// not EVALSHA: a pipelined EVALSHA that got NOSCRIPT (after a restart or
// SCRIPT FLUSH) while a later one succeeded would have to be re-run after
// it, out of order. The script text costs a few KB per chunk of up to 200
// items, and Redis caches the compiled script by its SHA. On a Cluster they
// go one after the other, each retried while its slot migrates
// (retryMigrating): a pipeline there could apply a later chunk while an
// earlier one waits for TRYAGAIN.
func (q *Queue) runChunks(ctx context.Context, s *script, chunks []chunk) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(chunks))
	keys := func(c chunk) []string {
		ks := make([]string, 0, len(s.keys)+len(c.keys))
		for _, k := range s.keys {
			ks = append(ks, q.keys[k])
		}
		return append(ks, c.keys...)
	}
	if _, ok := q.client.(*redis.ClusterClient); ok {
		for i, c := range chunks {
			_ = q.retryMigrating(ctx, func() error {
				if s.acks && q.opt.replicas > 0 {
					r, err := q.runReplicated(ctx, s, keys(c), c.args)
					cmds[i] = redis.NewCmd(ctx)
					cmds[i].SetVal(r)
					cmds[i].SetErr(err)
					return err
				}
				cmds[i] = s.Run(ctx, q.client, keys(c), c.args...)
				return cmds[i].Err()
			})
			if cmds[i].Err() != nil {
				// Later chunks would apply out of order: fail them.
				for j := i + 1; j < len(chunks); j++ {
					cmds[j] = redis.NewCmd(ctx)
					cmds[j].SetErr(cmds[i].Err())
				}
				break
			}
		}
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				c.SetErr(q.permissionError(err))
			}
		}
		q.unwrapLives(ctx, s, cmds)
		return cmds
	}
	var wait *redis.IntCmd
	_, _ = q.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range chunks {
			cmds[i] = s.Eval(ctx, p, keys(c), c.args...)
		}
		if s.acks && q.opt.replicas > 0 {
			// WAIT counts the replicas that have every write of the
			// connection so far: the whole pipeline.
			wait = redis.NewIntCmd(ctx, "wait", q.opt.replicas, q.opt.replicaTimeout.Milliseconds())
			return p.Process(ctx, wait)
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			c.SetErr(q.permissionError(err))
		}
	}
	if wait != nil {
		var werr error
		if got, err := wait.Result(); err != nil {
			werr = fmt.Errorf("%w: WAIT: %v", ErrNotReplicated, err)
		} else if got < int64(q.opt.replicas) {
			werr = fmt.Errorf("%w: %d of %d replicas within %v; the writes may or may not survive a failover",
				ErrNotReplicated, got, q.opt.replicas, q.opt.replicaTimeout)
		}
		for _, c := range cmds {
			if werr != nil && c.Err() == nil {
				c.SetErr(werr)
			}
		}
	}
	q.unwrapLives(ctx, s, cmds)
	return cmds
}

// unwrapLives is unwrapLife for the replies of runChunks.
func (q *Queue) unwrapLives(ctx context.Context, s *script, cmds []*redis.Cmd) {
	if !s.life {
		return
	}
	for _, c := range cmds {
		// A reply that came with an error (ErrNotReplicated) still tells.
		r, ok := c.Val().([]interface{})
		if !ok {
			continue
		}
		r, err := q.unwrapLife(ctx, r)
		c.SetVal(r)
		if err != nil && c.Err() == nil {
			c.SetErr(err)
		}
	}
}
