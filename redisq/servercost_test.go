package redisq

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// BenchmarkServerCost reports what each operation costs the redis-server
// per item, from calls made one at a time (so that a figure is the call's
// own cost, not a share of a pipelined batch):
//
//   - script-µs/item: time inside the scripts (INFO commandstats, EVALSHA
//     and EVAL), what SLOWLOG and a user's latency graph show;
//   - server-µs/item: the main thread's CPU (INFO cpu), the scripts plus
//     reading, parsing and answering each round trip: what sizing Redis
//     goes by.
//
// Run it on a quiet machine (docs/performance.md):
//
//	go test -run '^$' -bench ServerCost -benchtime 20000x ./redisq
//
// b.N counts items: an op of k items runs b.N/k times.
func BenchmarkServerCost(b *testing.B) {
	s := startRedis(b, "--appendonly", "no")
	c := s.client(b)
	ctx := context.Background()
	payload := make([]byte, 64)
	at := time.Now().Add(time.Hour) // far: nothing is claimed meanwhile
	for _, k := range []int{1, 4, 16, 100} {
		b.Run(fmt.Sprintf("enqueue/%d", k), func(b *testing.B) {
			q := newQueue(b, c, fmt.Sprintf("cost-enq-%d-%d", k, costRun.Add(1)))
			items := make([]EnqueueItem, k)
			n := 0
			measureServer(b, c, k, func() {
				if k == 1 {
					require.NoError(b, q.Enqueue(ctx, "i"+strconv.Itoa(n), payload, at))
					n++
					return
				}
				for j := range items {
					items[j] = EnqueueItem{ID: "i" + strconv.Itoa(n), Payload: payload, At: at}
					n++
				}
				res, err := q.EnqueueMany(ctx, items)
				require.NoError(b, err)
				require.NoError(b, res[0].Err)
			})
		})
	}
	// One item with a uniqueness window, and a debounced one that replaces
	// the waiting item of its key each time (keys of 10 items each).
	for _, mode := range []string{"unique", "debounce"} {
		b.Run("enqueue/1-"+mode, func(b *testing.B) {
			q := newQueue(b, c, fmt.Sprintf("cost-enq-%s-%d", mode, costRun.Add(1)))
			n := 0
			measureServer(b, c, 1, func() {
				j := Job{UniqueKey: "k" + strconv.Itoa(n/10), UniqueFor: time.Hour, Debounce: mode == "debounce"}
				if mode == "unique" {
					j.UniqueKey = "k" + strconv.Itoa(n)
				}
				_, err := q.Add(ctx, EnqueueItem{ID: "i" + strconv.Itoa(n), Payload: payload, At: at, Job: j})
				require.NoError(b, err)
				n++
			})
		})
	}
	// Eight goroutines calling Enqueue on one Queue: calls are combined
	// (see combine.go), so this is also the rate 8 producers reach.
	b.Run("enqueue/8-producers", func(b *testing.B) {
		q := newQueue(b, c, fmt.Sprintf("cost-enq-par-%d", costRun.Add(1)))
		var n atomic.Int64
		measureServer(b, c, b.N, func() {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for {
						i := n.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := q.Enqueue(ctx, "i"+strconv.FormatInt(i, 10), payload, at); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	})
	// "-limited": every item counts against a rate limit that it stays
	// under, so the cost is the limiter's bookkeeping of each claim.
	// "-conc1000keys": the items go round 1,000 limit keys, each with a
	// concurrency limit of 1 that no claim finds reached (each item is
	// acked before its key comes round again), so the cost is the
	// bookkeeping of each place taken and freed.
	for _, run := range []struct {
		k    int
		mode string
	}{{1, ""}, {100, ""}, {1, "limited"}, {100, "limited"}, {1, "conc1000keys"}, {100, "conc1000keys"}} {
		k, name := run.k, fmt.Sprintf("take+ack/%d", run.k)
		if run.mode != "" {
			name += "-" + run.mode
		}
		b.Run(name, func(b *testing.B) {
			q := newQueue(b, c, fmt.Sprintf("cost-take-%d-%d", k, costRun.Add(1)))
			job := func(int) Job { return Job{} }
			switch run.mode {
			case "limited":
				require.NoError(b, q.SetRateLimit(ctx, "tenant", RateLimit{N: MaxRateN, Per: time.Second}))
				job = func(int) Job { return Job{LimitKey: "tenant"} }
			case "conc1000keys":
				for key := range 1000 {
					require.NoError(b, q.SetConcurrencyLimit(ctx, "acct"+strconv.Itoa(key), 1))
				}
				job = func(i int) Job { return Job{LimitKey: "acct" + strconv.Itoa(i%1000)} }
			}
			due := time.Now().Add(-time.Second)
			items := make([]EnqueueItem, 1000)
			for done := 0; done < ops(b, k)*k; done += len(items) {
				for j := range items {
					items[j] = EnqueueItem{ID: "i" + strconv.Itoa(done+j), Payload: payload, At: due, Job: job(done + j)}
				}
				_, err := q.EnqueueMany(ctx, items)
				require.NoError(b, err)
			}
			measureServer(b, c, k, func() {
				if k == 1 {
					m, err := q.Take(ctx)
					require.NoError(b, err)
					require.NoError(b, m.Ack(ctx))
					return
				}
				ms, err := q.TakeBatch(ctx, k)
				require.NoError(b, err)
				require.Len(b, ms, k)
				for _, err := range q.AckMany(ctx, ms) {
					require.NoError(b, err)
				}
			})
		})
	}
}

// ops is how many ops of perOp items b.N items make.
func ops(b *testing.B, perOp int) int { return max(1, b.N/perOp) }

// measureServer runs op ops(b, perOp) times and reports the server's cost
// per item, each op handling perOp items.
func measureServer(b *testing.B, c *redis.Client, perOp int, op func()) {
	b.Helper()
	cpu0, script0 := mainThreadCPU(b, c), scriptTime(b, c)
	b.ResetTimer()
	n := ops(b, perOp)
	for range n {
		op()
	}
	b.StopTimer()
	items := float64(n * perOp)
	b.ReportMetric(float64((mainThreadCPU(b, c)-cpu0).Microseconds())/items, "server-µs/item")
	b.ReportMetric(float64((scriptTime(b, c)-script0).Microseconds())/items, "script-µs/item")
	b.ReportMetric(items/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(0, "ns/op") // items/s says it per item
}

// scriptTime is the time the server spent in EVAL and EVALSHA so far.
func scriptTime(t testing.TB, c *redis.Client) time.Duration {
	t.Helper()
	us := commandStat(t, c, "evalsha", "usec") + commandStat(t, c, "eval", "usec")
	return time.Duration(us) * time.Microsecond
}

// costRun numbers the queues of BenchmarkServerCost: a benchmark function
// runs several times (-count, and b.N growing), each on a new queue.
var costRun atomic.Int64
