package rdb

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// EnqueueBatch and BatchBytes bound one enqueue-many or ack-many script: at
// most EnqueueBatch items and, after a chunk's first item, at most
// BatchBytes of ids and payloads (storing a payload copies it, so the cost
// grows with its size; an item larger than that goes alone, as Enqueue
// would store it). EnqueueMany and AckMany send larger inputs as several
// scripts in one pipelined round trip.
const (
	EnqueueBatch = 200
	BatchBytes   = 64 << 10
)

// ChunkEnds splits n items, item i weighing size(i) bytes, into chunks for
// one script each, within EnqueueBatch and BatchBytes, and returns the end
// (exclusive) of each chunk in order.
func ChunkEnds(n int, size func(int) int) []int {
	var ends []int
	lo, bytes := 0, 0
	for i := range n {
		b := size(i)
		if i > lo && (i-lo == EnqueueBatch || bytes+b > BatchBytes) {
			ends = append(ends, i)
			lo, bytes = i, 0
		}
		bytes += b
	}
	return append(ends, n)
}

// ChunkStart is where chunk c of ChunkEnds' ends begins.
func ChunkStart(ends []int, c int) int {
	if c == 0 {
		return 0
	}
	return ends[c-1]
}

// chunk is one script call of a batch: the keys it declares besides the
// script's own, and its arguments after ARGV[1].
type chunk struct {
	keys []string
	args []interface{}
}

// chunkReply is the outcome of one chunk: its reply (unwrapped) or error.
type chunkReply struct {
	res []interface{}
	err error
}

// runChunks runs s once per chunk, in order, and returns their outcomes.
// One chunk (every combined Enqueue and Worker ack batch) is one call, as
// run makes it: EVALSHA, and EVAL only after NOSCRIPT. Several chunks on
// one server go in one pipelined round trip as EVAL, not EVALSHA: a
// pipelined EVALSHA that got NOSCRIPT (after a restart or SCRIPT FLUSH)
// while a later one succeeded would have to be re-run after it, out of
// order. EVAL costs the server a SHA-1 of the script's text and reading
// it, about 40 µs per call on the VM of docs/performance.md: a lot for a
// call of 4 items, little for a chunk of up to 200. On a Cluster they go
// one after the other, each retried while its slot migrates
// (retryMigrating): a pipeline there could apply a later chunk while an
// earlier one waits for TRYAGAIN; a chunk that fails fails the chunks
// after it, which would apply out of order.
func (r *Runner) runChunks(ctx context.Context, s *Script, chunks []chunk) []chunkReply {
	out := make([]chunkReply, len(chunks))
	argv := func(c chunk) []interface{} {
		return append([]interface{}{r.Keys.Items}, c.args...)
	}
	if _, cluster := r.Client.(*redis.ClusterClient); cluster || len(chunks) == 1 {
		for i, c := range chunks {
			_ = r.retryMigrating(ctx, func() error {
				if s.acks && r.Replicas > 0 {
					out[i].res, out[i].err = r.runReplicated(ctx, s, r.keysOf(s, c.keys), argv(c))
				} else {
					out[i].res, out[i].err = s.Run(ctx, r.Client, r.keysOf(s, c.keys), argv(c)...).Slice()
				}
				return out[i].err
			})
			if out[i].err != nil {
				for j := i + 1; j < len(chunks); j++ {
					out[j].err = out[i].err
				}
				break
			}
		}
	} else {
		cmds := make([]*redis.Cmd, len(chunks))
		var wait *redis.IntCmd
		_, _ = r.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, c := range chunks {
				cmds[i] = s.Eval(ctx, p, r.keysOf(s, c.keys), argv(c)...)
			}
			if s.acks && r.Replicas > 0 {
				// WAIT counts the replicas that have every write of the
				// connection so far: the whole pipeline.
				wait = redis.NewIntCmd(ctx, "wait", r.Replicas, r.ReplicaTimeout.Milliseconds())
				return p.Process(ctx, wait)
			}
			return nil
		})
		var werr error
		if wait != nil {
			if got, err := wait.Result(); err != nil {
				werr = fmt.Errorf("%w: WAIT: %v", ErrNotReplicated, err)
			} else if got < int64(r.Replicas) {
				werr = fmt.Errorf("%w: %d of %d replicas within %v; the writes may or may not survive a failover",
					ErrNotReplicated, got, r.Replicas, r.ReplicaTimeout)
			}
		}
		for i, c := range cmds {
			out[i].res, out[i].err = c.Slice()
			if out[i].err == nil {
				out[i].err = werr
			}
		}
	}
	for i := range out {
		if out[i].res != nil && s.life {
			var uerr error
			if out[i].res, uerr = r.unwrapLife(ctx, out[i].res); out[i].err == nil {
				out[i].err = uerr
			}
		}
		out[i].err = r.permissionError(out[i].err)
	}
	return out
}
