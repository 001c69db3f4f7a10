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
// it saw, labelled by queue (QueueLabel of the message's queue name) and
// kind (the message's Job.Kind, see below), for any number of workers,
// queues and kinds:
//
//	redisq_worker_handled_total{queue,kind}                    counter    handler runs that returned (or panicked)
//	redisq_worker_failed_total{queue,kind}                     counter    runs that failed (redisq.IsFailure: an error or a panic; a Snooze is none)
//	redisq_worker_panics_total{queue,kind}                     counter    runs that panicked
//	redisq_worker_in_flight{queue,kind}                        gauge      handlers running now
//	redisq_worker_handler_duration_seconds{queue,kind,outcome} histogram  run time, by redisq.Outcome: ok, error, skip_retry, retry_after, snooze, panic
//
// The "kind" label is "" for a message without a kind, and otherwise the
// kind escaped and bounded as QueueLabel does a queue name (so that no
// kind can break a scrape; a printable kind is its own label). Kinds are
// chosen by programmers, not by the data, but a label per kind multiplies
// every series, the histogram's buckets included: so only the first
// MaxKindLabels (100) distinct kinds a WorkerMetrics sees in a queue get
// a label of their own, and the runs of any later kind of that queue are
// counted under kind="other" (OtherKind), which a kind named "other"
// shares. A queue thus has at most MaxKindLabels+2 kind values ("" and
// "other" besides), and a flood of distinct kinds costs no memory
// either: the kinds past the bound are not remembered. Which kinds come
// first depends on the order of the runs, so it can differ between
// processes and restarts: a kind="other" series says that a queue has
// more kinds than the bound.
//
// Register it once and put its Middleware in every worker's
// WorkerOptions.Middleware (first, to time the other middleware too). It
// is safe for concurrent use.
type WorkerMetrics struct {
	handled, failed, panics *prometheus.CounterVec
	inFlight                *prometheus.GaugeVec
	duration                *prometheus.HistogramVec

	mu     sync.Mutex
	queues map[string]*queueLabels // guarded by mu: by queue name
}

// MaxKindLabels is how many distinct kinds of one queue a WorkerMetrics
// labels by their own name; the runs of the others are counted under
// kind="other" (OtherKind). A message without a kind (kind="") does not
// count toward it.
const MaxKindLabels = 100

// OtherKind is the "kind" label of the runs of the kinds of a queue past
// its first MaxKindLabels.
const OtherKind = "other"

// queueLabels are the labels of one queue: its own, and those of its
// kinds (at most MaxKindLabels of them).
type queueLabels struct {
	label string            // QueueLabel of the name
	kinds map[string]string // kind -> label, for the first MaxKindLabels kinds
}

// NewWorkerMetrics returns a WorkerMetrics with no series yet: those of a
// queue and kind appear when its first message of that kind is handled.
func NewWorkerMetrics() *WorkerMetrics {
	return &WorkerMetrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redisq_worker_handled_total",
			Help: "Handler runs of redisq workers that returned or panicked.",
		}, []string{"queue", "kind"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redisq_worker_failed_total",
			Help: "Handler runs of redisq workers that failed: returned an error (a Snooze is none) or panicked.",
		}, []string{"queue", "kind"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redisq_worker_panics_total",
			Help: "Handler runs of redisq workers that panicked.",
		}, []string{"queue", "kind"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redisq_worker_in_flight",
			Help: "Handlers of redisq workers running now.",
		}, []string{"queue", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "redisq_worker_handler_duration_seconds",
			Help:    "Run time of redisq workers' handlers, by outcome (ok, error, skip_retry, retry_after, panic).",
			Buckets: WorkerBuckets,
		}, []string{"queue", "kind", "outcome"}),
		queues: map[string]*queueLabels{},
	}
}

// labels returns the queue and kind labels of a message of the queue
// named queue and of that kind, each computed once.
func (w *WorkerMetrics) labels(queue, kind string) (string, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ql, ok := w.queues[queue]
	if !ok {
		ql = &queueLabels{label: QueueLabel(queue), kinds: map[string]string{}}
		w.queues[queue] = ql
	}
	if kind == "" {
		return ql.label, ""
	}
	k, ok := ql.kinds[kind]
	if !ok {
		if len(ql.kinds) >= MaxKindLabels {
			return ql.label, OtherKind
		}
		k = QueueLabel(kind)
		ql.kinds[kind] = k
	}
	return ql.label, k
}

// Middleware returns the redisq.Middleware that feeds w. A panic of the
// handler reaches it as a *redisq.PanicError (the worker recovers it).
func (w *WorkerMetrics) Middleware() redisq.Middleware {
	return func(next redisq.Handler) redisq.Handler {
		return func(ctx context.Context, m *redisq.Message) error {
			q, k := w.labels(m.QueueName(), m.Kind)
			g := w.inFlight.WithLabelValues(q, k)
			g.Inc()
			out := false
			defer func() {
				if !out {
					g.Dec()
				}
			}()
			start := time.Now()
			err := next(ctx, m)
			el := time.Since(start)
			// Out of flight before it is counted handled, so that a scrape
			// that sees the run counted sees it out of flight too.
			out = true
			g.Dec()
			outcome := redisq.Outcome(err)
			w.duration.WithLabelValues(q, k, outcome).Observe(el.Seconds())
			w.handled.WithLabelValues(q, k).Inc()
			if redisq.IsFailure(err) {
				w.failed.WithLabelValues(q, k).Inc()
			}
			if outcome == "panic" {
				w.panics.WithLabelValues(q, k).Inc()
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
