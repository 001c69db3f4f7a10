package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// RegistryKey is the Redis set of queue names on a server: New adds its
// queue's name (one SADD), Destroy removes it, ListQueues reads it, and a
// QueueScanner adds the queues it finds. The write that starts a queue's
// sequence (its first, or its first after Destroy, by any Queue value of
// any process) adds the name again: its script says so in its reply, so
// that a queue written again after Destroy is listed, at one SADD per life
// of the queue and none for any other call. Its hash tag {dq} is not of the
// form {dq:NAME}, so no queue's key can be it, and the queue-key pattern
// {dq:*}:seq does not match it. On a Cluster it lives on the master of
// {dq}'s slot, while the queues live on theirs.
//
// The registry is a list of names to look at, not the truth: a name stays in
// it after its queue's keys are gone by other means than Destroy (or when
// New was called for a queue never used), and ListQueues skips it; a queue
// is missing from it when every process using it runs a version of redisq
// from before the registry, or writes its keys by hand, until a process of
// this version calls New on it or a QueueScanner finds it.
const RegistryKey = rdb.RegistryKey

// validName reports whether New accepts name as a queue name.
func validName(name string) bool { return rdb.ValidName(name) }

// register adds the queue's name to RegistryKey: one SADD, which Redis
// neither propagates nor writes to the AOF when the name is already there.
// New calls it, and so does the call that starts the queue's sequence
// (unwrapLife).
// It is best effort: New succeeds when the SADD fails (a read-only ACL
// user, a replica), so that a process that may only read still opens
// queues; the queue is then found by ScanQueues and QueueScanner, and
// listed by ListQueues once any process that may write calls New on it.
func (q *Queue) register(ctx context.Context) {
	if q.opt.noRegistry {
		return
	}
	if err := rdb.Register(ctx, q.client, RegistryKey, q.name); err != nil {
		q.opt.logger.Debug("redisq: queue not added to the registry", "key", RegistryKey, "err", err)
	}
}

// newLife runs when a call of this Queue value started the queue's
// sequence: the first write of the queue, or of its new life after
// Destroy, which removed its name from RegistryKey. It adds the name again
// (once per life, whichever Queue value in whichever process writes
// first), and for a partition also its partitioned queue's.
func (q *Queue) newLife(ctx context.Context) {
	q.register(ctx)
	if q.onNewLife != nil {
		q.onNewLife(ctx)
	}
}

// unregister removes the queue's name from RegistryKey at the end of
// Destroy, given Destroy's result so far: after a complete Destroy
// (err nil) and when the queue had no data (ErrNoQueue, so that a name
// New registered for a queue never used can be removed). After any other
// error keys of the queue may be left, so its name stays for ListQueues
// to find. It returns err, or the SREM's error in place of a nil err.
func (q *Queue) unregister(ctx context.Context, err error) error {
	if err != nil && !errors.Is(err, ErrNoQueue) {
		return err
	}
	if rerr := rdb.Unregister(ctx, q.client, RegistryKey, q.name); rerr != nil && err == nil {
		return fmt.Errorf("redisq: queue deleted, but its name is still in %s: %w", RegistryKey, rerr)
	}
	return err
}

// ListQueues returns the names of the queues registered on the server that
// c talks to (RegistryKey) that have their sequence key ({dq:NAME}:seq,
// created by the first Enqueue or Schedule and removed only by Destroy),
// sorted. Its cost grows with the number of registered names, not with the
// keyspace: SSCAN pages of 1000 names, then one EXISTS per name, pipelined
// by 1000 (on a Cluster, the pipeline goes to every master holding one of
// the queues). A name whose EXISTS Redis refuses (an ACL user allowed only
// some keys) is listed, so that using the queue reports the refusal. It
// works with any redis.UniversalClient.
//
// Queues that no process of this version has opened with New since they
// were created (by an older version, or by hand) are not registered; find
// them with ScanQueues, or a QueueScanner, which registers them.
func ListQueues(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	cands, err := rdb.Registered(ctx, c, RegistryKey)
	if err != nil {
		return nil, err
	}
	names, err := existing(ctx, c, cands)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// existing returns the names in names whose sequence key exists, in order
// (see rdb.QueuesExist). A name whose EXISTS Redis refuses with an error
// reply (an ACL user allowed only some keys) is kept: whether it exists is
// unknown, and using the queue will say why.
func existing(ctx context.Context, c redis.UniversalClient, names []string) ([]string, error) {
	ex, err := rdb.QueuesExist(ctx, c, names)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, e := range ex {
		if e.Exists || e.Refused {
			out = append(out, names[i])
		}
	}
	return out, nil
}

// ScanQueues returns the names of every queue on the server that c talks
// to, registered or not, sorted: every queue that has its sequence key. It
// SCANs the whole keyspace in pages of 1000 keys (many short commands, no
// long-running one, so it is safe on a live server, but its time grows
// with the number of keys: seconds for millions), on every master of a
// Cluster or every shard of a Ring. It changes nothing. Use ListQueues
// where the cost must not grow with the keyspace.
func ScanQueues(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	set := map[string]bool{}
	err := rdb.ScanQueues(ctx, c, func(names []string) error {
		for _, n := range names {
			set[n] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sortedKeys(set), nil
}

func sortedKeys(set map[string]bool) []string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// QueueScanner finds queues as ScanQueues does, at a bounded cost per
// call: each Next examines a fixed number of keys on each node, resuming
// where the previous call stopped, and starts a node's keyspace over once
// it has gone through it. Over enough calls it finds every queue, so a
// process that looks periodically (dqprom's server-wide collector) finds
// the queues missing from the registry without ever scanning the whole
// keyspace at once. It adds what it finds to the registry (one SADD per
// call that found something), so that ListQueues lists those queues from
// then on; when it may not (a read-only ACL user), it keeps them and
// returns them from every later call while they exist. Safe for
// concurrent use: calls run one at a time.
type QueueScanner struct {
	c redis.UniversalClient

	mu      sync.Mutex
	cursors map[string]uint64 // guarded by mu: SCAN cursor per node address
	kept    map[string]bool   // guarded by mu: found, not registered
}

// NewQueueScanner returns a QueueScanner of the server (every master of a
// Cluster, every shard of a Ring) that c talks to: c must be a
// *redis.Client, *redis.ClusterClient or *redis.Ring.
func NewQueueScanner(c redis.UniversalClient) *QueueScanner {
	return &QueueScanner{c: c, cursors: map[string]uint64{}, kept: map[string]bool{}}
}

// Next SCANs about keys keys on each node (pages of at most 1000, so
// ceil(keys/1000) SCAN commands per node; fewer when the node's keyspace
// ends first, which ends the call's SCAN there) and returns, sorted, the
// queues whose sequence keys it saw, plus the ones kept from earlier calls
// that still exist (one EXISTS each, pipelined). keys <= 0 only checks the
// kept ones. A SCAN may return a key more than once, and misses keys
// created or deleted during its pass, which the next pass finds. On an
// error the nodes that answered keep their progress, and Next returns what
// it found with the error.
func (s *QueueScanner) Next(ctx context.Context, keys int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []string
	var ferr error
	if keys > 0 {
		page := min(keys, rdb.ScanPage)
		pages := (keys + page - 1) / page
		var fmu sync.Mutex
		ferr = rdb.ForEachNode(ctx, s.c, func(ctx context.Context, node *redis.Client) error {
			addr := rdb.NodeAddr(node)
			fmu.Lock()
			cur := s.cursors[addr]
			fmu.Unlock()
			var err error
			for range pages {
				var names []string
				names, cur, err = rdb.ScanQueuesPage(ctx, node, cur, int64(page))
				if err != nil {
					break
				}
				fmu.Lock()
				found = append(found, names...)
				fmu.Unlock()
				if cur == 0 {
					break // the pass over this node is complete
				}
			}
			fmu.Lock()
			if err == nil {
				s.cursors[addr] = cur
			}
			fmu.Unlock()
			return err
		})
	}
	set := map[string]bool{}
	if len(found) > 0 {
		for _, n := range found {
			set[n] = true
		}
		if err := rdb.Register(ctx, s.c, RegistryKey, sortedKeys(set)...); err != nil {
			for n := range set {
				s.kept[n] = true
			}
		} else {
			for n := range set {
				delete(s.kept, n)
			}
		}
	}
	var check []string
	for n := range s.kept {
		if !set[n] {
			check = append(check, n)
		}
	}
	if len(check) > 0 {
		slices.Sort(check)
		alive, err := existing(ctx, s.c, check)
		if err != nil {
			// Unchecked: report them as before rather than lose them.
			alive = check
			ferr = errors.Join(ferr, err)
		}
		for _, n := range check {
			delete(s.kept, n)
		}
		for _, n := range alive {
			s.kept[n] = true
			set[n] = true
		}
	}
	return sortedKeys(set), ferr
}
