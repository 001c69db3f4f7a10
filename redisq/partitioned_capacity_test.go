package redisq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The capacity of a partitioned queue on a 3-master Cluster: the server
// main-thread CPU per item of the busiest master, for AckTake loops (32
// consumers) and for TakeBatch(100)+AckMany loops (8 consumers), with 3
// partitions, 1 partition and an ordinary Queue; and, on one standalone
// server, what 3 partitions cost per item against 1 (the work partitioning
// adds, whatever the machine). It is a measurement, not a
// check that can run on every machine, so it runs only when asked:
//
//	cd redisq && REDISQ_CAPACITY=1 go test -run TestPartitionedCapacity -v -count=1 .
//
// REDISQ_CAPACITY_ITEMS sets the items per run (default 30000),
// REDISQ_CAPACITY_ROUNDS the rounds (default 3): the configurations run in
// turns and each is reported by its median round.
//
// A machine with fewer cores than masters plus the client inflates each
// master's CPU time per command when all are busy (they share caches and
// cores), which the 3-partition run has and the 1-partition run alone does
// not. So the 1-partition queue is also measured under equal load: three
// 1-partition queues, one on each master, delivered at the same time (each
// master then runs exactly one of them). The test fails when the
// 3-partition ceiling is under 2.5 times the 1-partition one measured
// under equal load.
//
// dqbench-redis makes the same Cluster measurement on any cluster and prints it
// as tables (its own copy of this code: a command cannot import a test
// file), without the one-server part:
//
//	go run ./bench/dqbench-redis -impl partitioned -local-cluster 3 -rounds 5
func TestPartitionedCapacity(t *testing.T) {
	if os.Getenv("REDISQ_CAPACITY") == "" {
		t.Skip("a measurement: set REDISQ_CAPACITY=1 to run it")
	}
	n, rounds := 30000, 3
	if v := os.Getenv("REDISQ_CAPACITY_ITEMS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("REDISQ_CAPACITY_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	srvs, err := redistest.StartCluster(3)
	require.NoError(t, err)
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	var addrs []string
	for _, s := range srvs {
		addrs = append(addrs, s.Addr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 256})
	defer cc.Close()
	ctx := context.Background()
	masterOf, err := slotMasters(ctx, cc)
	require.NoError(t, err)

	const (
		plain = "ordinary queue"
		one   = "1 partition"
		three = "3 partitions"
		oneEq = "1 partition, masters equally loaded"
	)
	runs := map[string][]CapacityResult{}
	seq := 0
	for range rounds {
		for _, loop := range []string{"acktake", "batch"} {
			consumers, batch := 32, 0
			if loop == "batch" {
				consumers, batch = 8, 100
			}
			for _, kind := range []string{plain, one, three, oneEq} {
				seq++
				base := fmt.Sprintf("cap%d", seq)
				var qs []CapacityQueue
				switch kind {
				case plain:
					q, err := New(ctx, cc, base)
					require.NoError(t, err)
					qs = append(qs, q)
				case one, three:
					q, err := NewPartitioned(ctx, cc, base, map[string]int{one: 1, three: 3}[kind])
					require.NoError(t, err)
					qs = append(qs, q)
				case oneEq:
					// One 1-partition queue on each master.
					used := map[string]bool{}
					for i := 0; len(qs) < len(addrs); i++ {
						name := base + "-" + strconv.Itoa(i)
						m := masterOf(keySlot("dq:" + PartitionLayout(name, 1)[0]))
						if used[m] {
							continue
						}
						used[m] = true
						q, err := NewPartitioned(ctx, cc, name, 1)
						require.NoError(t, err)
						qs = append(qs, q)
					}
				}
				r, err := MeasureCapacity(ctx, cc, qs, n, consumers, batch)
				require.NoError(t, err)
				for _, q := range qs {
					require.NoError(t, q.Close())
				}
				if kind == oneEq {
					// Each master ran one of the queues: its CPU per item
					// of that queue.
					for a := range r.CPUPerItem {
						r.CPUPerItem[a] *= time.Duration(len(qs))
						r.CmdsPerItem[a] *= float64(len(qs))
					}
					r.Items /= len(qs)
				}
				r.Label = loop + "/" + kind
				runs[r.Label] = append(runs[r.Label], r)
				t.Log(r)
			}
		}
	}
	// All partitions on one server: the server work per item of 3
	// partitions against 1, without the Cluster's masters sharing cores.
	single, err := redistest.Start()
	require.NoError(t, err)
	defer single.Close()
	sc := redis.NewClient(&redis.Options{Addr: single.Addr, PoolSize: 256})
	defer sc.Close()
	for range rounds {
		for _, loop := range []string{"acktake", "batch"} {
			consumers, batch := 32, 0
			if loop == "batch" {
				consumers, batch = 8, 100
			}
			for _, parts := range []int{1, 3} {
				seq++
				q, err := NewPartitioned(ctx, sc, fmt.Sprintf("cap%d", seq), parts)
				require.NoError(t, err)
				r, err := MeasureCapacity(ctx, sc, []CapacityQueue{q}, n, consumers, batch)
				require.NoError(t, err)
				require.NoError(t, q.Close())
				r.Label = fmt.Sprintf("%s/one server, %d partition(s)", loop, parts)
				runs[r.Label] = append(runs[r.Label], r)
				t.Log(r)
			}
		}
	}

	med := func(label string) CapacityResult {
		rs := slices.Clone(runs[label])
		slices.SortFunc(rs, func(a, b CapacityResult) int { return int(a.Busiest() - b.Busiest()) })
		return rs[len(rs)/2]
	}
	for _, loop := range []string{"acktake", "batch"} {
		p, o, th, eq := med(loop+"/"+plain), med(loop+"/"+one), med(loop+"/"+three), med(loop+"/"+oneEq)
		ratio := func(a CapacityResult) float64 { return float64(a.Busiest()) / float64(th.Busiest()) }
		t.Logf("%s, median of %d rounds, busiest master's main-thread CPU per item: ordinary queue %v, 1 partition %v, 1 partition under equal load %v, 3 partitions %v (per master %v): the 3-partition ceiling is ×%.2f of 1 partition under equal load, ×%.2f of 1 partition alone, ×%.2f of an ordinary queue",
			loop, rounds, p.Busiest(), o.Busiest(), eq.Busiest(), th.Busiest(), th.CPUPerItem, ratio(eq), ratio(o), ratio(p))
		s1, s3 := med(loop+"/one server, 1 partition(s)"), med(loop+"/one server, 3 partition(s)")
		t.Logf("%s, median of %d rounds, one server: CPU per item with 1 partition %v, with 3 partitions %v (×%.2f)",
			loop, rounds, s1.Busiest(), s3.Busiest(), float64(s3.Busiest())/float64(s1.Busiest()))
		require.GreaterOrEqual(t, ratio(eq), 2.5, loop)
	}
}

// slotMasters returns a function from a slot to the address of its master.
func slotMasters(ctx context.Context, cc *redis.ClusterClient) (func(int) string, error) {
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	return func(slot int) string {
		for _, s := range slots {
			if slot >= s.Start && slot <= s.End {
				return s.Nodes[0].Addr
			}
		}
		return ""
	}, nil
}

// CapacityQueue is what MeasureCapacity drives: a *Queue or a
// *Partitioned.
type CapacityQueue interface {
	EnqueueMany(ctx context.Context, items []EnqueueItem) ([]EnqueueResult, error)
	AckTake(ctx context.Context, done *Message) (*Message, error)
	TakeBatch(ctx context.Context, n int) ([]*Message, error)
	AckMany(ctx context.Context, msgs []*Message) []error
	Close() error
}

// CapacityResult is one MeasureCapacity run: per master (by address), the
// main-thread CPU time (INFO cpu used_cpu_sys_main_thread +
// used_cpu_user_main_thread) and the commands (INFO commandstats, scripts'
// own calls included) the delivery of the items cost, per item.
type CapacityResult struct {
	Label       string
	Items       int
	Wall        time.Duration
	CPUPerItem  map[string]time.Duration
	CmdsPerItem map[string]float64
}

// Busiest is the largest CPU per item of a master: the queue's capacity
// ceiling is one second of that master's main thread divided by it.
func (r CapacityResult) Busiest() time.Duration {
	var b time.Duration
	for _, d := range r.CPUPerItem {
		b = max(b, d)
	}
	return b
}

func (r CapacityResult) String() string {
	var nodes []string
	for a := range r.CPUPerItem {
		nodes = append(nodes, a)
	}
	slices.Sort(nodes)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d items in %v (%.0f/s on this machine); ceiling %.0f items/s (busiest master %v CPU per item)",
		r.Label, r.Items, r.Wall.Round(time.Millisecond), float64(r.Items)/r.Wall.Seconds(),
		float64(time.Second)/float64(max(r.Busiest(), 1)), r.Busiest())
	for _, a := range nodes {
		fmt.Fprintf(&b, "; %s %v CPU, %.2f commands per item", a, r.CPUPerItem[a], r.CmdsPerItem[a])
	}
	return b.String()
}

// MeasureCapacity enqueues n items due now into each of qs (EnqueueMany,
// 1000 at a time; not measured), then has consumers goroutines per queue
// deliver and ack them all, every queue at the same time: AckTake loops
// when batch is 0, else TakeBatch(batch)+AckMany loops. It reads every
// master's INFO cpu and INFO commandstats before and after the delivery
// (the masters should serve nothing else meanwhile) and returns what the
// delivery cost each master per item delivered (of all queues).
func MeasureCapacity(ctx context.Context, c redis.UniversalClient, qs []CapacityQueue, n, consumers, batch int) (CapacityResult, error) {
	for _, q := range qs {
		for lo := 0; lo < n; lo += 1000 {
			items := make([]EnqueueItem, 0, 1000)
			for i := lo; i < min(lo+1000, n); i++ {
				items = append(items, EnqueueItem{ID: "c" + strconv.Itoa(i), Payload: []byte("x")})
			}
			if _, err := q.EnqueueMany(ctx, items); err != nil {
				return CapacityResult{}, err
			}
		}
	}
	before, err := masterCounters(ctx, c)
	if err != nil {
		return CapacityResult{}, err
	}
	start := time.Now()
	var firstErr atomic.Value
	fail := func(err error) { firstErr.CompareAndSwap(nil, err) }
	var wg sync.WaitGroup
	var total atomic.Int64
	for _, q := range qs {
		acked := deliverAll(ctx, q, n, consumers, batch, fail)
		wg.Add(1)
		go func() {
			defer wg.Done()
			total.Add(acked())
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return CapacityResult{}, err
	}
	items := n * len(qs)
	if total.Load() != int64(items) {
		return CapacityResult{}, fmt.Errorf("acked %d of %d items", total.Load(), items)
	}
	after, err := masterCounters(ctx, c)
	if err != nil {
		return CapacityResult{}, err
	}
	r := CapacityResult{Items: items, Wall: wall, CPUPerItem: map[string]time.Duration{}, CmdsPerItem: map[string]float64{}}
	for a, c := range after {
		r.CPUPerItem[a] = (c.cpu - before[a].cpu) / time.Duration(items)
		r.CmdsPerItem[a] = float64(c.cmds-before[a].cmds) / float64(items)
	}
	return r, nil
}

// deliverAll starts consumers goroutines delivering and acking the n items
// of q (see MeasureCapacity) and returns a function that waits for them
// and returns how many items they acked.
func deliverAll(ctx context.Context, q CapacityQueue, n, consumers, batch int, fail func(error)) func() int64 {
	var delivered, acked atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var done *Message
			for cctx.Err() == nil {
				if batch == 0 {
					m, err := q.AckTake(cctx, done)
					if done != nil && err == nil {
						acked.Add(1)
					}
					if err != nil {
						if done != nil && cctx.Err() != nil {
							if err := done.Ack(ctx); err != nil {
								fail(err)
							}
							acked.Add(1)
						} else if cctx.Err() == nil {
							fail(err)
						}
						done = nil
						continue
					}
					done = m
					if delivered.Add(1) >= int64(n) {
						cancel()
					}
					continue
				}
				ms, err := q.TakeBatch(cctx, batch)
				if err != nil {
					if cctx.Err() == nil {
						fail(err)
					}
					continue
				}
				if err := errors.Join(q.AckMany(ctx, ms)...); err != nil {
					fail(err)
				}
				acked.Add(int64(len(ms)))
				if delivered.Add(int64(len(ms))) >= int64(n) {
					cancel()
				}
			}
			if done != nil {
				if err := done.Ack(ctx); err != nil {
					fail(err)
				}
				acked.Add(1)
			}
		}()
	}
	return func() int64 {
		wg.Wait()
		cancel()
		return acked.Load()
	}
}

type masterCounter struct {
	cpu  time.Duration // main thread, user + system
	cmds int64         // commands run, INFO excluded
}

// masterCounters reads every master's main-thread CPU time and command
// count (c is a *redis.Client or a *redis.ClusterClient).
func masterCounters(ctx context.Context, c redis.UniversalClient) (map[string]masterCounter, error) {
	out := map[string]masterCounter{}
	var mu sync.Mutex
	each := func(fn func(context.Context, *redis.Client) error) error {
		switch v := c.(type) {
		case *redis.Client:
			return fn(ctx, v)
		case *redis.ClusterClient:
			return v.ForEachMaster(ctx, fn)
		}
		return fmt.Errorf("masterCounters: %T", c)
	}
	err := each(func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			return err
		}
		var mc masterCounter
		for _, l := range strings.Split(info, "\n") {
			l = strings.TrimSpace(l)
			if k, v, ok := strings.Cut(l, ":"); ok {
				switch k {
				case "used_cpu_sys_main_thread", "used_cpu_user_main_thread":
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						return fmt.Errorf("INFO cpu %s: %w", k, err)
					}
					mc.cpu += time.Duration(f * float64(time.Second))
				}
				if name, ok := strings.CutPrefix(k, "cmdstat_"); ok && name != "info" {
					calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
					n, _ := strconv.ParseInt(calls, 10, 64)
					mc.cmds += n
				}
			}
		}
		mu.Lock()
		out[c.Options().Addr] = mc
		mu.Unlock()
		return nil
	})
	return out, err
}
