package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Tests of redisq on a local Redis Cluster: the API end to end, the nodes
// that New, Destroy and Audit talk to, slot migration under load, and
// failover with and without WithReplicaAcks.

// clusterClient returns a client of c closed at test cleanup.
func clusterClient(t testing.TB, c *redistest.Cluster) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// nodeClient returns a client of one node closed at test cleanup.
func nodeClient(t testing.TB, s *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Every call of the API on a Cluster of three masters with a replica each.
func TestClusterEveryCall(t *testing.T) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "every", WithVisibilityTimeout(time.Minute), WithMaxAttempts(2), WithBackoff(0, 0), WithWakeCap(time.Second))
	other := newQueue(t, cc, "every", WithVisibilityTimeout(time.Minute))

	_, err := q.EnqueueAfter(ctx, "a", []byte("pa"), 0)
	require.NoError(t, err)
	res, err := q.EnqueueMany(ctx, []EnqueueItem{{ID: "b"}, {ID: "c"}, {ID: "d", After: time.Hour}, {ID: "a"}})
	require.NoError(t, err)
	require.ErrorIs(t, res[3].Err, ErrDuplicate)
	r, err := q.Schedule(ctx, "e", []byte("pe"), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.True(t, r.Created)
	due, err := q.RescheduleAfter(ctx, "e", 0)
	require.NoError(t, err)
	untilRedisTime(t, cc, due)
	ms, err := q.TakeBatch(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c", "e"}, []string{ms[0].ID, ms[1].ID, ms[2].ID, ms[3].ID})
	require.NoError(t, ms[0].Ack(ctx))
	require.NoError(t, ms[1].Extend(ctx, time.Hour))
	_, err = ms[2].DeadLetter(ctx, "bad")
	require.NoError(t, err)
	require.NoError(t, q.AckMany(ctx, ms[3:])[0])

	// A taker of another Queue value, blocked, is woken for b, nacked due
	// at once; its AckTake acks b and then waits (d is an hour away).
	got := takeAsync(func() (*Message, error) { return other.Take(ctx) })
	eventually(t, 10*time.Second, "other blocked", func() bool {
		st, err := other.Stats(ctx)
		return err == nil && st.InFlight == 1 && len(got) == 0
	})
	require.NoError(t, ms[1].NackAfter(ctx, 0))
	m, ok := <-got
	require.True(t, ok)
	require.Equal(t, "b", m.ID)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = other.AckTake(tctx, m)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = q.Get(ctx, "b")
	require.ErrorIs(t, err, ErrNotFound, "AckTake acked b")

	require.NoError(t, q.Pause(ctx))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.True(t, st.Paused)
	require.NoError(t, q.Resume(ctx))
	require.NoError(t, q.RequeueDead(ctx, "c"))
	out, err := q.Cancel(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, CancelRemoved, out)
	p, err := q.List(ctx, StateScheduled, ListOptions{Payloads: true})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	it, err := q.GetPrefix(ctx, "d", 10)
	require.NoError(t, err)
	require.Equal(t, "d", it.ID)
	_, err = q.DueHistogram(ctx, time.Minute, 60)
	require.NoError(t, err)
	n, err := q.Purge(ctx, StateScheduled)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	audit(t, q)
	names, err := ListQueues(ctx, cc)
	require.NoError(t, err)
	require.Contains(t, names, "every")
	_, err = q.Destroy(ctx)
	require.NoError(t, err)
}

// Regression (issue 19): New checked maxmemory-policy on whichever master
// go-redis picked, so a queue whose master evicts passed 10 times in 12. It
// now reads the master of the queue's slot and its replicas, every time.
func TestClusterEvictionCheckReadsTheQueuesNodes(t *testing.T) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1})
	cc := clusterClient(t, c)
	ctx := context.Background()
	key := "{dq:ev}:sched"
	master, err := c.MasterOf(ctx, key)
	require.NoError(t, err)
	replicas, err := c.ReplicasOf(ctx, key)
	require.NoError(t, err)
	require.Len(t, replicas, 1)
	var stranger *redistest.Server
	for _, s := range c.Servers {
		if s != master && s != replicas[0] {
			stranger = s
			break
		}
	}
	setPolicy := func(s *redistest.Server, p string) {
		require.NoError(t, nodeClient(t, s).ConfigSet(ctx, "maxmemory-policy", p).Err())
	}
	tryNew := func() error {
		q, err := New(ctx, cc, "ev")
		if err == nil {
			_ = q.Close()
		}
		return err
	}

	setPolicy(master, "allkeys-lru")
	for range 12 {
		require.ErrorIs(t, tryNew(), ErrEvictionPolicy, "the queue's master evicts")
	}
	setPolicy(master, "noeviction")
	setPolicy(replicas[0], "volatile-lru")
	for range 12 {
		err := tryNew()
		require.ErrorIs(t, err, ErrEvictionPolicy, "the queue's replica evicts")
		require.ErrorContains(t, err, "replica")
	}
	setPolicy(replicas[0], "noeviction")
	setPolicy(stranger, "allkeys-lru")
	for range 12 {
		require.NoError(t, tryNew(), "another node's policy is not the queue's")
	}
}

// Regression (issue 24): on a new Cluster (nothing written yet)
// allkeys-lru on the replica of the queue's master passed New's check:
// Redis 7.0 leaves a replica with replication offset 0 out of CLUSTER
// SLOTS, where New looked for replicas, and go-redis does not know it
// either. New now finds replicas with CLUSTER SHARDS and asks one the
// client does not know through a connection of its own.
func TestClusterEvictionCheckFindsANewReplica(t *testing.T) {
	// Without the master's replication PING (every 10 s by default) a
	// replica's offset stays 0 until the first write.
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1, Fresh: true,
		Args: []string{"--repl-ping-replica-period", "3600", "--repl-timeout", "7200"}})
	cc := clusterClient(t, c)
	ctx := context.Background()
	key := "{dq:fresh}:sched"
	replicas, err := c.ReplicasOf(ctx, key)
	require.NoError(t, err)
	require.Len(t, replicas, 1)
	slots, err := cc.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	for _, r := range slots {
		require.Len(t, r.Nodes, 1, "CLUSTER SLOTS lists a replica: the cluster has replicated something")
	}
	rc := nodeClient(t, replicas[0])
	require.NoError(t, rc.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	for range 3 {
		_, err = New(ctx, cc, "fresh")
		require.ErrorIs(t, err, ErrEvictionPolicy, "the queue's replica evicts")
		require.ErrorContains(t, err, replicas[0].Addr)
	}
	// The connections made for the check (their last command CONFIG GET)
	// are closed.
	eventually(t, 5*time.Second, "the check's connections closed", func() bool {
		l, err := rc.ClientList(ctx).Result()
		return err == nil && !strings.Contains(l, "cmd=config|get")
	})
	require.NoError(t, rc.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	q, err := New(ctx, cc, "fresh")
	require.NoError(t, err)
	require.NoError(t, q.Close())
}

// cmdCalls reads a node's call count of one command (INFO commandstats,
// e.g. "scan" or "cluster|getkeysinslot").
func cmdCalls(t testing.TB, c *redis.Client, cmd string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range splitLines(info) {
		var n int64
		if _, err := fmt.Sscanf(line, "cmdstat_"+cmd+":calls=%d", &n); err == nil {
			return n
		}
	}
	return 0
}

// Regression (issue 19): Destroy and Audit SCANned every master for keys
// that live in one slot. They now touch only the master of the queue's slot,
// and Destroy counts every key it deletes.
func TestClusterDestroyAndAuditTouchOnlyTheSlot(t *testing.T) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "slotonly", WithVisibilityTimeout(time.Hour))
	killAll(t, q, "d", 2)
	seed(t, q, ids("s", 50))
	_, err := q.Take(ctx)
	require.NoError(t, err)
	master, err := c.MasterOf(ctx, q.db.Keys.Sched)
	require.NoError(t, err)
	others := map[*redistest.Server]int64{}
	for _, s := range c.Servers {
		if s != master {
			others[s] = cmdCalls(t, nodeClient(t, s), "scan")
		}
	}
	mc := nodeClient(t, master)
	before, err := mc.Keys(ctx, "{dq:slotonly}:*").Result()
	require.NoError(t, err)

	audit(t, q)
	n, err := q.Destroy(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(before), n, "keys deleted")
	left, err := mc.Keys(ctx, "{dq:slotonly}:*").Result()
	require.NoError(t, err)
	require.Empty(t, left)
	for s, scans := range others {
		require.Equal(t, scans, cmdCalls(t, nodeClient(t, s), "scan"), "%s was SCANned", s.Addr)
	}
	require.Positive(t, cmdCalls(t, mc, "cluster|getkeysinslot"))
}

// Regression (issue 24): Audit SCANned the whole master once the queue's
// slot held more than 10,000 keys (16 SCAN calls over a master of 15,163
// keys), though the docs said it read only the slot. It now lists at most
// 10,000 keys of the slot and reads the hashes the zsets name: no SCAN,
// every named item checked, and the keys it did not list counted.
func TestClusterAuditOfALargeSlotStaysInTheSlot(t *testing.T) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "bigslot", WithVisibilityTimeout(time.Hour))
	seed(t, q, ids("s", slotKeysAtOnce+500))
	// s0 and s1, the first items, are the slot's oldest keys: s0 gets a
	// state its zset does not match, s1 loses its hash; an orphan hash is
	// the newest key.
	require.NoError(t, cc.HSet(ctx, q.itemKey("s0"), "st", "l").Err())
	require.NoError(t, cc.Del(ctx, q.itemKey("s1")).Err())
	require.NoError(t, cc.HSet(ctx, q.itemKey("orphan"), "st", "s", "mem", "0000000000000001:orphan").Err())
	master, err := c.MasterOf(ctx, q.db.Keys.Sched)
	require.NoError(t, err)
	mc := nodeClient(t, master)
	slot := keySlot(q.db.Keys.Sched)
	n, err := mc.ClusterCountKeysInSlot(ctx, slot).Result()
	require.NoError(t, err)
	require.Greater(t, n, int64(slotKeysAtOnce))
	scans := map[*redistest.Server]int64{}
	for _, s := range c.Servers {
		scans[s] = cmdCalls(t, nodeClient(t, s), "scan")
	}

	r, err := q.Audit(ctx)
	require.NoError(t, err)
	info, err := mc.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	for _, line := range splitLines(info) {
		if strings.HasPrefix(line, "cmdstat_cluster|getkeysinslot:") {
			t.Logf("%d keys in the slot; %s", n, line)
		}
	}
	for s, n := range scans {
		require.Equal(t, n, cmdCalls(t, nodeClient(t, s), "scan"), "%s was SCANned", s.Addr)
	}
	require.Equal(t, slotKeysAtOnce+500, r.Items, "every item hash the zsets name, and the orphan")
	require.Equal(t, slotKeysAtOnce+500, r.Scheduled)
	require.Positive(t, r.Unlisted)
	all := strings.Join(r.Problems, "\n")
	require.Contains(t, all, `item "s0" (state l)`)
	require.Contains(t, all, `orphan member "`)
	require.Contains(t, all, `:s1" in {dq:bigslot}:sched`)
	// The orphan hash is found when the listing reached it (Redis 7.0
	// lists a slot's newest keys first).
	listed, err := mc.ClusterGetKeysInSlot(ctx, slot, slotKeysAtOnce).Result()
	require.NoError(t, err)
	want := 3 // s0 twice (in sched, not in lease), s1
	if slices.Contains(listed, q.itemKey("orphan")) {
		require.Contains(t, all, `item "orphan" (state s)`)
		want++
	} else {
		t.Logf("the orphan hash was not among the %d keys listed", len(listed))
	}
	require.Len(t, r.Problems, want, "%q", r.Problems)
}

// migrateSlot moves the slot of key from its master to dst as redis-cli
// --cluster reshard does: IMPORTING/MIGRATING, MIGRATE in batches of 10
// keys, then NODE on every master. It returns how long it took.
func migrateSlot(t testing.TB, c *redistest.Cluster, key string, dst *redistest.Server) time.Duration {
	t.Helper()
	ctx := context.Background()
	src, err := c.MasterOf(ctx, key)
	require.NoError(t, err)
	require.NotEqual(t, src, dst)
	sc, dc := nodeClient(t, src), nodeClient(t, dst)
	slot := keySlot(key)
	srcID, err := sc.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	dstID, err := dc.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	host, port, _ := strings.Cut(dst.Addr, ":")
	start := time.Now()
	require.NoError(t, dc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	require.NoError(t, sc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	for {
		keys, err := sc.ClusterGetKeysInSlot(ctx, slot, 10).Result()
		require.NoError(t, err)
		if len(keys) == 0 {
			break
		}
		args := []interface{}{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		require.NoError(t, sc.Do(ctx, args...).Err())
	}
	for _, s := range c.Servers {
		_ = nodeClient(t, s).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
	}
	return time.Since(start)
}

// A queue's slot moves to another master under load (issue 19: it gave 124
// client-visible errors in 2.3 s): producers and consumers see no error, as
// calls refused while the slot moves are retried (WithMigrationWait), and
// nothing is lost or duplicated by a script stopped half-way.
func TestClusterSlotMigrationUnderLoad(t *testing.T) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "moving", WithVisibilityTimeout(30*time.Second), WithWakeCap(time.Second))
	// Four thousand items an hour away: the slot has that many keys to move.
	far := make([]EnqueueItem, 4000)
	for i := range far {
		far[i] = EnqueueItem{ID: fmt.Sprint("far", i), After: time.Hour}
	}
	_, err := q.EnqueueMany(ctx, far)
	require.NoError(t, err)

	var mu sync.Mutex
	var errs []error
	enqueued := map[string]bool{}
	acked := map[string]int{}
	var slowest time.Duration // the longest Enqueue
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	tctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() { // about 1,000 enqueues a second each, due at once
			defer wg.Done()
			for i := 0; tctx.Err() == nil; i++ {
				id := fmt.Sprintf("p%d-%d", p, i)
				t0 := time.Now()
				_, err := q.EnqueueAfter(ctx, id, nil, 0)
				if d := time.Since(t0); d > 0 {
					mu.Lock()
					slowest = max(slowest, d)
					mu.Unlock()
				}
				if err != nil {
					fail(fmt.Errorf("enqueue %s: %w", id, err))
					return
				}
				mu.Lock()
				enqueued[id] = true
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	done := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m *Message
			for {
				next, err := q.AckTake(tctx, m)
				if err != nil {
					if m != nil {
						if err := m.Ack(ctx); err != nil {
							fail(fmt.Errorf("ack %s: %w", m.ID, err))
						}
						mu.Lock()
						acked[m.ID]++
						mu.Unlock()
					}
					if tctx.Err() == nil {
						fail(fmt.Errorf("take: %w", err))
					}
					return
				}
				if m != nil {
					mu.Lock()
					acked[m.ID]++
					mu.Unlock()
				}
				m = next
				select {
				case <-done:
				default:
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	src, err := c.MasterOf(ctx, q.db.Keys.Sched)
	require.NoError(t, err)
	var dst *redistest.Server
	for _, s := range c.Servers {
		if s != src {
			dst = s
			break
		}
	}
	took := migrateSlot(t, c, q.db.Keys.Sched, dst)
	t.Logf("moved the slot of %d+ keys in %v", len(far), took)
	defer func() { t.Logf("the longest Enqueue took %v", slowest) }()
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	close(done)
	require.Empty(t, errs, "client-visible errors while the slot moved")

	// Everything enqueued and due was acked (the rest drains now), the
	// far items are all there, and the stored state is consistent.
	for {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		if st.DueBacklog == 0 && st.InFlight == 0 {
			require.EqualValues(t, len(far), st.Scheduled)
			break
		}
		ms, err := q.TakeBatch(ctx, MaxBatch)
		require.NoError(t, err)
		for i, e := range q.AckMany(ctx, ms) {
			require.NoError(t, e)
			acked[ms[i].ID]++
		}
	}
	for id := range enqueued {
		require.Positive(t, acked[id], "%s lost", id)
	}
	audit(t, q)
	master, err := c.MasterOf(ctx, q.db.Keys.Sched)
	require.NoError(t, err)
	require.Equal(t, dst, master)
}

// failoverLedger is what the traffic of TestClusterFailover saw acknowledged.
type failoverLedger struct {
	mu       sync.Mutex
	enqueued map[string]bool // Enqueue returned nil
	acked    map[string]bool // an ack of it returned nil
	taken    map[string]bool // delivered at least once
	undone   []string        // delivered again after an acknowledged ack
}

// failover runs producers and an AckTake consumer on a queue of a Cluster
// with a replica per master, freezes the replica of the queue's master
// (so that it falls behind), kills the master 300 ms later, lets the
// replica take over, drains the queue and returns what was acknowledged
// and lost: enqueues never delivered, acks undone by a delivery after them.
// Items are due a second after their enqueue, so that some are pending when
// the master dies.
func failover(t *testing.T, opts ...Option) (lost, undone []string, notReplicated int) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	cc := clusterClient(t, c)
	ctx := context.Background()
	// A short lease: an ack the failover undid shows as a redelivery.
	opts = append([]Option{WithVisibilityTimeout(2 * time.Second), WithBackoff(0, 0), WithMaxAttempts(NoAttemptLimit), WithWakeCap(time.Second)}, opts...)
	q := newQueue(t, cc, "fo", opts...)
	master, err := c.MasterOf(ctx, q.db.Keys.Sched)
	require.NoError(t, err)
	replicas, err := c.ReplicasOf(ctx, q.db.Keys.Sched)
	require.NoError(t, err)
	replica := replicas[0]

	l := &failoverLedger{enqueued: map[string]bool{}, acked: map[string]bool{}, taken: map[string]bool{}}
	var notRep sync.Map
	note := func(err error) {
		if errors.Is(err, ErrNotReplicated) {
			notRep.Store(fmt.Sprint(err), true)
		}
	}
	tctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; tctx.Err() == nil; i++ {
				id := fmt.Sprintf("p%d-%d", p, i)
				ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := q.EnqueueAfter(ectx, id, nil, time.Second)
				cancel()
				note(err)
				if err == nil {
					l.mu.Lock()
					l.enqueued[id] = true
					l.mu.Unlock()
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	delivered := func(m *Message) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.acked[m.ID] {
			l.undone = append(l.undone, m.ID)
		}
		l.taken[m.ID] = true
	}
	settle := func(m *Message, err error) {
		note(err)
		if err == nil {
			l.mu.Lock()
			l.acked[m.ID] = true
			l.mu.Unlock()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for tctx.Err() == nil {
			cctx, cancel := context.WithTimeout(tctx, 2*time.Second)
			m, err := q.Take(cctx)
			cancel()
			if err != nil {
				continue
			}
			delivered(m)
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			settle(m, m.Ack(actx))
			cancel()
		}
	}()

	time.Sleep(time.Second)
	replica.Stop() // falls behind: writes reach the master only
	time.Sleep(300 * time.Millisecond)
	master.Kill()
	replica.Cont()
	eventually(t, 30*time.Second, "the replica took over", func() bool {
		m, err := c.MasterOf(ctx, q.db.Keys.Sched)
		return err == nil && m == replica
	})
	// The old master comes back, empty, as the new master's replica, so
	// that writes can be confirmed again.
	require.NoError(t, master.Restart())
	eventually(t, 30*time.Second, "the old master replicates the new one", func() bool {
		r, err := c.ReplicasOf(ctx, q.db.Keys.Sched)
		if err != nil || len(r) != 1 || r[0] != master {
			return false
		}
		info, err := nodeClient(t, master).Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	time.Sleep(time.Second)
	stop()
	wg.Wait()

	// Drain, leases of unconfirmed acks expiring included: every
	// acknowledged enqueue must come out, no acknowledged ack may be undone.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		st, err := q.Stats(ctx)
		if err == nil && st.Scheduled+st.InFlight == 0 {
			break
		}
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ms, err := q.TakeBatch(dctx, MaxBatch)
		cancel()
		if err != nil {
			continue
		}
		for _, m := range ms {
			delivered(m)
			settle(m, m.Ack(ctx))
		}
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	t.Logf("after the drain: %d enqueued, %d delivered, %d acked, %d left", st.Enqueued, st.Delivered, st.Acked, st.Scheduled+st.InFlight+st.Dead)
	for id := range l.enqueued {
		if !l.taken[id] {
			lost = append(lost, id)
		}
	}
	notRep.Range(func(_, _ any) bool { notReplicated++; return true })
	return lost, l.undone, notReplicated
}

// Redis replication is asynchronous: a master killed while its replica lags
// takes the writes it acknowledged meanwhile with it (issue 19 measured 2,421
// of 2,422 enqueues lost and 2,496 acks undone). With WithReplicaAcks every
// acknowledged write is on the replica that takes over: none is lost or
// undone; the writes made while the replica was frozen fail with
// ErrNotReplicated instead.
func TestClusterFailoverWithReplicaAcks(t *testing.T) {
	lost, undone, notRep := failover(t, WithReplicaAcks(1, 200*time.Millisecond))
	t.Logf("with WAIT: %d lost, %d undone, %d distinct ErrNotReplicated errors", len(lost), len(undone), notRep)
	require.Empty(t, lost, "acknowledged enqueues lost")
	require.Empty(t, undone, "acknowledged acks undone")
	require.Positive(t, notRep, "the writes while the replica was frozen were acknowledged")
}

// The same failover without the option, for contrast: writes acknowledged
// while the replica lagged are lost (logged, not asserted: how many depends
// on timing).
func TestClusterFailoverWithoutReplicaAcks(t *testing.T) {
	if testing.Short() {
		t.Skip("a contrast, not a guarantee")
	}
	lost, undone, _ := failover(t)
	t.Logf("without WAIT: %d acknowledged enqueues lost, %d acknowledged acks undone", len(lost), len(undone))
}
