package dqprom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var (
	redisUp = queueDesc("redisq_up", "1 if the queue's stats were read at this scrape, else 0.")
	// redisListErr reports a failed queue discovery (the scrape fails).
	redisListErr   = prometheus.NewDesc("redisq_queues", "Queues found on the server.", nil, nil)
	redisScrapeErr = queueDesc("redisq_scrape_error",
		"1 for each queue whose stats could not be read at this scrape (redisq_up 0); the error label says why.", "error")
	redisDiscoveryErr = prometheus.NewDesc("redisq_discovery_error",
		"1 for each problem in finding the queues that did not fail the scrape; the error label says what.",
		[]string{"error"}, nil)
	redisItems   = queueDesc("redisq_items", "Items in each state now.", "state")
	redisDue     = queueDesc("redisq_due_items", "Scheduled items already due and not yet claimed.")
	redisOverdue = queueDesc("redisq_oldest_overdue_seconds", "How long the earliest due item has been due (0 if none).")
	redisPaused  = queueDesc("redisq_queue_paused", "1 while the queue is paused (redisq Queue.Pause: nothing is delivered), else 0.")

	// A partitioned queue (redisq.Partitioned) is reported as its
	// partitions, ordinary queues, plus these two: join on queue to sum
	// by partitioned queue, with no series counted twice.
	redisPartitions = queueDesc("redisq_partitioned_partitions",
		"Partitions of a partitioned queue (redisq.NewPartitioned); its items are reported under its partitions' queue labels (see redisq_partition_info).")
	redisPartitionInfo = queueDesc("redisq_partition_info",
		"1 for each queue that is a partition of a partitioned queue: sum by (partitioned) (redisq_items * on(queue) group_left(partitioned) redisq_partition_info) gives the partitioned queue's figures.",
		"partitioned", "partition")
	redisLate = queueDesc("redisq_delivery_lateness_seconds",
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
	{queueDesc("redisq_skipped_total", "Recurring occurrences deleted unstarted by their registration's Overlap or CatchUpWindow."),
		func(c *redisq.StatsCounters) int64 { return c.Skipped }},
	{queueDesc("redisq_snoozed_total", "Leases given back by Snooze: no attempt counted, not a failure."),
		func(c *redisq.StatsCounters) int64 { return c.Snoozed }},
}

// constMetric is prometheus.NewConstMetric, with an error (a bug: label
// values are made valid by QueueLabel) turned into an invalid metric
// rather than a panic.
func constMetric(desc *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, typ, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// constHistogram turns a histogram with non-cumulative counts (one more
// than bounds: the last is above every bound) into a const metric. Counts
// come from Redis, where anyone may have written anything: a negative one
// counts as 0.
func constHistogram(desc *prometheus.Desc, bounds []time.Duration, counts []int64, sum time.Duration, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, b := range bounds {
		cum += uint64(max(counts[i], 0))
		buckets[b.Seconds()] = cum
	}
	cum += uint64(max(counts[len(bounds)], 0))
	m, err := prometheus.NewConstHistogram(desc, cum, sum.Seconds(), buckets, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// ScrapeTimeout is the default bound on the Redis work of one scrape of a
// RedisCollector (WithTimeout).
const ScrapeTimeout = 5 * time.Second

// DefaultScanKeys is how many keys, per node, a server-wide collector
// SCANs at each scrape for queues missing from the registry (WithScanKeys):
// 5 SCAN commands of 1000 keys, about 1 ms of server time each on the
// development VM, whatever the size of the keyspace.
const DefaultScanKeys = 5000

// RedisOption configures a RedisCollector.
type RedisOption func(*redisConfig)

type redisConfig struct {
	timeout   time.Duration
	scanKeys  int
	limitScan int
}

// WithTimeout bounds the Redis work of one scrape (default ScrapeTimeout):
// finding the queues and reading every queue's stats, under one context
// deadline. The queues not read in time report redisq_up 0 and the error.
// go-redis checks the deadline before each command; it interrupts one
// waiting for its reply only if the client has ContextTimeoutEnabled (else
// the client's ReadTimeout bounds it). It panics if d <= 0.
func WithTimeout(d time.Duration) RedisOption {
	if d <= 0 {
		panic(fmt.Sprintf("dqprom: WithTimeout(%v): the timeout must be positive", d))
	}
	return func(c *redisConfig) { c.timeout = d }
}

// WithScanKeys sets how many keys, on each node, a server-wide collector
// SCANs at each scrape for queues missing from the registry
// (redisq.RegistryKey), continuing where the previous scrape stopped
// (redisq.QueueScanner); default DefaultScanKeys, 0 turns the SCAN off. A
// server with K keys is gone through in K/n scrapes; a keyspace of fewer
// than n keys at every scrape. Collectors of given queues ignore it. It
// panics if n < 0.
func WithScanKeys(n int) RedisOption {
	if n < 0 {
		panic(fmt.Sprintf("dqprom: WithScanKeys(%d): the number of keys must not be negative", n))
	}
	return func(c *redisConfig) { c.scanKeys = n }
}

// RedisCollector is a prometheus.Collector for redisq queues (the redisq_*
// metrics): a fixed set (NewRedisCollector) or every queue on a server
// (NewRedisServerCollector). Each scrape reads each queue's Stats (one
// script call each, up to 8 at a time), and the busiest limit keys of a
// queue with limits and the queue's own rate limit when it has one (see
// Limits in the package doc, WithLimitScan),
// within a time limit (WithTimeout).
//
// Concurrent scrapes share one reading: a Collect that starts while
// another is reading Redis waits for it and reports what it read, so three
// scrapers cost Redis what one does.
//
// Every queue is labelled by QueueLabel(name), so that no name, however
// hostile (not UTF-8, control characters, 1 MiB long), can fail or crash a
// scrape. A queue whose stats cannot be read (a Redis error, a timeout, an
// ACL user without EVALSHA) reports redisq_up 0 and redisq_scrape_error
// with the error, and the others are reported as usual. A queue closed by
// its owner reports redisq_up 0 alone. It is safe for concurrent use.
type RedisCollector struct {
	cfg     redisConfig
	fixed   []*target             // NewRedisCollector: one per name, labels unique
	notes   []string              // NewRedisCollector: problems found in the queues given
	client  redis.UniversalClient // NewRedisServerCollector
	scanner *redisq.QueueScanner  // NewRedisServerCollector with a SCAN

	mu     sync.Mutex
	flight *scrape // guarded by mu: the scrape reading Redis now
	joined int     // guarded by mu: Collect calls that joined another's scrape

	// Used by the scrape reading Redis only (one at a time, handed over
	// through mu).
	opened     map[string]*target // server: the queues of the last discovery, by name
	lastLabels []string           // server: their labels
}

// scrape is one reading of Redis, shared by the Collect calls that overlap
// it.
type scrape struct {
	done    chan struct{}
	metrics []prometheus.Metric // set before done is closed
}

// target is one queue to read.
type target struct {
	name, label string
	q           *redisq.Queue // nil until opened
}

// fixedTargets returns the targets of a collector of the queues given, each
// queue once. It panics on a nil queue.
func fixedTargets(queues []*redisq.Queue) []*target {
	seen := map[*redisq.Queue]bool{}
	var ts []*target
	for _, q := range queues {
		if q == nil {
			panic("dqprom: nil queue")
		}
		if !seen[q] {
			seen[q] = true
			ts = append(ts, &target{name: q.Name(), label: QueueLabel(q.Name()), q: q})
		}
	}
	return ts
}

// rediscover returns the targets of names, reusing the queues of opened
// (the previous discovery) and closing those no longer listed; the map
// returned is the next discovery's opened.
func rediscover(opened map[string]*target, names []string) (map[string]*target, []*target) {
	next := make(map[string]*target, len(names))
	ts := make([]*target, 0, len(names))
	for _, n := range names {
		t := opened[n]
		if t == nil {
			t = &target{name: n, label: QueueLabel(n)}
		}
		next[n] = t
		ts = append(ts, t)
	}
	for n, t := range opened {
		if next[n] == nil && t.q != nil {
			_ = t.q.Close()
		}
	}
	return next, ts
}

func newRedisCollector(opts []RedisOption) *RedisCollector {
	c := &RedisCollector{cfg: redisConfig{timeout: ScrapeTimeout, scanKeys: DefaultScanKeys, limitScan: DefaultLimitScan}}
	for _, o := range opts {
		if o == nil {
			panic("dqprom: nil RedisOption")
		}
		o(&c.cfg)
	}
	return c
}

// NewRedisCollector returns a collector for the given queues, labelled by
// QueueLabel of their names, with the defaults of the options. A queue
// given twice is read once; of two Queue values with one name (say, on two
// servers) the second is left out, with a redisq_discovery_error, as their
// series would clash: use a collector per server. A queue closed later
// reports redisq_up 0.
func NewRedisCollector(queues ...*redisq.Queue) *RedisCollector {
	return NewRedisCollectorWithOptions(queues)
}

// NewRedisCollectorWithOptions is NewRedisCollector with options
// (WithTimeout, WithLimitScan). It panics on a nil queue.
func NewRedisCollectorWithOptions(queues []*redisq.Queue, opts ...RedisOption) *RedisCollector {
	c := newRedisCollector(opts)
	c.fixed, c.notes = uniqueLabels(fixedTargets(queues))
	return c
}

// NewRedisServerCollector returns a collector for every queue on the server
// that client talks to (every master of a Cluster). At each scrape it
// lists the registered queues (redisq.ListQueues: its cost grows with the
// number of queues, not of keys) and SCANs a bounded number of keys for
// queues missing from the registry (WithScanKeys), which it registers; it
// opens each queue once (redisq.New, WithoutRegistry). A failed listing
// fails the scrape (an invalid metric, so that promhttp answers 500 with
// the error under HTTPErrorOnError) and reports the queues of the previous
// scrape redisq_up 0; a failed SCAN only adds a redisq_discovery_error.
func NewRedisServerCollector(client redis.UniversalClient, opts ...RedisOption) *RedisCollector {
	if client == nil {
		panic("dqprom: nil client")
	}
	c := newRedisCollector(opts)
	c.client = client
	c.opened = map[string]*target{}
	if c.cfg.scanKeys > 0 {
		c.scanner = redisq.NewQueueScanner(client)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *RedisCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{redisUp, redisItems, redisDue, redisOverdue, redisPaused, redisLate,
		redisScrapeErr, redisDiscoveryErr, redisListErr, redisPartitions, redisPartitionInfo}, limitDescs()...) {
		ch <- d
	}
	for _, m := range redisCounters {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector. It reads Redis, or waits for the
// Collect that is reading it and reports what that one read.
func (c *RedisCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s := c.flight
	if s == nil {
		s = &scrape{done: make(chan struct{})}
		c.flight = s
		c.mu.Unlock()
		func() {
			defer func() {
				c.mu.Lock()
				c.flight = nil
				c.mu.Unlock()
				close(s.done)
			}()
			s.metrics = c.read()
		}()
	} else {
		c.joined++
		c.mu.Unlock()
		<-s.done
	}
	for _, m := range s.metrics {
		ch <- m
	}
}

// read reads Redis for one scrape and returns its metrics.
func (c *RedisCollector) read() []prometheus.Metric {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.timeout)
	defer cancel()
	ts, notes := c.fixed, c.notes
	if c.client != nil {
		var err error
		ts, notes, err = c.discover(ctx)
		if err != nil {
			out := make([]prometheus.Metric, 0, len(c.lastLabels)+1)
			for _, l := range c.lastLabels {
				out = append(out, constMetric(redisUp, prometheus.GaugeValue, 0, l))
			}
			return append(out, prometheus.NewInvalidMetric(redisListErr, fmt.Errorf("dqprom: finding the queues: %w", err)))
		}
	}
	stats := readStats(ctx, c.client, ts, c.cfg.limitScan)
	var out []prometheus.Metric
	for i := range ts {
		out = queueMetrics(out, ts[i], stats[i])
	}
	if c.client != nil {
		var err error
		if out, err = partitionMetrics(ctx, c.client, out); err != nil {
			notes = append(notes, "listing the partitioned queues: "+err.Error())
		}
	}
	seen := map[string]bool{}
	for _, n := range notes {
		if l := errorLabel(errors.New(n)); !seen[l] {
			seen[l] = true
			out = append(out, constMetric(redisDiscoveryErr, prometheus.GaugeValue, 1, l))
		}
	}
	return out
}

// statsWorkers is how many queues a scrape reads at a time.
const statsWorkers = 8

type statsResult struct {
	st  redisq.Stats
	lim limitsRead // when st counts limits
	err error
}

// readStats reads the stats of every target (opening it first if it is
// not open), statsWorkers at a time. A server-wide target's q is written
// here, by the one goroutine reading it.
func readStats(ctx context.Context, client redis.UniversalClient, ts []*target, limitScan int) []statsResult {
	res := make([]statsResult, len(ts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(statsWorkers, len(ts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ts) {
					return
				}
				res[i] = ts[i].read(ctx, client, limitScan)
			}
		}()
	}
	wg.Wait()
	return res
}

// errOpen wraps why New failed on a discovered queue: the error New
// wrapped, as New's own message holds the name (up to 1 MiB, quoted),
// which the queue label already says.
type errOpen struct{ err error }

func (e errOpen) Error() string { return "opening the queue: " + e.err.Error() }
func (e errOpen) Unwrap() error { return e.err }

// read opens the queue if it is not open (a discovered queue) and reads
// its stats, and its busiest limit keys (readLimits) when it has limits.
func (t *target) read(ctx context.Context, client redis.UniversalClient, limitScan int) statsResult {
	if t.q == nil {
		// EvictionIgnore: no CONFIG GET, which an exporter has no use for.
		q, err := redisq.New(ctx, client, t.name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
		if err != nil {
			if u := errors.Unwrap(err); u != nil {
				err = u // what New wrapped with the (long, escaped) name
			}
			return statsResult{err: errOpen{err}}
		}
		t.q = q
	}
	st, err := t.q.Stats(ctx)
	r := statsResult{st: st, err: err}
	if err == nil {
		r.lim, r.err = readLimits(ctx, t.q, st, limitScan)
	}
	return r
}

func queueMetrics(out []prometheus.Metric, t *target, r statsResult) []prometheus.Metric {
	name := t.label
	if r.err != nil {
		out = append(out, constMetric(redisUp, prometheus.GaugeValue, 0, name))
		if !errors.Is(r.err, redisq.ErrClosed) {
			out = append(out, constMetric(redisScrapeErr, prometheus.GaugeValue, 1, name, errorLabel(r.err)))
		}
		return out
	}
	st := &r.st
	out = append(out, constMetric(redisUp, prometheus.GaugeValue, 1, name))
	for _, s := range []struct {
		state redisq.State
		n     int64
	}{{redisq.StateScheduled, st.Scheduled}, {redisq.StateInFlight, st.InFlight}, {redisq.StateDead, st.Dead}, {redisq.StateCompleted, st.Completed}} {
		out = append(out, constMetric(redisItems, prometheus.GaugeValue, float64(s.n), name, s.state.String()))
	}
	out = append(out, constMetric(redisDue, prometheus.GaugeValue, float64(st.DueBacklog), name))
	out = append(out, constMetric(redisOverdue, prometheus.GaugeValue, st.OldestOverdue.Seconds(), name))
	paused := 0.0
	if st.Paused {
		paused = 1
	}
	out = append(out, constMetric(redisPaused, prometheus.GaugeValue, paused, name))
	for _, m := range redisCounters {
		out = append(out, constMetric(m.desc, prometheus.CounterValue, float64(m.val(&st.StatsCounters)), name))
	}
	out = limitMetrics(out, name, r.lim)
	l := st.Lateness
	if len(l.Counts) == len(l.Bounds)+1 {
		out = append(out, constHistogram(redisLate, l.Bounds, l.Counts, l.Sum, name))
	}
	return out
}

// partitionMetrics appends the server's partitioned queues
// (redisq.ListPartitioned: one SSCAN page and one read of each queue's
// partition table) as redisq_partitioned_partitions and
// redisq_partition_info.
func partitionMetrics(ctx context.Context, client redis.UniversalClient, out []prometheus.Metric) ([]prometheus.Metric, error) {
	ps, err := redisq.ListPartitioned(ctx, client)
	if err != nil {
		return out, err
	}
	for _, p := range ps {
		if p.Err != nil {
			continue
		}
		l := QueueLabel(p.Name)
		out = append(out, constMetric(redisPartitions, prometheus.GaugeValue, float64(len(p.Partitions)), l))
		for i, part := range p.Partitions {
			out = append(out, constMetric(redisPartitionInfo, prometheus.GaugeValue, 1, QueueLabel(part), l, strconv.Itoa(i)))
		}
	}
	return out, nil
}
