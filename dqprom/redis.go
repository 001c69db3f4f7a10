package dqprom

import (
	"context"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var (
	redisUp = queueDesc("redisq_up", "1 if the queue's stats were read at this scrape, else 0.")
	// redisListErr reports a failed queue discovery (the scrape fails).
	redisListErr = prometheus.NewDesc("redisq_queues", "Queues found on the server.", nil, nil)
	redisItems   = queueDesc("redisq_items", "Items in each state now.", "state")
	redisDue     = queueDesc("redisq_due_items", "Scheduled items already due and not yet claimed.")
	redisOverdue = queueDesc("redisq_oldest_overdue_seconds", "How long the earliest due item has been due (0 if none).")
	redisLate    = queueDesc("redisq_delivery_lateness_seconds",
		"Lateness of deliveries: Redis TIME at claim minus the item's due time.")
)

var redisCounters = []struct {
	desc *prometheus.Desc
	val  func(*redisq.StatsCounters) int64
}{
	{queueDesc("redisq_enqueued_total", "New items (Enqueue, EnqueueAfter, Schedule creating one)."),
		func(c *redisq.StatsCounters) int64 { return c.Enqueued }},
	{queueDesc("redisq_delivered_total", "Leases granted by Take and TakeBatch, redeliveries included."),
		func(c *redisq.StatsCounters) int64 { return c.Delivered }},
	{queueDesc("redisq_acked_total", "Items acked."),
		func(c *redisq.StatsCounters) int64 { return c.Acked }},
	{queueDesc("redisq_nacked_total", "Leases given back by Nack."),
		func(c *redisq.StatsCounters) int64 { return c.Nacked }},
	{queueDesc("redisq_expired_total", "Leases that timed out and were retried."),
		func(c *redisq.StatsCounters) int64 { return c.Expired }},
	{queueDesc("redisq_dead_lettered_total", "Items moved to the dead set."),
		func(c *redisq.StatsCounters) int64 { return c.DeadLettered }},
	{queueDesc("redisq_cancelled_total", "Items removed by Cancel, or dropped after Cancel marked them in flight."),
		func(c *redisq.StatsCounters) int64 { return c.Cancelled }},
	{queueDesc("redisq_rescheduled_total", "Items moved by Reschedule or replaced by Schedule."),
		func(c *redisq.StatsCounters) int64 { return c.Rescheduled }},
	{queueDesc("redisq_requeued_total", "Dead items requeued."),
		func(c *redisq.StatsCounters) int64 { return c.Requeued }},
	{queueDesc("redisq_deleted_total", "Items deleted by DeleteDead, DeleteAllDead and Purge."),
		func(c *redisq.StatsCounters) int64 { return c.Deleted }},
}

// constHistogram turns a histogram with non-cumulative counts (one more
// than bounds: the last is above every bound) into a const metric.
func constHistogram(desc *prometheus.Desc, bounds []time.Duration, counts []int64, sum time.Duration, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, b := range bounds {
		cum += uint64(counts[i])
		buckets[b.Seconds()] = cum
	}
	cum += uint64(counts[len(bounds)])
	return prometheus.MustNewConstHistogram(desc, cum, sum.Seconds(), buckets, labels...)
}

// ScrapeTimeout bounds the Redis work of one scrape of a RedisCollector.
const ScrapeTimeout = 5 * time.Second

// RedisCollector is a prometheus.Collector for redisq queues (the redisq_*
// metrics): a fixed set (NewRedisCollector) or every queue on a server
// (NewRedisServerCollector). Each scrape reads each queue's Stats (one
// script call each), within ScrapeTimeout. It is safe for concurrent use.
type RedisCollector struct {
	fixed  []*redisq.Queue       // NewRedisCollector
	client redis.UniversalClient // NewRedisServerCollector

	mu     sync.Mutex
	opened map[string]*redisq.Queue // guarded by mu: discovered queues by name
}

// NewRedisCollector returns a collector for the given queues, labelled by
// their names. A queue closed later reports redisq_up 0.
func NewRedisCollector(queues ...*redisq.Queue) *RedisCollector {
	return &RedisCollector{fixed: queues}
}

// NewRedisServerCollector returns a collector for every queue on the server
// that client talks to (every master of a Cluster), found at each scrape by
// redisq.ListQueues (a SCAN of the keyspace, in pages: for a server with
// millions of keys, prefer NewRedisCollector with the queues you know).
// A failed discovery fails the scrape.
func NewRedisServerCollector(client redis.UniversalClient) *RedisCollector {
	return &RedisCollector{client: client, opened: map[string]*redisq.Queue{}}
}

// Describe implements prometheus.Collector.
func (c *RedisCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{redisUp, redisItems, redisDue, redisOverdue, redisLate} {
		ch <- d
	}
	for _, m := range redisCounters {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c *RedisCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	queues, err := c.queues(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(redisListErr, err)
		return
	}
	for _, q := range queues {
		collectQueue(ctx, ch, q)
	}
}

func (c *RedisCollector) queues(ctx context.Context) ([]*redisq.Queue, error) {
	if c.client == nil {
		return c.fixed, nil
	}
	names, err := redisq.ListQueues(ctx, c.client)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]*redisq.Queue, len(names))
	qs := make([]*redisq.Queue, 0, len(names))
	for _, n := range names {
		q := c.opened[n]
		if q == nil {
			// EvictionIgnore: New sends nothing, so this cannot fail on I/O.
			if q, err = redisq.New(ctx, c.client, n, redisq.WithEvictionCheck(redisq.EvictionIgnore)); err != nil {
				continue // a name New refuses is not a queue
			}
		}
		seen[n] = q
		qs = append(qs, q)
	}
	c.opened = seen
	return qs, nil
}

func collectQueue(ctx context.Context, ch chan<- prometheus.Metric, q *redisq.Queue) {
	name := q.Name()
	st, err := q.Stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(redisUp, prometheus.GaugeValue, 0, name)
		return
	}
	ch <- prometheus.MustNewConstMetric(redisUp, prometheus.GaugeValue, 1, name)
	for _, s := range []struct {
		state redisq.State
		n     int64
	}{{redisq.StateScheduled, st.Scheduled}, {redisq.StateInFlight, st.InFlight}, {redisq.StateDead, st.Dead}} {
		ch <- prometheus.MustNewConstMetric(redisItems, prometheus.GaugeValue, float64(s.n), name, s.state.String())
	}
	ch <- prometheus.MustNewConstMetric(redisDue, prometheus.GaugeValue, float64(st.DueBacklog), name)
	ch <- prometheus.MustNewConstMetric(redisOverdue, prometheus.GaugeValue, st.OldestOverdue.Seconds(), name)
	for _, m := range redisCounters {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(m.val(&st.StatsCounters)), name)
	}
	l := st.Lateness
	ch <- constHistogram(redisLate, l.Bounds, l.Counts, l.Sum, name)
}
