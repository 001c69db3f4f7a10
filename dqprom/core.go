package dqprom

import (
	"fmt"
	"math"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource is what NewQueueCollector reads: a *delayqueue.Queue[T] or a
// *delayqueue.Keyed[K, V] of any type arguments.
type StatsSource interface {
	Stats() delayqueue.Stats
}

// coreMetric is one metric read from a delayqueue.Stats.
type coreMetric struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*delayqueue.Stats) float64
}

func queueDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"queue"}, labels...), nil)
}

var coreMetrics = []coreMetric{
	{queueDesc("delayqueue_items", "Items queued now."),
		prometheus.GaugeValue, func(s *delayqueue.Stats) float64 { return float64(s.Len) }},
	{queueDesc("delayqueue_waiting_takers", "Goroutines blocked in Take or TakeBatch now."),
		prometheus.GaugeValue, func(s *delayqueue.Stats) float64 { return float64(s.Waiting) }},
	{queueDesc("delayqueue_blocked_puts", "Goroutines blocked in Put now, waiting for room in a bounded queue."),
		prometheus.GaugeValue, func(s *delayqueue.Stats) float64 { return float64(s.BlockedPuts) }},
	{queueDesc("delayqueue_offered_total", "Items accepted by Offer, OfferAfter or Put."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Offered) }},
	{queueDesc("delayqueue_taken_total", "Items handed out by Take, TakeBatch, Poll or DrainExpired."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Taken) }},
	{queueDesc("delayqueue_removed_total", "Items removed by Remove."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Removed) }},
	{queueDesc("delayqueue_drained_total", "Items returned by Drain, DrainEntries or Shutdown."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Drained) }},
	{queueDesc("delayqueue_rescheduled_total", "Successful Reschedules, and Keyed replacements of a queued key."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Rescheduled) }},
	{queueDesc("delayqueue_wakeups_total", "Times a goroutine blocked in Take or TakeBatch resumed from a wait."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Wakeups) }},
}

var latenessDesc = queueDesc("delayqueue_lateness_seconds",
	"How late items were handed out: the queue's clock reading that found each due, minus its deadline. "+
		"The sum is estimated from bucket midpoints (within 6.25%).")

// latenessBounds are the upper bounds of delayqueue_lateness_seconds: every
// other power of two of nanoseconds from 2^9 (512 ns) to 2^41 (37 min).
// Each is a bucket boundary of delayqueue.Histogram, so its buckets add up
// into these exactly.
var latenessBounds = func() []time.Duration {
	var b []time.Duration
	for e := 9; e <= 41; e += 2 {
		b = append(b, time.Duration(1)<<e)
	}
	return b
}()

// latenessHistogram turns a queue's Stats.Lateness into a Prometheus
// histogram with latenessBounds.
func latenessHistogram(h *delayqueue.Histogram, queue string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(latenessBounds))
	per := make([]uint64, len(latenessBounds))
	var sum float64
	for b := range h.Buckets() {
		mid := b.Lo + (b.Hi-b.Lo)/2
		if b.Hi == math.MaxInt64 {
			mid = max(b.Lo, h.Max) // the overflow bucket: no midpoint
		}
		sum += float64(b.Count) * mid.Seconds()
		for i, le := range latenessBounds {
			if b.Hi <= le {
				per[i] += b.Count
				break
			}
		}
	}
	var cum uint64
	for i, le := range latenessBounds {
		cum += per[i]
		buckets[le.Seconds()] = cum
	}
	m, err := prometheus.NewConstHistogram(latenessDesc, h.Count, sum, buckets, queue)
	if err != nil {
		return prometheus.NewInvalidMetric(latenessDesc, err)
	}
	return m
}

// QueueCollector is a prometheus.Collector for in-process delay queues
// (the delayqueue_* metrics). Each scrape calls Stats once per queue. It is
// safe for concurrent use.
type QueueCollector struct {
	queues map[string]StatsSource // immutable after NewQueueCollector: by label
}

// NewQueueCollector returns a collector for the queues, keyed by their
// names; the "queue" label is QueueLabel(name), so any string will do.
// Register it with a prometheus.Registerer. It panics on a nil queue, and
// on two names with one label (names longer than MaxLabelLen bytes that
// share their first bytes and 64 bits of SHA-256).
func NewQueueCollector(queues map[string]StatsSource) *QueueCollector {
	m := make(map[string]StatsSource, len(queues))
	names := make(map[string]string, len(queues))
	for k, v := range queues {
		if v == nil {
			panic(fmt.Sprintf("dqprom: nil queue %q", QueueLabel(k)))
		}
		l := QueueLabel(k)
		if other, ok := names[l]; ok {
			panic(fmt.Sprintf("dqprom: queues of %d and %d bytes have the same label %q", len(other), len(k), l))
		}
		names[l] = k
		m[l] = v
	}
	return &QueueCollector{queues: m}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range coreMetrics {
		ch <- m.desc
	}
	ch <- latenessDesc
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	for name, q := range c.queues {
		s := q.Stats()
		for _, m := range coreMetrics {
			ch <- constMetric(m.desc, m.typ, m.val(&s), name)
		}
		ch <- latenessHistogram(&s.Lateness, name)
	}
}
