package dqprom_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// A partitioned queue is reported as its partitions (ordinary queues, each
// with its own series) plus redisq_partitioned_partitions and one
// redisq_partition_info per partition, to sum the partitions by the
// partitioned queue with no series counted twice.
func TestServerCollectorShowsPartitionedQueues(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	p, err := redisq.NewPartitioned(ctx, c, "orders", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 30 {
		if _, err := p.EnqueueAfter(ctx, fmt.Sprint("o", i), nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	code, body := served(t, dqprom.NewRedisServerCollector(c))
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	want := []string{`redisq_partitioned_partitions{queue="orders"} 3`}
	var total int64
	for i := range 3 {
		part := p.Partition(i)
		st, err := part.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Scheduled
		want = append(want,
			fmt.Sprintf(`redisq_partition_info{partition="%d",partitioned="orders",queue=%q} 1`, i, part.Name()),
			fmt.Sprintf(`redisq_items{queue=%q,state="scheduled"} %d`, part.Name(), st.Scheduled))
	}
	wantLines(t, body, want...)
	if total != 30 {
		t.Fatalf("the partitions hold %d items, want 30", total)
	}
}

// A partitioned queue has no rate limit of its own (redisq.Partitioned
// has no SetQueueRateLimit); a partition, an ordinary queue, may have
// one, reported under the partition's queue label as its other series.
func TestServerCollectorPartitionQueueRateLimit(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	p, err := redisq.NewPartitioned(ctx, c, "orders", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	part := p.Partition(1)
	if err := part.SetQueueRateLimit(ctx, redisq.RateLimit{N: 5, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	code, body := served(t, dqprom.NewRedisServerCollector(c))
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	wantLines(t, body, fmt.Sprintf(`redisq_queue_rate_limit_claims{queue=%q} 5`, part.Name()),
		fmt.Sprintf(`redisq_queue_rate_limit_period_seconds{queue=%q} 1`, part.Name()),
		fmt.Sprintf(`redisq_queue_rate_limit_used_claims{queue=%q} 0`, part.Name()),
		fmt.Sprintf(`redisq_partition_info{partition="1",partitioned="orders",queue=%q} 1`, part.Name()))
	if n := strings.Count(body, "\nredisq_queue_rate_limit_claims{"); n != 1 {
		t.Errorf("%d queue rate limit series, want the partition's alone\n%s", n, body)
	}
}
