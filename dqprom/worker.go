package dqprom

import (
	"context"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/prometheus/client_golang/prometheus"
)

// WorkerBuckets are the upper bounds of redisq_worker_handler_duration_seconds:
// 1 ms to 5 min.
var WorkerBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// WorkerMetrics measures the handlers of redisq Workers: it is a
// redisq.Middleware source (Middleware) and a prometheus.Collector of what
// it saw, labelled by queue (QueueLabel of the message's queue name), for
// any number of workers and queues:
//
//	redisq_worker_handled_total{queue}                    counter    handler runs that returned (or panicked)
//	redisq_worker_failed_total{queue}                     counter    runs that returned an error or panicked
//	redisq_worker_panics_total{queue}                     counter    runs that panicked
//	redisq_worker_in_flight{queue}                        gauge      handlers running now
//	redisq_worker_handler_duration_seconds{queue,outcome} histogram  run time, by redisq.Outcome: ok, error, skip_retry, retry_after, panic
//
// Register it once and put its Middleware in every worker's
// WorkerOptions.Middleware (first, to time the other middleware too). It
// is safe for concurrent use.
type WorkerMetrics struct {
	handled, failed, panics *prometheus.CounterVec
	inFlight                *prometheus.GaugeVec
	duration                *prometheus.HistogramVec

	mu     sync.Mutex
	labels map[string]string // guarded by mu: queue name -> label (QueueLabel)
}

// NewWorkerMetrics returns a WorkerMetrics with no series yet: a queue's
// appear when its first message is handled.
func NewWorkerMetrics() *WorkerMetrics {
	return &WorkerMetrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redisq_worker_handled_total",
			Help: "Handler runs of redisq workers that returned or panicked.",
		}, []string{"queue"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redisq_worker_failed_total",
			Help: "Handler runs of redisq workers that returned an error or panicked.",
		}, []string{"queue"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redisq_worker_panics_total",
			Help: "Handler runs of redisq workers that panicked.",
		}, []string{"queue"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redisq_worker_in_flight",
			Help: "Handlers of redisq workers running now.",
		}, []string{"queue"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "redisq_worker_handler_duration_seconds",
			Help:    "Run time of redisq workers' handlers, by outcome (ok, error, skip_retry, retry_after, panic).",
			Buckets: WorkerBuckets,
		}, []string{"queue", "outcome"}),
		labels: map[string]string{},
	}
}

// label returns the queue label of the queue named name, computed once.
func (w *WorkerMetrics) label(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.labels[name]
	if !ok {
		l = QueueLabel(name)
		w.labels[name] = l
	}
	return l
}

// Middleware returns the redisq.Middleware that feeds w. A panic of the
// handler reaches it as a *redisq.PanicError (the worker recovers it).
func (w *WorkerMetrics) Middleware() redisq.Middleware {
	return func(next redisq.Handler) redisq.Handler {
		return func(ctx context.Context, m *redisq.Message) error {
			q := w.label(m.QueueName())
			g := w.inFlight.WithLabelValues(q)
			g.Inc()
			defer g.Dec()
			start := time.Now()
			err := next(ctx, m)
			el := time.Since(start)
			out := redisq.Outcome(err)
			w.duration.WithLabelValues(q, out).Observe(el.Seconds())
			w.handled.WithLabelValues(q).Inc()
			if err != nil {
				w.failed.WithLabelValues(q).Inc()
			}
			if out == "panic" {
				w.panics.WithLabelValues(q).Inc()
			}
			return err
		}
	}
}

// Describe implements prometheus.Collector.
func (w *WorkerMetrics) Describe(ch chan<- *prometheus.Desc) {
	w.handled.Describe(ch)
	w.failed.Describe(ch)
	w.panics.Describe(ch)
	w.inFlight.Describe(ch)
	w.duration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (w *WorkerMetrics) Collect(ch chan<- prometheus.Metric) {
	w.handled.Collect(ch)
	w.failed.Collect(ch)
	w.panics.Collect(ch)
	w.inFlight.Collect(ch)
	w.duration.Collect(ch)
}
