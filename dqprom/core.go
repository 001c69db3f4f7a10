package dqprom

import (
	"github.com/dq-go/delayqueue"
	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource is what NewQueueCollector reads: a *delayqueue.Queue[T] of any
// T.
type StatsSource interface {
	Stats() delayqueue.Stats
}

// coreMetric is one metric read from a delayqueue.Stats. A histogram field
// added to Stats gets an entry in a parallel table using constHistogram.
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
	{queueDesc("delayqueue_offered_total", "Items accepted by Offer, OfferAfter or Put."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Offered) }},
	{queueDesc("delayqueue_taken_total", "Items handed out by Take, TakeBatch, Poll or DrainExpired."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Taken) }},
	{queueDesc("delayqueue_removed_total", "Items removed by Remove."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Removed) }},
	{queueDesc("delayqueue_drained_total", "Items returned by Drain."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Drained) }},
	{queueDesc("delayqueue_wakeups_total", "Times a goroutine blocked in Take or TakeBatch resumed from a wait."),
		prometheus.CounterValue, func(s *delayqueue.Stats) float64 { return float64(s.Wakeups) }},
}

// QueueCollector is a prometheus.Collector for in-process delay queues
// (the delayqueue_* metrics). Each scrape calls Stats once per queue. It is
// safe for concurrent use.
type QueueCollector struct {
	queues map[string]StatsSource // immutable after NewQueueCollector
}

// NewQueueCollector returns a collector for the queues, keyed by the value
// of their "queue" label. Register it with a prometheus.Registerer.
func NewQueueCollector(queues map[string]StatsSource) *QueueCollector {
	m := make(map[string]StatsSource, len(queues))
	for k, v := range queues {
		if v == nil {
			panic("dqprom: nil queue " + k)
		}
		m[k] = v
	}
	return &QueueCollector{queues: m}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range coreMetrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	for name, q := range c.queues {
		s := q.Stats()
		for _, m := range coreMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.val(&s), name)
		}
	}
}
