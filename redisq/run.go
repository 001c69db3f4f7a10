package redisq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Indexes into Queue.keys, the queue's fixed keys (see the key layout in
// scripts.go).
const (
	kSched = iota
	kLease
	kDead
	kWake
	kStats
	kSeq
	kTimer
	kLate
)

// script is one of the queue's Lua scripts and the fixed keys a call of it
// declares; a call adds the keys only it knows (an item hash, a tombstone).
// Declaring exactly what a call touches keeps it running while its Cluster
// slot migrates whenever Redis can tell where those keys are (see the key
// layout in scripts.go).
type script struct {
	*redis.Script
	keys []int // indexes into Queue.keys
	// rid: a call (runOnce) declares the key of its request's reply,
	// {dq:NAME}:r:RID, which the script reads or writes when the item is
	// gone.
	rid bool
	// acks: the script is an acknowledging write, which WithReplicaAcks
	// confirms with WAIT before the call returns.
	acks bool
	// life: the script may start the queue's sequence (it has next_seq,
	// see luaCommon) and replies {life, reply}, life 1 when it did (see
	// unwrapLife).
	life bool
	src  string // the Lua source, to name the command of a refusal
}

func newScript(src string, keys ...int) *script {
	life := strings.Contains(src, "local function next_seq(")
	if life {
		// One line of its own, so that the lines of src keep their numbers
		// (a refusal names its line). next_seq sets NEW_LIFE.
		src = "local NEW_LIFE = 0 local function body() " + src + "\nend local r = body() return {NEW_LIFE, r}"
	}
	s := &script{Script: redis.NewScript(src), keys: keys, life: life, src: src}
	scriptsBySHA[s.Hash()] = s
	return s
}

// unwrapLife reads the reply {life, reply} of a script that may start the
// queue's sequence (script.life) and returns reply. life is 1 for the call
// that started it: the first write of the queue, or of its new life after
// Destroy, which removed its name from RegistryKey. That call adds the name
// again (Queue.register; once per life, whichever Queue value in whichever
// process writes first, and nothing more for every other call).
func (q *Queue) unwrapLife(ctx context.Context, r []interface{}) ([]interface{}, error) {
	if len(r) < 1 || len(r) > 2 {
		return nil, fmt.Errorf("redisq: malformed script reply of %d values", len(r))
	}
	if toInt(r[0]) == 1 {
		q.register(ctx)
		if q.onNewLife != nil {
			q.onNewLife(ctx)
		}
	}
	if len(r) == 1 {
		return nil, redis.Nil // the script returned nil
	}
	inner, ok := r[1].([]interface{})
	if !ok {
		return nil, fmt.Errorf("redisq: malformed script reply %T", r[1])
	}
	return inner, nil
}

// scriptsBySHA finds a script by the SHA-1 Redis names it by in errors.
var scriptsBySHA = map[string]*script{}

// withRID marks s as declaring its request's reply key.
func (s *script) withRID() *script { s.rid = true; return s }

// acked marks s as an acknowledging write.
func (s *script) acked() *script { s.acks = true; return s }

// The keys a call adds: an item's hash, a lease's ack tombstone, a request's
// reply.
func (q *Queue) itemKey(id string) string  { return q.mpref + id }
func (q *Queue) tombKey(tok string) string { return q.kpref + "a:" + tok }
func (q *Queue) ridKey(rid string) string  { return q.kpref + "r:" + rid }

// runOnce is run with a new request id as the last argument, for the scripts
// that make a rerun of the same call (go-redis retries a command whose reply
// was lost to a broken connection or a timeout) return the first run's
// reply instead of acting again or reporting a contradicting outcome.
func (q *Queue) runOnce(ctx context.Context, s *script, extra []string, args ...interface{}) ([]interface{}, error) {
	rid := q.inst + strconv.FormatUint(q.reqSeq.Add(1), 36)
	if s.rid {
		extra = append(extra, q.ridKey(rid))
	}
	return q.run(ctx, s, extra, append(args, rid)...)
}

// run runs s with its keys and extra, and ARGV[1] the item hash prefix
// followed by args. A call refused because its slot is migrating is retried
// (see retryMigrating).
func (q *Queue) run(ctx context.Context, s *script, extra []string, args ...interface{}) ([]interface{}, error) {
	keys := make([]string, 0, len(s.keys)+len(extra))
	for _, k := range s.keys {
		keys = append(keys, q.keys[k])
	}
	keys = append(keys, extra...)
	a := make([]interface{}, 0, len(args)+1)
	a = append(a, q.mpref)
	a = append(a, args...)
	var r []interface{}
	err := q.retryMigrating(ctx, func() error {
		var err error
		if s.acks && q.opt.replicas > 0 {
			r, err = q.runReplicated(ctx, s, keys, a)
			return err
		}
		r, err = s.Run(ctx, q.client, keys, a...).Slice()
		return err
	})
	if r != nil && s.life {
		// A reply that came with an error (ErrNotReplicated) still tells.
		var uerr error
		if r, uerr = q.unwrapLife(ctx, r); err == nil {
			err = uerr
		}
	}
	return r, q.permissionError(err)
}

// ErrNotReplicated is wrapped by the error of an acknowledging write that
// fewer replicas than WithReplicaAcks asks for confirmed within its timeout.
// The write was applied on the master: it may or may not survive a
// failover. Retry it where the call is idempotent (an Enqueue with the same
// id gets ErrDuplicate if it survived, an Ack nil).
var ErrNotReplicated = errors.New("redisq: write not confirmed by enough replicas")

// runReplicated runs s and then WAIT on the same connection, in one
// pipelined round trip (WAIT counts the replicas that acknowledged every
// write of its connection so far); an ErrNotReplicated comes with the
// script's reply. On a Cluster the pipeline goes to the
// master of the queue's slot.
func (q *Queue) runReplicated(ctx context.Context, s *script, keys []string, args []interface{}) ([]interface{}, error) {
	node, err := q.masterFor(ctx)
	if err != nil {
		return nil, err
	}
	n, timeout := q.opt.replicas, q.opt.replicaTimeout
	run := func(sha bool) (*redis.Cmd, *redis.IntCmd, error) {
		var ev *redis.Cmd
		var w *redis.IntCmd
		_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			if sha {
				ev = s.EvalSha(ctx, p, keys, args...)
			} else {
				ev = s.Eval(ctx, p, keys, args...)
			}
			w = redis.NewIntCmd(ctx, "wait", n, timeout.Milliseconds())
			return p.Process(ctx, w)
		})
		return ev, w, err
	}
	ev, w, _ := run(true)
	if err := ev.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		ev, w, _ = run(false)
	}
	r, err := ev.Slice()
	if err != nil {
		if moved, _ := movedError(err); moved {
			q.reloadSlots(ctx)
		}
		var op *net.OpError
		if _, cluster := q.client.(*redis.ClusterClient); cluster && errors.As(err, &op) && op.Op == "dial" {
			// The master is gone (a failover is under way): the script
			// never reached it. Find the new master, as the cluster
			// client does for its own commands.
			q.reloadSlots(ctx)
			return nil, masterDown{err}
		}
		return nil, err
	}
	// The reply goes back with ErrNotReplicated: the write was applied.
	got, err := w.Result()
	if err != nil {
		return r, fmt.Errorf("%w: WAIT: %v", ErrNotReplicated, err)
	}
	if got < int64(n) {
		return r, fmt.Errorf("%w: %d of %d replicas within %v; the write may or may not survive a failover", ErrNotReplicated, got, n, timeout)
	}
	return r, nil
}

// masterFor returns the client of the node that holds the queue's keys:
// the client itself on one server, the master of the queue's slot on a
// Cluster.
func (q *Queue) masterFor(ctx context.Context) (*redis.Client, error) {
	switch c := q.client.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, q.keys[kSched])
	}
	return nil, fmt.Errorf("redisq: WithReplicaAcks needs a *redis.Client or *redis.ClusterClient, not %T", q.client)
}

// reloadSlots refreshes a Cluster client's slot map after a MOVED reply
// that went around it (masterFor's node answered for a slot it lost).
func (q *Queue) reloadSlots(ctx context.Context) {
	if c, ok := q.client.(*redis.ClusterClient); ok {
		c.ReloadState(ctx)
	}
}

// masterDown is runReplicated's error when the master of the queue's slot
// could not be dialled: retried like a migration, while the cluster fails
// over.
type masterDown struct{ err error }

func (e masterDown) Error() string { return e.err.Error() }
func (e masterDown) Unwrap() error { return e.err }

// movedError reports whether err is a MOVED or ASK redirect.
func movedError(err error) (bool, bool) {
	var re redis.Error
	if !errors.As(err, &re) {
		return false, false
	}
	s := re.Error()
	return strings.HasPrefix(s, "MOVED "), strings.HasPrefix(s, "ASK ")
}

// Backoff of retryMigrating: from migrateBackoffMin, doubling up to
// migrateBackoffMax between tries.
const (
	migrateBackoffMin = 5 * time.Millisecond
	migrateBackoffMax = 250 * time.Millisecond
)

// retryMigrating runs call until it returns anything but an error of a slot
// that is migrating (see migrating), with a backoff, for at most the
// queue's migration wait (WithMigrationWait) or until ctx ends. Every
// script call is safe to run again after such an error: Redis refused it
// before it ran (TRYAGAIN, ASK, MOVED, CLUSTERDOWN), or it stopped at a key
// that had moved before its first write (scripts read every key they find
// while running before they write).
func (q *Queue) retryMigrating(ctx context.Context, call func() error) error {
	err := call()
	if err == nil || !migrating(err) || q.opt.migrationWait <= 0 {
		return err
	}
	deadline := time.Now().Add(q.opt.migrationWait)
	wait := migrateBackoffMin
	for migrating(err) {
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, migrateBackoffMax)
		err = call()
	}
	return err
}

// migrationPause is how long a blocked wait refused while its slot
// migrates pauses before the claim that follows it.
const migrationPause = 50 * time.Millisecond

// pauseForMigration waits migrationPause, or until ctx ends: a blocked wait
// refused while the slot migrates comes back this late instead of spinning.
func (q *Queue) pauseForMigration(ctx context.Context) {
	t := time.NewTimer(migrationPause)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// migrating reports whether err is Redis Cluster saying that the keys of a
// call are moving between nodes (or the cluster is reconfiguring): TRYAGAIN,
// an ASK or MOVED redirect that go-redis did not follow to the end,
// CLUSTERDOWN, a script stopped at a key already moved ("non local key"),
// or runReplicated finding the master gone (masterDown, during a failover).
func migrating(err error) bool {
	if errors.As(err, new(masterDown)) {
		return true
	}
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return false
	}
	s := re.Error()
	for _, p := range []string{"TRYAGAIN", "ASK ", "MOVED ", "CLUSTERDOWN"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return strings.Contains(s, "non local key")
}
