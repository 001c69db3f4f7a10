package redisq

import (
	"context"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/dq-go/delayqueue/redisq/redistest"
)

// StartTestServer starts a throwaway redis-server for the Example functions
// (which have no testing.T) and returns its address and a function that
// stops it.
func StartTestServer() (addr string, stop func()) {
	s, err := redistest.Start()
	if err != nil {
		panic(err)
	}
	return s.Addr, s.Close
}

// The storage layer as the tests poke at it: its scripts by their old
// names, the bounds of its batches, and the keys and calls of a Queue.

type script = rdb.Script

var (
	scriptEnqueue      = rdb.Named("enqueue")
	scriptEnqueueMany  = rdb.Named("enqueue_many")
	scriptClaim        = rdb.Named("claim")
	scriptAckClaim     = rdb.Named("ack_claim")
	scriptAckManyClaim = rdb.Named("ack_many_claim")
	scriptAck          = rdb.Named("ack")
	scriptAckMany      = rdb.Named("ack_many")
	scriptNack         = rdb.Named("nack")
	scriptExtend       = rdb.Named("extend")
	scriptCancel       = rdb.Named("cancel")
	scriptSchedule     = rdb.Named("schedule")
	scriptDeadLetter   = rdb.Named("dead_letter")
	scriptReleaseLease = rdb.Named("release_lease")
	scriptBulkDead     = rdb.Named("bulk_dead")
	scriptRegister     = rdb.Named("register")
	scriptUnregister   = rdb.Named("unregister")
	scriptAdvance      = rdb.Named("advance")
)

const (
	enqueueBatch = rdb.EnqueueBatch
	batchBytes   = rdb.BatchBytes
)

var chunkEnds = rdb.ChunkEnds

func (q *Queue) run(ctx context.Context, s *script, extra []string, args ...interface{}) ([]interface{}, error) {
	return q.db.RunScript(ctx, s, extra, args...)
}

func (q *Queue) itemKey(id string) string   { return q.db.Keys.Item(id) }
func (q *Queue) tombKey(tok string) string  { return q.db.Keys.Tomb(tok) }
func (q *Queue) ridKey(rid string) string   { return q.db.Keys.Reply(rid) }
func (q *Queue) recKey(name string) string  { return q.db.Keys.Rec(name) }
func (q *Queue) recsKey() string            { return q.db.Keys.Recs }
func (q *Queue) recxKey() string            { return q.db.Keys.Recx }
func (q *Queue) workerKey(id string) string { return q.db.Keys.Worker(id) }

func (q *Queue) permissionError(err error) error { return rdb.PermissionErr(q.name, err) }

// The storage layer's keyspace helpers, under the names the tests know.
var (
	keySlot    = rdb.KeySlot
	seqKey     = rdb.SeqKey
	queueNames = rdb.QueueNames
	globEscape = rdb.GlobEscape
)

const slotKeysAtOnce = rdb.SlotKeysAtOnce

// activeNow reports whether the taker is in an active period: its pumps
// claim ahead for callers.
func (t *taker) activeNow() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active
}
