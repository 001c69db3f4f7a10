package rdb

import (
	"context"
	"errors"
)

var (
	scriptEnqueue     = newScript("enqueue", kSched, kWake, kSeq).acked()
	scriptEnqueueMany = newScript("enqueue_many", kSched, kWake, kSeq).acked()
)

// When is when an item is due: at an absolute time in ms (At), or a delay
// in µs after Redis TIME (After set), which the scripts round up to the ms.
type When struct {
	After bool
	V     int64
}

func (w When) mode() string {
	if w.After {
		return "after"
	}
	return "at"
}

// NewItem is one item to enqueue.
type NewItem struct {
	ID      string
	Payload []byte
	When    When
	Job     Job
}

// Enqueued is what became of one item of Enqueue, EnqueueBatch or
// EnqueueMany: its due time (ms) when stored, Dup when its id exists (or
// repeats an earlier one of the call), Held when its unique key's window
// is held, or the error of the script that carried it.
type Enqueued struct {
	Due  int64
	Dup  bool
	Held bool
	Err  error
}

// Enqueue stores one item (lua/enqueue.lua).
func (r *Runner) Enqueue(ctx context.Context, it NewItem) Enqueued {
	keys := []string{r.Keys.Item(it.ID)}
	if it.Job.UniqueKey != "" {
		keys = append(keys, r.Keys.Unique(it.Job.UniqueKey))
	}
	args := it.Job.unique(it.Job.args([]interface{}{it.ID, it.Payload, it.When.mode(), it.When.V}))
	res, err := r.run(ctx, scriptEnqueue, keys, args...)
	switch {
	case err != nil:
		return Enqueued{Err: err}
	case toInt(res[0]) == 0:
		return Enqueued{Dup: true}
	case toInt(res[0]) == 2:
		return Enqueued{Held: true}
	}
	return Enqueued{Due: toInt(res[1])}
}

// EnqueueBatch stores items, within the bounds of one script (ChunkEnds),
// by one enqueue-many script (lua/enqueue_many.lua) through EVALSHA.
func (r *Runner) EnqueueBatch(ctx context.Context, items []NewItem) []Enqueued {
	c := enqueueChunk(r, items)
	res, err := r.run(ctx, scriptEnqueueMany, c.keys, c.args...)
	return enqueuedOf("enqueue", len(items), res, err)
}

// EnqueueMany stores items in order, one enqueue-many script per chunk
// (ChunkEnds), pipelined (see runChunks).
func (r *Runner) EnqueueMany(ctx context.Context, items []NewItem) []Enqueued {
	ends := ChunkEnds(len(items), func(i int) int { return len(items[i].ID) + len(items[i].Payload) + items[i].Job.ArgLen() })
	chunks := make([]chunk, len(ends))
	for c, hi := range ends {
		chunks[c] = enqueueChunk(r, items[ChunkStart(ends, c):hi])
	}
	out := make([]Enqueued, 0, len(items))
	for c, rep := range r.runChunks(ctx, scriptEnqueueMany, chunks) {
		out = append(out, enqueuedOf("enqueue many", ends[c]-ChunkStart(ends, c), rep.res, rep.err)...)
	}
	return out
}

func enqueueChunk(r *Runner, items []NewItem) chunk {
	c := chunk{make([]string, 0, len(items)), make([]interface{}, 0, 1+7*len(items))}
	c.args = append(c.args, len(items))
	for i := range items {
		it := &items[i]
		c.keys = append(c.keys, r.Keys.Item(it.ID))
		if it.Job.UniqueKey != "" {
			c.keys = append(c.keys, r.Keys.Unique(it.Job.UniqueKey))
		}
		c.args = it.Job.unique(it.Job.args(append(c.args, it.ID, it.Payload, it.When.mode(), it.When.V)))
	}
	return c
}

// enqueuedOf reads an enqueue-many reply {now, due1 | false | "u", ...}
// for n items of call (which names it in an error).
func enqueuedOf(call string, n int, res []interface{}, err error) []Enqueued {
	out := make([]Enqueued, n)
	if err == nil && len(res) != n+1 {
		err = errors.New("redisq: " + call + ": malformed reply")
	}
	for i := range out {
		switch {
		case err != nil:
			out[i].Err = err
		case res[i+1] == nil || res[i+1] == false:
			out[i].Dup = true
		case res[i+1] == "u":
			out[i].Held = true
		default:
			out[i].Due = toInt(res[i+1])
		}
	}
	return out
}
