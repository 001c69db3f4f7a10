package dqprom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

func newQueue(t testing.TB, c redis.UniversalClient, name string, opts ...redisq.Option) *redisq.Queue {
	t.Helper()
	q, err := redisq.New(context.Background(), c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

func TestRedisCollector(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail", redisq.WithMaxAttempts(1))
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Three items 2s overdue: one acked (and kept, completed), one dead,
	// one left in flight; one scheduled for later.
	for i := range 3 {
		it := redisq.EnqueueItem{ID: fmt.Sprint("i", i), At: now.Add(-2 * time.Second)}
		if i == 0 {
			it.Job.Retention = time.Hour
		}
		if _, err := q.Add(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.EnqueueAfter(ctx, "later", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	ms, err := q.TakeBatch(ctx, 3)
	if err != nil || len(ms) != 3 {
		t.Fatal(len(ms), err)
	}
	if err := ms[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ms[1].DeadLetter(ctx, "x"); err != nil {
		t.Fatal(err)
	}

	col := dqprom.NewRedisCollector(q)
	want := `
# HELP redisq_items Items in each state now.
# TYPE redisq_items gauge
redisq_items{queue="mail",state="completed"} 1
redisq_items{queue="mail",state="dead"} 1
redisq_items{queue="mail",state="inflight"} 1
redisq_items{queue="mail",state="scheduled"} 1
# HELP redisq_up 1 if the queue's stats were read at this scrape, else 0.
# TYPE redisq_up gauge
redisq_up{queue="mail"} 1
# HELP redisq_acked_total Items acked.
# TYPE redisq_acked_total counter
redisq_acked_total{queue="mail"} 1
# HELP redisq_dead_lettered_total Items moved to the dead set.
# TYPE redisq_dead_lettered_total counter
redisq_dead_lettered_total{queue="mail"} 1
# HELP redisq_delivered_total Leases granted by Take and TakeBatch, redeliveries included.
# TYPE redisq_delivered_total counter
redisq_delivered_total{queue="mail"} 3
# HELP redisq_enqueued_total New items (Enqueue, EnqueueAfter, Schedule creating one).
# TYPE redisq_enqueued_total counter
redisq_enqueued_total{queue="mail"} 4
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "redisq_items", "redisq_up",
		"redisq_acked_total", "redisq_dead_lettered_total", "redisq_delivered_total", "redisq_enqueued_total"); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}

	// The lateness histogram: three deliveries about 2s late, cumulative
	// buckets, in seconds.
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, mf := range mfs {
		if mf.GetName() != "redisq_delivery_lateness_seconds" {
			continue
		}
		found = true
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 3 || h.GetSampleSum() != st.Lateness.Sum.Seconds() {
			t.Errorf("count %d sum %v, want 3 and %v", h.GetSampleCount(), h.GetSampleSum(), st.Lateness.Sum.Seconds())
		}
		for _, b := range h.GetBucket() {
			want := uint64(0)
			if b.GetUpperBound() >= 2.5 {
				want = 3 // lateness 2s + the claim's own delay: in the 2.5s bucket
			}
			if b.GetCumulativeCount() != want {
				t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
		if len(h.GetBucket()) != len(redisq.LatenessBounds()) {
			t.Errorf("%d buckets, want %d", len(h.GetBucket()), len(redisq.LatenessBounds()))
		}
	}
	if !found {
		t.Fatal("no lateness histogram")
	}

	// A closed queue reports redisq_up 0 and nothing else.
	_ = q.Close()
	if err := testutil.CollectAndCompare(col, strings.NewReader(`
# HELP redisq_up 1 if the queue's stats were read at this scrape, else 0.
# TYPE redisq_up gauge
redisq_up{queue="mail"} 0
`)); err != nil {
		t.Fatal(err)
	}
}

func TestRedisServerCollectorFindsQueues(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	col := dqprom.NewRedisServerCollector(c)
	if n := testutil.CollectAndCount(col, "redisq_up"); n != 0 {
		t.Fatalf("%d queues on an empty server", n)
	}
	for _, name := range []string{"a", "a:b", `we"ird`} {
		if _, err := newQueue(t, c, name).EnqueueAfter(ctx, "x", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP redisq_items Items in each state now.
# TYPE redisq_items gauge
redisq_items{queue="a",state="completed"} 0
redisq_items{queue="a",state="dead"} 0
redisq_items{queue="a",state="inflight"} 0
redisq_items{queue="a",state="scheduled"} 1
redisq_items{queue="a:b",state="completed"} 0
redisq_items{queue="a:b",state="dead"} 0
redisq_items{queue="a:b",state="inflight"} 0
redisq_items{queue="a:b",state="scheduled"} 1
redisq_items{queue="we\"ird",state="completed"} 0
redisq_items{queue="we\"ird",state="dead"} 0
redisq_items{queue="we\"ird",state="inflight"} 0
redisq_items{queue="we\"ird",state="scheduled"} 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "redisq_items"); err != nil {
		t.Fatal(err)
	}
	// A destroyed queue disappears from the next scrape.
	if _, err := newQueue(t, c, "a").Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col, "redisq_up"); n != 2 {
		t.Fatalf("%d queues after destroying one of 3", n)
	}
	// An unreachable server fails the scrape.
	s.Close()
	if _, err := testutil.CollectAndLint(col); err == nil {
		t.Fatal("scrape of a dead server succeeded")
	}
}

// TestRedisQueuePaused: redisq_queue_paused is 1 while the queue is paused
// (Queue.Pause, from any process) and 0 again after Resume, for given
// queues and server-wide collectors alike.
func TestRedisQueuePaused(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	other := newQueue(t, c, "sms")
	for _, q := range []*redisq.Queue{q, other} {
		if _, err := q.EnqueueAfter(ctx, "x", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	given, server := dqprom.NewRedisCollector(q, other), dqprom.NewRedisServerCollector(c)
	want := func(mail, sms int) {
		t.Helper()
		exp := fmt.Sprintf(`
# HELP redisq_queue_paused 1 while the queue is paused (redisq Queue.Pause: nothing is delivered), else 0.
# TYPE redisq_queue_paused gauge
redisq_queue_paused{queue="mail"} %d
redisq_queue_paused{queue="sms"} %d
`, mail, sms)
		for name, col := range map[string]prometheus.Collector{"given queues": given, "server-wide": server} {
			if err := testutil.CollectAndCompare(col, strings.NewReader(exp), "redisq_queue_paused"); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	want(0, 0)
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	want(1, 0)
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	want(0, 0)
	if probs, err := testutil.CollectAndLint(given); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}

// TestRedisRateLimits: a queue with rate limits reports each limit key's
// limit, its use and the items waiting for a slot; a queue without any
// reports none.
func TestRedisRateLimits(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	newQueue(t, c, "sms")
	if err := q.SetRateLimit(ctx, "smtp\u202e", redisq.RateLimit{N: 1, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetRateLimit(ctx, "", redisq.RateLimit{N: 5, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := q.Add(ctx, redisq.EnqueueItem{ID: id, Job: redisq.Job{LimitKey: "smtp\u202e"}}); err != nil {
			t.Fatal(err)
		}
	}
	// One is claimed; the claims after it find the key full: two wait.
	if _, err := q.Take(ctx); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if m, err := q.Take(tctx); err == nil {
		t.Fatalf("took %s over the limit", m.ID)
	}
	exp := `
# HELP redisq_rate_limit_claims The limit key's rate limit: at most this many claims in any redisq_rate_limit_period_seconds.
# TYPE redisq_rate_limit_claims gauge
redisq_rate_limit_claims{key="",queue="mail"} 5
redisq_rate_limit_claims{key="smtp\\u202e",queue="mail"} 1
# HELP redisq_rate_limit_period_seconds The period of the limit key's rate limit.
# TYPE redisq_rate_limit_period_seconds gauge
redisq_rate_limit_period_seconds{key="",queue="mail"} 1
redisq_rate_limit_period_seconds{key="smtp\\u202e",queue="mail"} 3600
# HELP redisq_rate_limit_used_claims Claims of the limit key's items in the period that ends now (the limit is reached at redisq_rate_limit_claims).
# TYPE redisq_rate_limit_used_claims gauge
redisq_rate_limit_used_claims{key="",queue="mail"} 0
redisq_rate_limit_used_claims{key="smtp\\u202e",queue="mail"} 1
# HELP redisq_rate_limit_waiting_items Items of the limit key that came due over its limit and wait in the queue for a slot.
# TYPE redisq_rate_limit_waiting_items gauge
redisq_rate_limit_waiting_items{key="",queue="mail"} 0
redisq_rate_limit_waiting_items{key="smtp\\u202e",queue="mail"} 2
`
	for name, col := range map[string]prometheus.Collector{"given queues": dqprom.NewRedisCollector(q), "server-wide": dqprom.NewRedisServerCollector(c)} {
		if err := testutil.CollectAndCompare(col, strings.NewReader(exp), "redisq_rate_limit_claims", "redisq_rate_limit_period_seconds",
			"redisq_rate_limit_used_claims", "redisq_rate_limit_waiting_items"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
			t.Errorf("%s: lint: %v %v", name, probs, err)
		}
	}
}

// TestRedisConcurrencyLimits: a queue with concurrency limits reports each
// limit key's limit, its items leased and the items waiting for a place.
func TestRedisConcurrencyLimits(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "pay")
	newQueue(t, c, "sms")
	if err := q.SetConcurrencyLimit(ctx, "acct\u202e", 1); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		// Due long ago: all three are due at the claim, which leases one
		// and parks the others (an item due "now" is due at the next ms of
		// Redis TIME, which the claim may precede).
		if _, err := q.Add(ctx, redisq.EnqueueItem{ID: id, At: time.Unix(1, 0), Job: redisq.Job{LimitKey: "acct\u202e"}}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := q.TakeBatch(ctx, 10)
	if err != nil || len(ms) != 1 {
		t.Fatalf("claimed %d, %v", len(ms), err)
	}
	exp := `
# HELP redisq_concurrency_leased_items Items of the limit key leased now, each holding a place of its concurrency limit.
# TYPE redisq_concurrency_leased_items gauge
redisq_concurrency_leased_items{key="acct\\u202e",queue="pay"} 1
# HELP redisq_concurrency_limit_items The limit key's concurrency limit: at most this many of its items leased at once.
# TYPE redisq_concurrency_limit_items gauge
redisq_concurrency_limit_items{key="acct\\u202e",queue="pay"} 1
# HELP redisq_concurrency_waiting_items Items of the limit key that came due with every place taken and wait in the queue for one.
# TYPE redisq_concurrency_waiting_items gauge
redisq_concurrency_waiting_items{key="acct\\u202e",queue="pay"} 2
`
	for name, col := range map[string]prometheus.Collector{"given queues": dqprom.NewRedisCollector(q), "server-wide": dqprom.NewRedisServerCollector(c)} {
		if err := testutil.CollectAndCompare(col, strings.NewReader(exp), "redisq_concurrency_limit_items", "redisq_concurrency_leased_items",
			"redisq_concurrency_waiting_items"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
			t.Errorf("%s: lint: %v %v", name, probs, err)
		}
	}
}

// TestRedisSnoozed: a lease given back by Snooze is counted in
// redisq_snoozed_total, not as a Nack.
func TestRedisSnoozed(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	if _, err := q.Add(ctx, redisq.EnqueueItem{ID: "a", At: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	m, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snooze(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	col := dqprom.NewRedisCollector(q)
	if err := testutil.CollectAndCompare(col, strings.NewReader(`
# HELP redisq_nacked_total Leases given back by Nack.
# TYPE redisq_nacked_total counter
redisq_nacked_total{queue="mail"} 0
# HELP redisq_snoozed_total Leases given back by Snooze: no attempt counted, not a failure.
# TYPE redisq_snoozed_total counter
redisq_snoozed_total{queue="mail"} 1
`), "redisq_snoozed_total", "redisq_nacked_total"); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}

// TestRedisQueueRateLimit: the queue's own rate limit
// (Queue.SetQueueRateLimit) is reported with its claims in the window
// while it is set, and read only then: a scrape of a queue without it
// costs its Stats alone.
func TestRedisQueueRateLimit(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	// The exporter's own client, whose commands are the scrapes' (q's
	// consumer sends its own).
	ec := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer ec.Close()
	hook := &commands{}
	ec.AddHook(hook)
	col := dqprom.NewRedisCollector(newQueue(t, ec, "mail"))
	// scrape returns the round trips of a scrape, its scripts loaded,
	// and what it served.
	scrape := func() (int64, string) {
		t.Helper()
		served(t, col)
		hook.n.Store(0)
		_, body := served(t, col)
		return hook.n.Load(), body
	}
	if n, body := scrape(); n != 1 || strings.Contains(body, "redisq_queue_rate_limit") {
		t.Errorf("a queue without its own limit: %d round trips, want 1 (its Stats)\n%s", n, body)
	}

	if err := q.SetQueueRateLimit(ctx, redisq.RateLimit{N: 3, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := q.Add(ctx, redisq.EnqueueItem{ID: id, At: time.Unix(1, 0), Job: redisq.Job{LimitKey: "k:" + id}}); err != nil {
			t.Fatal(err)
		}
	}
	if ms, err := q.TakeBatch(ctx, 2); err != nil || len(ms) != 2 {
		t.Fatalf("took %d, %v", len(ms), err)
	}
	if n, _ := scrape(); n != 2 {
		t.Errorf("a queue with its own limit: %d round trips, want 2 (its Stats, the limit)", n)
	}
	exp := `
# HELP redisq_queue_rate_limit_claims The queue's own rate limit (redisq Queue.SetQueueRateLimit): at most this many claims of its items, whatever their limit keys, in any redisq_queue_rate_limit_period_seconds.
# TYPE redisq_queue_rate_limit_claims gauge
redisq_queue_rate_limit_claims{queue="mail"} 3
# HELP redisq_queue_rate_limit_period_seconds The period of the queue's own rate limit.
# TYPE redisq_queue_rate_limit_period_seconds gauge
redisq_queue_rate_limit_period_seconds{queue="mail"} 3600
# HELP redisq_queue_rate_limit_used_claims Claims of the queue's items in the period that ends now: at redisq_queue_rate_limit_claims no item is claimed, and the due ones wait in redisq_due_items, in order.
# TYPE redisq_queue_rate_limit_used_claims gauge
redisq_queue_rate_limit_used_claims{queue="mail"} 2
`
	for name, col := range map[string]prometheus.Collector{"given queues": col, "server-wide": dqprom.NewRedisServerCollector(c)} {
		if err := testutil.CollectAndCompare(col, strings.NewReader(exp), "redisq_queue_rate_limit_claims", "redisq_queue_rate_limit_period_seconds",
			"redisq_queue_rate_limit_used_claims"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
			t.Errorf("%s: lint: %v %v", name, probs, err)
		}
	}
	// It has no limit key, so no key series, and no key limit is
	// counted.
	if n := testutil.CollectAndCount(col, "redisq_rate_limit_claims", "redisq_rate_limit_keys"); n != 0 {
		t.Errorf("%d key limit series for the queue's own limit", n)
	}

	if err := q.SetQueueRateLimit(ctx, redisq.RateLimit{}); err != nil {
		t.Fatal(err)
	}
	if n, body := scrape(); n != 1 || strings.Contains(body, "redisq_queue_rate_limit") {
		t.Errorf("after removing the limit: %d round trips, want 1\n%s", n, body)
	}
}
