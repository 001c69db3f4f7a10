package redisq

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// BenchmarkPartitionedBatchCost drains a backlog of b.N items due now
// with TakeBatch(100)+AckMany loops (8 consumers, as
// TestPartitionedCapacity's batch loop), from an ordinary Queue and from
// Partitioned queues of 1 and 3 partitions, and reports what the drain
// cost the server per item:
//
//   - server-µs/item: the main thread's CPU (INFO cpu) of the busiest
//     server, what sizing Redis goes by;
//   - server-sys-µs/item: the part of it in the kernel (system calls);
//   - script-µs/item: time inside scripts (INFO commandstats) there;
//   - reads/item: reads from clients it processed (INFO stats
//     total_reads_processed), about its round trips;
//   - client-µs/item: this process's CPU (getrusage), the benchmark's
//     consumers included;
//   - cmds/item: commands that server ran (INFO commandstats, the
//     scripts' own calls included, INFO excluded); bzpopmin/item;
//   - claims/item, items/claim, asked/claim: claim scripts (claim and
//     ack_claim) the client ran per item, the items each returned on
//     average and the items each was asked for (a TakeBatch(n) claims n,
//     100 at most a script, then n-100, ...); empty-claims/item those that
//     returned nothing;
//   - acks/item (ack_many and ack scripts), releases/item (release_lease),
//     scripts/item (every script call).
//
// A Partitioned of 1 partition runs one ordinary queue: its figures should
// be the Queue's. On one server the 3-partition figures are the work of 3
// partitions together, so a 3-master Cluster's busiest master costs about a
// third of them per item when the partitions share the work evenly.
//
// Each configuration runs on a redis-server of its own, started for it;
// then "alternating" runs the three on one server in turns of b.N/10
// items and reports their CPU per item and its ratios (p1/queue,
// p3/queue), which the drift of a shared machine's speed over seconds
// moves less than it moves separate runs. REDISQ_COST_CLUSTER=1 runs the
// three on one local 3-master Cluster instead (TestPartitionedCapacity's
// setup; the figures are the busiest master's), without "alternating".
// REDISQ_COST_CONSUMERS sets the consumers, REDISQ_COST_WORK (a duration)
// a sleep between each TakeBatch and its AckMany (a handler's time),
// REDISQ_COST_SPREAD=1 due times 1 ms apart (item by item across the
// partitions) instead of all due now; REDISQ_COST_APPENDFSYNC=always
// (or everysec) turns the servers' AOF on (default off). Run it in turns (the
// configurations interleave run after run) and take the medians:
//
//	cd redisq && go test -c -o /tmp/pcost.test . && for i in 1 2 3 4 5; do /tmp/pcost.test -test.run '^$' -test.bench PartitionedBatchCost -test.benchtime 30000x; done
func BenchmarkPartitionedBatchCost(b *testing.B) {
	consumers := 8
	if v := os.Getenv("REDISQ_COST_CONSUMERS"); v != "" {
		var err error
		consumers, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	var work time.Duration
	if v := os.Getenv("REDISQ_COST_WORK"); v != "" {
		var err error
		work, err = time.ParseDuration(v)
		require.NoError(b, err)
	}
	ctx := context.Background()
	hook := newScriptCounter()
	var cluster *redis.ClusterClient
	if os.Getenv("REDISQ_COST_CLUSTER") != "" {
		srvs, err := redistest.StartCluster(3)
		require.NoError(b, err)
		b.Cleanup(func() {
			for _, s := range srvs {
				s.Close()
			}
		})
		var addrs []string
		for _, s := range srvs {
			addrs = append(addrs, s.Addr)
		}
		cluster = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64})
		b.Cleanup(func() { _ = cluster.Close() })
		cluster.AddHook(hook)
	}
	for _, kind := range []string{"queue", "partitioned-1", "partitioned-3"} {
		b.Run(kind, func(b *testing.B) {
			var c redis.UniversalClient = cluster
			if cluster == nil {
				args := []string{"--appendonly", "no"}
				if f := os.Getenv("REDISQ_COST_APPENDFSYNC"); f != "" {
					args = []string{"--appendonly", "yes", "--appendfsync", f}
				}
				s := startRedis(b, args...)
				cc := s.client(b, func(o *redis.Options) { o.PoolSize = 64 })
				cc.AddHook(hook)
				c = cc
			}
			name := fmt.Sprintf("bcost-%d", costRun.Add(1))
			var q CapacityQueue
			switch kind {
			case "queue":
				q = newQueue(b, c, name)
			case "partitioned-1":
				q = newPartitioned(b, c, name, 1)
			case "partitioned-3":
				q = newPartitioned(b, c, name, 3)
			}
			n := b.N
			require.NoError(b, fillQueue(ctx, q, n, os.Getenv("REDISQ_COST_SPREAD") != ""))
			before := readServerCounters(b, c)
			h0 := hook.snapshot()
			var firstErr atomic.Value
			client0 := processCPU()
			b.ResetTimer()
			acked := drainBatches(ctx, q, n, consumers, work, func(err error) { firstErr.CompareAndSwap(nil, err) })
			if p, ok := q.(*Partitioned); ok {
				settleTaker(p.tk)
			}
			b.StopTimer()
			client := processCPU() - client0
			after := readServerCounters(b, c)
			h := hook.snapshot().minus(h0)
			if err, _ := firstErr.Load().(error); err != nil {
				b.Fatal(err)
			}
			require.Equal(b, int64(n), acked, "acked")
			// The busiest server's figures.
			var busy string
			for a := range after {
				if busy == "" || after[a].cpu-before[a].cpu > after[busy].cpu-before[busy].cpu {
					busy = a
				}
			}
			s0, s1 := before[busy], after[busy]
			items := float64(n)
			per := func(v float64) float64 { return v / items }
			b.ReportMetric(per(float64((s1.cpu - s0.cpu).Microseconds())), "server-µs/item")
			b.ReportMetric(per(float64((s1.sys - s0.sys).Microseconds())), "server-sys-µs/item")
			b.ReportMetric(per(float64(s1.scriptUS-s0.scriptUS)), "script-µs/item")
			b.ReportMetric(per(float64(s1.reads-s0.reads)), "reads/item")
			b.ReportMetric(per(float64(client.Microseconds())), "client-µs/item")
			b.ReportMetric(per(float64(s1.cmds-s0.cmds)), "cmds/item")
			b.ReportMetric(per(float64(s1.calls["bzpopmin"]-s0.calls["bzpopmin"])), "bzpopmin/item")
			claims := h.calls["claim"] + h.calls["ack_claim"]
			b.ReportMetric(per(float64(claims)), "claims/item")
			b.ReportMetric(float64(h.claimed)/float64(max(claims, 1)), "items/claim")
			b.ReportMetric(float64(h.asked)/float64(max(claims, 1)), "asked/claim")
			b.ReportMetric(per(float64(h.emptyClaims)), "empty-claims/item")
			b.ReportMetric(per(float64(h.calls["ack_many"]+h.calls["ack"])), "acks/item")
			b.ReportMetric(per(float64(h.calls["release_lease"])), "releases/item")
			var scripts int64
			for _, v := range h.calls {
				scripts += v
			}
			b.ReportMetric(per(float64(scripts)), "scripts/item")
			b.ReportMetric(items/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(0, "ns/op")
			for a := range after {
				b.Logf("%s: %.2f µs CPU, %.2f commands per item", a, per(float64((after[a].cpu - before[a].cpu).Microseconds())), per(float64(after[a].cmds-before[a].cmds)))
			}
			b.Logf("scripts the client ran: %v; items claimed %d (asked %d)", h.calls, h.claimed, h.asked)
		})
	}
	if cluster != nil {
		return
	}
	// The configurations in turns of b.N/10 items on one server, so that
	// what moves the server's CPU per item over seconds (other processes,
	// the host) moves all alike: the server's CPU per item of each, summed
	// over its turns, and the ratios to the Queue's. Each keeps its Queue
	// or Partitioned value across its turns, as in one long drain; a turn
	// ends when the claim its last take started is back. Releases are
	// counted: a Partitioned releases what it holds when no caller came
	// for 500ms (its turn came late on a busy machine), work one long
	// drain does not do, so a run with releases is not comparable.
	b.Run("alternating", func(b *testing.B) {
		s := startRedis(b, "--appendonly", "no")
		c := s.client(b, func(o *redis.Options) { o.PoolSize = 64 })
		c.AddHook(hook)
		kinds := []string{"queue", "partitioned-1", "partitioned-3"}
		qs := map[string]CapacityQueue{}
		for _, kind := range kinds {
			name := fmt.Sprintf("bcost-%d", costRun.Add(1))
			switch kind {
			case "queue":
				qs[kind] = newQueue(b, c, name)
			case "partitioned-1":
				qs[kind] = newPartitioned(b, c, name, 1)
			case "partitioned-3":
				qs[kind] = newPartitioned(b, c, name, 3)
			}
			require.NoError(b, fillQueue(ctx, qs[kind], b.N, false))
		}
		const turns = 10
		cpu, wall := map[string]time.Duration{}, map[string]time.Duration{}
		done := map[string]int{}
		scripts := map[string]scriptCounts{}
		h0 := hook.snapshot()
		b.ResetTimer()
		for t := range turns {
			for _, kind := range kinds {
				// A turn may deliver a few more than it asks (takes under
				// way when it ends): the last takes what is left.
				k := min((t+1)*b.N/turns, b.N) - done[kind]
				if t == turns-1 {
					k = b.N - done[kind]
				}
				if k <= 0 {
					continue
				}
				before, hb := readServerCounters(b, c), hook.snapshot()
				var firstErr atomic.Value
				start := time.Now()
				got := drainBatches(ctx, qs[kind], k, consumers, work, func(err error) { firstErr.CompareAndSwap(nil, err) })
				if p, ok := qs[kind].(*Partitioned); ok {
					settleTaker(p.tk)
				}
				wall[kind] += time.Since(start)
				after, ha := readServerCounters(b, c), hook.snapshot()
				if err, _ := firstErr.Load().(error); err != nil {
					b.Fatal(err)
				}
				cpu[kind] += after[s.addr()].cpu - before[s.addr()].cpu
				done[kind] += int(got)
				d := ha.minus(hb)
				sc := scripts[kind]
				if sc.calls == nil {
					sc.calls = map[string]int64{}
				}
				for k, v := range d.calls {
					sc.calls[k] += v
				}
				sc.claimed += d.claimed
				scripts[kind] = sc
			}
		}
		b.StopTimer()
		all := hook.snapshot().minus(h0)
		per := func(kind string) float64 { return float64(cpu[kind].Microseconds()) / float64(done[kind]) }
		b.ReportMetric(per("queue"), "queue-server-µs/item")
		b.ReportMetric(per("partitioned-1"), "p1-server-µs/item")
		b.ReportMetric(per("partitioned-3"), "p3-server-µs/item")
		b.ReportMetric(per("partitioned-1")/per("queue"), "p1/queue")
		b.ReportMetric(per("partitioned-3")/per("queue"), "p3/queue")
		// How busy the server was while each drained: the same work
		// costs a server that waits for its clients between commands more
		// CPU than one that always has the next command.
		b.ReportMetric(cpu["queue"].Seconds()/wall["queue"].Seconds(), "queue-busy")
		b.ReportMetric(cpu["partitioned-1"].Seconds()/wall["partitioned-1"].Seconds(), "p1-busy")
		b.ReportMetric(cpu["partitioned-3"].Seconds()/wall["partitioned-3"].Seconds(), "p3-busy")
		b.ReportMetric(float64(all.calls["release_lease"]), "releases")
		b.ReportMetric(0, "ns/op")
		for _, kind := range kinds {
			sc := scripts[kind]
			claims := sc.calls["claim"] + sc.calls["ack_claim"]
			b.Logf("%s: %d items, %.2f µs server CPU per item, %d claims (%.1f items each), %d acks; scripts %v",
				kind, done[kind], per(kind), claims, float64(sc.claimed)/float64(max(claims, 1)), sc.calls["ack_many"]+sc.calls["ack"], sc.calls)
		}
	})
}

// settleTaker waits (up to 200ms) until no claim of t is under way, so
// that the claim a drain's last take started counts in it.
func settleTaker(t *taker) {
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		busy := false
		for i := range t.ps {
			busy = busy || t.ps[i].running
		}
		t.mu.Unlock()
		if !busy {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// drainBatches has consumers goroutines take q's n items by
// TakeBatch(100), sleep work (a handler's time), and AckMany them, until n
// are delivered; it returns how many were acked.
func drainBatches(ctx context.Context, q CapacityQueue, n, consumers int, work time.Duration, fail func(error)) int64 {
	var delivered, acked atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range consumers {
		wg.Go(func() {
			for cctx.Err() == nil {
				ms, err := q.TakeBatch(cctx, 100)
				if err != nil {
					if cctx.Err() == nil {
						fail(err)
					}
					return
				}
				if work > 0 {
					time.Sleep(work)
				}
				if err := errors.Join(q.AckMany(ctx, ms)...); err != nil {
					fail(err)
				}
				acked.Add(int64(len(ms)))
				if delivered.Add(int64(len(ms))) >= int64(n) {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	return acked.Load()
}

// processCPU is this process's CPU time, user + system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillQueue enqueues n items due now into q (EnqueueMany, 1000 at a time),
// ids c0, c1, ..., payload "x", as MeasureCapacity; with spread, item i is
// due i ms after a time n ms ago instead, so that due order interleaves
// the partitions item by item.
func fillQueue(ctx context.Context, q CapacityQueue, n int, spread bool) error {
	t0 := time.Now().Add(-time.Duration(n) * time.Millisecond)
	for lo := 0; lo < n; lo += 1000 {
		items := make([]EnqueueItem, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			it := EnqueueItem{ID: "c" + strconv.Itoa(i), Payload: []byte("x")}
			if spread {
				it.At = t0.Add(time.Duration(i) * time.Millisecond)
			}
			items = append(items, it)
		}
		rs, err := q.EnqueueMany(ctx, items)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return r.Err
			}
		}
	}
	return nil
}

// serverCounters is what INFO cpu and INFO commandstats say of one server.
type serverCounters struct {
	cpu      time.Duration    // main thread, user + system
	sys      time.Duration    // main thread, system
	reads    int64            // reads from clients processed (total_reads_processed)
	scriptUS int64            // µs in EVAL and EVALSHA
	cmds     int64            // commands run, INFO excluded
	calls    map[string]int64 // by command
}

// readServerCounters reads the counters of every master of c (a
// *redis.Client or a *redis.ClusterClient), by address.
func readServerCounters(t testing.TB, c redis.UniversalClient) map[string]serverCounters {
	t.Helper()
	out := map[string]serverCounters{}
	var mu sync.Mutex
	read := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "cpu", "commandstats", "stats").Result()
		if err != nil {
			return err
		}
		sc, err := parseServerCounters(info)
		if err != nil {
			return err
		}
		mu.Lock()
		out[c.Options().Addr] = sc
		mu.Unlock()
		return nil
	}
	ctx := context.Background()
	switch v := c.(type) {
	case *redis.Client:
		require.NoError(t, read(ctx, v))
	case *redis.ClusterClient:
		require.NoError(t, v.ForEachMaster(ctx, read))
	default:
		t.Fatalf("readServerCounters: %T", c)
	}
	return out
}

func parseServerCounters(info string) (serverCounters, error) {
	sc := serverCounters{calls: map[string]int64{}}
	for _, l := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_cpu_sys_main_thread", "used_cpu_user_main_thread":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return sc, err
			}
			sc.cpu += time.Duration(f * float64(time.Second))
			if k == "used_cpu_sys_main_thread" {
				sc.sys = time.Duration(f * float64(time.Second))
			}
		case "total_reads_processed":
			sc.reads, _ = strconv.ParseInt(v, 10, 64)
		}
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok || name == "info" {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			fk, fv, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(fv, 10, 64)
			switch fk {
			case "calls":
				sc.calls[name] = n
				sc.cmds += n
			case "usec":
				if name == "evalsha" || name == "eval" {
					sc.scriptUS += n
				}
			}
		}
	}
	return sc, nil
}

// scriptCounter counts the scripts a client runs, by script name, and for
// the claim scripts the items asked for and returned.
type scriptCounter struct {
	names map[string]string // SHA-1 -> script name
	mu    sync.Mutex
	s     scriptCounts
}

type scriptCounts struct {
	calls              map[string]int64
	asked, claimed     int64
	emptyClaims        int64
	unknownScriptCalls int64
}

func (a scriptCounts) minus(b scriptCounts) scriptCounts {
	r := a
	r.calls = map[string]int64{}
	for k, v := range a.calls {
		if d := v - b.calls[k]; d != 0 {
			r.calls[k] = d
		}
	}
	r.asked -= b.asked
	r.claimed -= b.claimed
	r.emptyClaims -= b.emptyClaims
	r.unknownScriptCalls -= b.unknownScriptCalls
	return r
}

func newScriptCounter() *scriptCounter {
	h := &scriptCounter{names: map[string]string{}, s: scriptCounts{calls: map[string]int64{}}}
	files, _ := filepath.Glob("internal/rdb/lua/*.lua")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		func() {
			defer func() { _ = recover() }() // a file no script is made of
			h.names[rdb.Named(name).Hash()] = name
		}()
	}
	return h
}

func (h *scriptCounter) snapshot() scriptCounts {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.s
	r.calls = map[string]int64{}
	for k, v := range h.s.calls {
		r.calls[k] = v
	}
	return r
}

func (*scriptCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if len(args) < 3 {
			return err
		}
		var sha string
		switch strings.ToLower(cmd.Name()) {
		case "evalsha":
			if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
				return err // go-redis runs it again as EVAL
			}
			sha, _ = args[1].(string)
		case "eval":
			src, _ := args[1].(string)
			sha = fmt.Sprintf("%x", sha1.Sum([]byte(src)))
		default:
			return err
		}
		name, ok := h.names[sha]
		h.mu.Lock()
		defer h.mu.Unlock()
		if !ok {
			h.s.unknownScriptCalls++
			return err
		}
		h.s.calls[name]++
		if name == "claim" || name == "ack_claim" {
			// EVALSHA sha numkeys keys... items-prefix N ...
			nk, _ := strconv.Atoi(fmt.Sprint(args[2]))
			if i := 3 + nk + 1; i < len(args) {
				n, _ := strconv.Atoi(fmt.Sprint(args[i]))
				h.s.asked += int64(n)
			}
			if c, ok := cmd.(*redis.Cmd); ok && err == nil {
				if res, ok := c.Val().([]interface{}); ok {
					if len(res) == 2 { // {life, reply} (see rdb's lifeWrap)
						res, _ = res[1].([]interface{})
					}
					got := int64((len(res) - 3) / (6 + len(rdb.JobFields)))
					h.s.claimed += got
					if got == 0 {
						h.s.emptyClaims++
					}
				}
			}
		}
		return err
	}
}

func (*scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A backlog drained by TakeBatch(100)+AckMany loops costs a Partitioned
// what it costs a Queue: one claim script and one ack script per 100
// items, nothing released and claimed again. The scripts are counted, not
// timed, so that the check holds on a busy machine; what they cost is
// BenchmarkPartitionedBatchCost's.
func TestPartitionedBatchScripts(t *testing.T) {
	s := startRedis(t, "--appendonly", "no")
	hook := newScriptCounter()
	c := s.client(t, func(o *redis.Options) { o.PoolSize = 64 })
	c.AddHook(hook)
	ctx := context.Background()
	const n, consumers = 6000, 8
	for _, parts := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("partitions=%d", parts), func(t *testing.T) {
			var q CapacityQueue
			name := fmt.Sprintf("bscripts-%d", parts)
			if parts == 0 {
				q = newQueue(t, c, name)
			} else {
				q = newPartitioned(t, c, name, parts)
			}
			require.NoError(t, fillQueue(ctx, q, n, true))
			h0 := hook.snapshot()
			var firstErr atomic.Value
			acked := drainBatches(ctx, q, n, consumers, 0, func(err error) { firstErr.CompareAndSwap(nil, err) })
			if err, _ := firstErr.Load().(error); err != nil {
				t.Fatal(err)
			}
			require.EqualValues(t, n, acked)
			if p, ok := q.(*Partitioned); ok {
				settleTaker(p.tk)
			}
			h := hook.snapshot().minus(h0)
			claims := h.calls["claim"] + h.calls["ack_claim"]
			acks := h.calls["ack_many"] + h.calls["ack"]
			t.Logf("%d items: %d claims (%d items claimed), %d ack scripts, scripts %v", n, claims, h.claimed, acks, h.calls)
			// One claim per 100 items, and a few more: a Queue's
			// consumers' claims at the end find less than 100 or none,
			// and a Partitioned's first claims and its catch-up claims at
			// the end may be short.
			maxClaims := int64(n/100 + 2*consumers)
			if parts > 0 {
				maxClaims = int64(n/100 + consumers + 2*parts)
			}
			require.Zero(t, h.calls["release_lease"], "items released")
			require.LessOrEqual(t, claims, maxClaims, "claim scripts")
			require.LessOrEqual(t, h.claimed, int64(n+100*parts), "items claimed")
			// Each TakeBatch is served from the claims that came back
			// first, mostly one partition's: its AckMany is one script,
			// sometimes one per partition it straddles.
			maxAcks := int64(n/100 + 2)
			if parts > 1 {
				maxAcks = maxAcks * 3 / 2
			}
			require.LessOrEqual(t, acks, maxAcks, "ack scripts")
		})
	}
}
