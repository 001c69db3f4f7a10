package rdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Runner runs the scripts of one queue. Every call goes through run (or
// runChunks for a pipeline): the queue's fixed keys a script declares, the
// item hash prefix as ARGV[1], a request id for the scripts that take one
// (runOnce), retries while the queue's Cluster slot migrates, WAIT for
// WithReplicaAcks, a queue's new life reported, and Redis' refusals of the
// ACL turned into a PermissionError. Safe for concurrent use once set up.
type Runner struct {
	Client redis.UniversalClient
	Keys   Keys
	// MigrationWait bounds the retries of a call while its slot migrates
	// (0: none).
	MigrationWait time.Duration
	// Replicas and ReplicaTimeout: WAIT after every acknowledging write
	// (Replicas 0: none).
	Replicas       int
	ReplicaTimeout time.Duration
	// NewLife is called by the call that started the queue's sequence:
	// the first write of a new queue, or of one destroyed.
	NewLife func(ctx context.Context)
	// Inst prefixes the request ids of this Runner's calls (random per
	// Queue value).
	Inst string

	reqSeq atomic.Uint64
}

// ErrNotReplicated is wrapped by the error of an acknowledging write that
// fewer replicas than asked confirmed within the timeout (see redisq).
var ErrNotReplicated = errors.New("redisq: write not confirmed by enough replicas")

// run runs s with its keys and extra, and ARGV[1] the item hash prefix
// followed by args. A call refused because its slot is migrating is retried
// (see retryMigrating).
func (r *Runner) run(ctx context.Context, s *Script, extra []string, args ...interface{}) ([]interface{}, error) {
	keys := r.keysOf(s, extra)
	a := make([]interface{}, 0, len(args)+1)
	a = append(a, r.Keys.Items)
	a = append(a, args...)
	var res []interface{}
	err := r.retryMigrating(ctx, func() error {
		var err error
		if s.acks && r.Replicas > 0 {
			res, err = r.runReplicated(ctx, s, keys, a)
			return err
		}
		res, err = s.Run(ctx, r.Client, keys, a...).Slice()
		return err
	})
	if res != nil && s.life {
		// A reply that came with an error (ErrNotReplicated) still tells.
		var uerr error
		if res, uerr = r.unwrapLife(ctx, res); err == nil {
			err = uerr
		}
	}
	return res, r.permissionError(err)
}

func (r *Runner) keysOf(s *Script, extra []string) []string {
	keys := make([]string, 0, len(s.keys)+len(extra))
	for _, k := range s.keys {
		keys = append(keys, r.Keys.fixed(k))
	}
	return append(keys, extra...)
}

// runOnce is run with a new request id as the last argument, for the
// scripts that make a rerun of the same call (go-redis retries a command
// whose reply was lost to a broken connection or a timeout) return the
// first run's reply instead of acting again or reporting a contradicting
// outcome.
func (r *Runner) runOnce(ctx context.Context, s *Script, extra []string, args ...interface{}) ([]interface{}, error) {
	rid := r.Inst + strconv.FormatUint(r.reqSeq.Add(1), 36)
	if s.rid {
		extra = append(extra, r.Keys.Reply(rid))
	}
	return r.run(ctx, s, extra, append(args, rid)...)
}

// unwrapLife reads the reply {life, reply} of a script that may start the
// queue's sequence (Script.life) and returns reply. life is 1 for the call
// that started it: the first write of the queue, or of its new life after
// Destroy, which removed its name from RegistryKey; that call reports it
// (Runner.NewLife: once per life, whichever Queue value in whichever
// process writes first, and nothing more for every other call).
func (r *Runner) unwrapLife(ctx context.Context, res []interface{}) ([]interface{}, error) {
	if len(res) < 1 || len(res) > 2 {
		return nil, fmt.Errorf("redisq: malformed script reply of %d values", len(res))
	}
	if toInt(res[0]) == 1 && r.NewLife != nil {
		r.NewLife(ctx)
	}
	if len(res) == 1 {
		return nil, redis.Nil // the script returned nil
	}
	inner, ok := res[1].([]interface{})
	if !ok {
		return nil, fmt.Errorf("redisq: malformed script reply %T", res[1])
	}
	return inner, nil
}

// runReplicated runs s and then WAIT on the same connection, in one
// pipelined round trip (WAIT counts the replicas that acknowledged every
// write of its connection so far); an ErrNotReplicated comes with the
// script's reply. On a Cluster the pipeline goes to the master of the
// queue's slot.
func (r *Runner) runReplicated(ctx context.Context, s *Script, keys []string, args []interface{}) ([]interface{}, error) {
	node, err := r.MasterFor(ctx)
	if err != nil {
		return nil, err
	}
	n, timeout := r.Replicas, r.ReplicaTimeout
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
	res, err := ev.Slice()
	if err != nil {
		if moved, _ := movedError(err); moved {
			r.reloadSlots(ctx)
		}
		var op *net.OpError
		if _, cluster := r.Client.(*redis.ClusterClient); cluster && errors.As(err, &op) && op.Op == "dial" {
			// The master is gone (a failover is under way): the script
			// never reached it. Find the new master, as the cluster
			// client does for its own commands.
			r.reloadSlots(ctx)
			return nil, masterDown{err}
		}
		return nil, err
	}
	// The reply goes back with ErrNotReplicated: the write was applied.
	got, err := w.Result()
	if err != nil {
		return res, fmt.Errorf("%w: WAIT: %v", ErrNotReplicated, err)
	}
	if got < int64(n) {
		return res, fmt.Errorf("%w: %d of %d replicas within %v; the write may or may not survive a failover", ErrNotReplicated, got, n, timeout)
	}
	return res, nil
}

// MasterFor returns the client of the node that holds the queue's keys:
// the client itself on one server, the master of the queue's slot on a
// Cluster.
func (r *Runner) MasterFor(ctx context.Context) (*redis.Client, error) {
	switch c := r.Client.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, r.Keys.Sched)
	}
	return nil, fmt.Errorf("redisq: WithReplicaAcks needs a *redis.Client or *redis.ClusterClient, not %T", r.Client)
}

// reloadSlots refreshes a Cluster client's slot map after a MOVED reply
// that went around it (MasterFor's node answered for a slot it lost).
func (r *Runner) reloadSlots(ctx context.Context) {
	if c, ok := r.Client.(*redis.ClusterClient); ok {
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
// that is migrating (see Migrating), with a backoff, for at most the
// queue's migration wait or until ctx ends. Every script call is safe to
// run again after such an error: Redis refused it before it ran (TRYAGAIN,
// ASK, MOVED, CLUSTERDOWN), or it stopped at a key that had moved before
// its first write (scripts read every key they find while running before
// they write).
func (r *Runner) retryMigrating(ctx context.Context, call func() error) error {
	err := call()
	if err == nil || !Migrating(err) || r.MigrationWait <= 0 {
		return err
	}
	deadline := time.Now().Add(r.MigrationWait)
	wait := migrateBackoffMin
	for Migrating(err) {
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

// Migrating reports whether err is Redis Cluster saying that the keys of a
// call are moving between nodes (or the cluster is reconfiguring):
// TRYAGAIN, an ASK or MOVED redirect that go-redis did not follow to the
// end, CLUSTERDOWN, a script stopped at a key already moved ("non local
// key"), or runReplicated finding the master gone (during a failover).
func Migrating(err error) bool {
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

// toInt reads an integer of a script's reply.
func toInt(v interface{}) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// ToMS reads a millisecond value as the scripts reply it: an integer, or a
// score or hash field that Redis formatted as a float.
func ToMS(v interface{}) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n
		}
		f, err := strconv.ParseFloat(x, 64)
		if err != nil || math.IsNaN(f) {
			return 0
		}
		return int64(max(min(f, math.MaxInt64/2), math.MinInt64/2))
	}
	return 0
}

// errUnexpected is the error of a reply no script sends.
func errUnexpected(call string, res []interface{}) error {
	return fmt.Errorf("redisq: %s: unexpected reply %v", call, res)
}
