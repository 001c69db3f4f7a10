package redisq

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/stretchr/testify/require"
)

// What WithReplicaAcks costs in throughput: on a local Cluster of 3 masters
// with a replica each, 4 producers (EnqueueAfter, due at once) and 4
// AckTake consumers run for a few seconds on one queue, with and without
// WithReplicaAcks(1, 200ms), in turns; the test logs the items acked per
// second of each round and the cost, 1 - with/without, of each pair of
// rounds. It is a measurement (the figure depends on the machine), so it
// runs only when asked:
//
//	cd redisq && REDISQ_CAPACITY=1 go test -run TestClusterReplicaAcksCost -v -count=1 .
//
// REDISQ_CAPACITY_ROUNDS sets the rounds (default 3), REDISQ_CAPACITY_SECONDS
// the seconds per run (default 3).
func TestClusterReplicaAcksCost(t *testing.T) {
	if os.Getenv("REDISQ_CAPACITY") == "" {
		t.Skip("a measurement: set REDISQ_CAPACITY=1 to run it")
	}
	rounds, secs := 3, 3
	if v := os.Getenv("REDISQ_CAPACITY_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("REDISQ_CAPACITY_SECONDS"); v != "" {
		secs, _ = strconv.Atoi(v)
	}
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1})
	cc := clusterClient(t, c)
	ctx := context.Background()
	run := func(name string, opts ...Option) float64 {
		q := newQueue(t, cc, name, append([]Option{WithVisibilityTimeout(time.Minute)}, opts...)...)
		var acked atomic.Int64
		tctx, stop := context.WithTimeout(ctx, time.Duration(secs)*time.Second)
		defer stop()
		var wg sync.WaitGroup
		for p := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; tctx.Err() == nil; i++ {
					_, _ = q.EnqueueAfter(tctx, fmt.Sprintf("p%d-%d", p, i), nil, 0)
				}
			}()
		}
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var m *Message
				for {
					next, err := q.AckTake(tctx, m)
					if m != nil && err == nil {
						acked.Add(1)
					}
					if err != nil {
						return
					}
					m = next
				}
			}()
		}
		wg.Wait()
		_, err := q.Destroy(ctx)
		require.NoError(t, err)
		return float64(acked.Load()) / float64(secs)
	}
	var costs []float64
	for r := range rounds {
		without := run(fmt.Sprint("cost-plain-", r))
		with := run(fmt.Sprint("cost-wait-", r), WithReplicaAcks(1, 200*time.Millisecond))
		cost := 1 - with/without
		costs = append(costs, cost)
		t.Logf("round %d: %.0f acks/s without, %.0f with WithReplicaAcks: cost %.0f%%", r, without, with, 100*cost)
	}
	slices.Sort(costs)
	t.Logf("cost of WithReplicaAcks(1, 200ms): %.0f%% to %.0f%% over %d rounds", 100*costs[0], 100*costs[len(costs)-1], rounds)
}
