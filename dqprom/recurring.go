package dqprom

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var (
	recRegistrations = queueDesc("redisq_recurring_registrations",
		"Recurring registrations of the queue (redisq Queue.Register).")
	recLast = queueDesc("redisq_recurring_last_occurrence_timestamp_seconds",
		"When the latest occurrence of the registration that has come was due (Unix time by the Redis clock); absent before the first.", "name")
	recNext = queueDesc("redisq_recurring_next_occurrence_timestamp_seconds",
		"When the next run of the registration is due (Unix time by the Redis clock); in the past when no process keeps it (KeepRecurring), absent when its series ended or this exporter cannot compute its schedule.", "name")
	recEnqueued = queueDesc("redisq_recurring_enqueued_occurrence_timestamp_seconds",
		"The latest occurrence of the registration that a keeper enqueued (Unix time by the Redis clock): a keeper enqueues the next one when it falls due, so it is in the past only while no process able to compute the schedule keeps it.", "name")
	recSeen = queueDesc("redisq_recurring_seen_timestamp_seconds",
		"When live code last registered the registration (Registration.Seen: Register, then every minute the keeper of the registering process); 0 when none of this redisq version has.", "name")
	recPaused = queueDesc("redisq_recurring_paused_timestamp_seconds",
		"When the registration was paused (redisq Queue.PauseRecurring; Unix time by the Redis clock): no occurrence is enqueued until it is resumed. Absent when it is not paused.", "name")
	recSkipped = queueDesc("redisq_recurring_skipped_occurrences_total",
		"Occurrences of the registration that its occurrence policy skipped (redisq Overlap, CatchUpWindow): deleted unstarted because an earlier one ran, or too late.", "name")
	recScrapeErr = queueDesc("redisq_recurring_scrape_error",
		"1 for each problem in reading the queue's registrations at this scrape; the error label says what.", "error")
	recDiscoveryErr = prometheus.NewDesc("redisq_recurring_discovery_error",
		"1 for each problem in finding the queues that did not fail the scrape; the error label says what.",
		[]string{"error"}, nil)
	// recListErr reports a failed queue discovery (the scrape fails).
	recListErr = prometheus.NewDesc("redisq_recurring_queues", "Queues found on the server.", nil, nil)
)

// RecurringCollector is a prometheus.Collector of the recurring
// registrations of redisq queues (redisq.Queue.Register), for a fixed set
// of queues (NewRecurringCollector) or every queue on a server
// (NewRecurringServerCollector):
//
//	redisq_recurring_registrations{queue}                           gauge  registrations of the queue
//	redisq_recurring_last_occurrence_timestamp_seconds{queue,name}  gauge  the latest occurrence that has come (absent before the first)
//	redisq_recurring_next_occurrence_timestamp_seconds{queue,name}  gauge  the next run (absent when the series ended)
//	redisq_recurring_enqueued_occurrence_timestamp_seconds{queue,name} gauge  the latest occurrence enqueued (the watermark)
//	redisq_recurring_seen_timestamp_seconds{queue,name}             gauge  when live code last registered it (0: never)
//	redisq_recurring_paused_timestamp_seconds{queue,name}           gauge  when it was paused (absent: not paused; no next run then)
//	redisq_recurring_skipped_occurrences_total{queue,name}          counter occurrences its Overlap or CatchUpWindow skipped
//	redisq_recurring_scrape_error{queue,error}                      gauge  1 for each problem in reading the queue's registrations,
//	                                                                        and for each registration whose schedule it cannot compute
//	redisq_recurring_discovery_error{error}                         gauge  1 for each queue left out (two with one label)
//
// Times are Unix seconds by the Redis clock; "name" is QueueLabel of the
// registration's name, as "queue" is of the queue's. The next occurrence
// is the one enqueued if it is not yet due, else the schedule's next one
// after it, which a keeper enqueues when it runs: a next occurrence in the
// past means that no process keeps the registration (alert on
// time() - redisq_recurring_next_occurrence_timestamp_seconds > 60, say).
// A registration whose schedule this process cannot compute (written by a
// later version) has no next run, and a scrape error names it; its
// enqueued occurrence, which the keepers move a period ahead, still tells
// whether any process keeps it. A registration that live code no longer
// registers (its Register call removed) is seen no more: alert on
// time() - redisq_recurring_seen_timestamp_seconds > 180
// (redisq.OrphanAfter).
//
// Each scrape reads every registration of every queue (redisq
// Queue.Registrations: one script per 100 registrations), up to 8 queues
// at a time, within WithTimeout. A queue whose registrations cannot be read
// reports redisq_recurring_scrape_error and the others are reported as
// usual. It is safe for concurrent use; scrapes run one at a time.
type RecurringCollector struct {
	cfg    redisConfig
	fixed  []*target
	notes  []string
	client redis.UniversalClient

	mu     sync.Mutex         // one scrape at a time
	opened map[string]*target // guarded by mu: server, the queues of the last discovery
	last   []string           // guarded by mu: server, their labels
}

// NewRecurringCollector returns a collector of the registrations of the
// given queues, labelled by QueueLabel of their names. As
// NewRedisCollector, a queue given twice is read once and of two Queue
// values with one name the second is left out. It panics on a nil queue.
func NewRecurringCollector(queues ...*redisq.Queue) *RecurringCollector {
	return NewRecurringCollectorWithOptions(queues)
}

// NewRecurringCollectorWithOptions is NewRecurringCollector with options
// (WithTimeout).
func NewRecurringCollectorWithOptions(queues []*redisq.Queue, opts ...RedisOption) *RecurringCollector {
	c := &RecurringCollector{cfg: newRedisCollector(opts).cfg}
	c.fixed, c.notes = uniqueLabels(fixedTargets(queues))
	return c
}

// NewRecurringServerCollector returns a collector of the registrations of
// every queue registered on the server that client talks to
// (redisq.ListQueues; Register needs New, which registers the queue). A
// failed listing fails the scrape. Options: WithTimeout. It panics on a
// nil client.
func NewRecurringServerCollector(client redis.UniversalClient, opts ...RedisOption) *RecurringCollector {
	if client == nil {
		panic("dqprom: nil client")
	}
	c := &RecurringCollector{cfg: newRedisCollector(opts).cfg, client: client, opened: map[string]*target{}}
	return c
}

// Describe implements prometheus.Collector.
func (c *RecurringCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{recRegistrations, recLast, recNext, recEnqueued, recSeen, recPaused, recSkipped, recScrapeErr, recDiscoveryErr, recListErr} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *RecurringCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.read() {
		ch <- m
	}
}

func (c *RecurringCollector) read() []prometheus.Metric {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.timeout)
	defer cancel()
	ts, notes := c.fixed, c.notes
	if c.client != nil {
		var err error
		if ts, notes, err = c.discover(ctx); err != nil {
			return []prometheus.Metric{prometheus.NewInvalidMetric(recListErr, fmt.Errorf("dqprom: finding the queues: %w", err))}
		}
	}
	res := make([]regsResult, len(ts))
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
				res[i] = ts[i].readRegistrations(ctx, c.client)
			}
		}()
	}
	wg.Wait()
	var out []prometheus.Metric
	for i, t := range ts {
		out = RecurringMetrics(out, t.label, res[i].regs, res[i].err)
	}
	seen := map[string]bool{}
	for _, n := range notes {
		if l := errorLabel(errors.New(n)); !seen[l] {
			seen[l] = true
			out = append(out, constMetric(recDiscoveryErr, prometheus.GaugeValue, 1, l))
		}
	}
	return out
}

// discover lists the queues of the server, opening each once.
func (c *RecurringCollector) discover(ctx context.Context) ([]*target, []string, error) {
	names, err := redisq.ListQueues(ctx, c.client)
	if err != nil {
		return nil, nil, err
	}
	var ts []*target
	c.opened, ts = rediscover(c.opened, names)
	ts, notes := uniqueLabels(ts)
	return ts, notes, nil
}

type regsResult struct {
	regs []redisq.Registration
	err  error
}

// readRegistrations opens the queue if it is not open (a discovered
// queue) and reads its registrations.
func (t *target) readRegistrations(ctx context.Context, client redis.UniversalClient) regsResult {
	if t.q == nil {
		q, err := redisq.New(ctx, client, t.name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
		if err != nil {
			if u := errors.Unwrap(err); u != nil {
				err = u
			}
			return regsResult{err: errOpen{err}}
		}
		t.q = q
	}
	regs, err := t.q.Registrations(ctx)
	return regsResult{regs, err}
}

// RecurringMetrics appends the redisq_recurring_* metrics of one queue,
// labelled queue, to out: from its registrations, or the error that
// reading them returned (redisq.ErrClosed, a queue closed by its owner,
// reports nothing). Two registration names with one label (QueueLabel) are
// reported once, with a redisq_recurring_scrape_error. It is the body of
// RecurringCollector, for a collector that reads the registrations itself.
func RecurringMetrics(out []prometheus.Metric, queue string, regs []redisq.Registration, err error) []prometheus.Metric {
	if err != nil {
		if !errors.Is(err, redisq.ErrClosed) {
			out = append(out, constMetric(recScrapeErr, prometheus.GaugeValue, 1, queue, errorLabel(err)))
		}
		return out
	}
	out = append(out, constMetric(recRegistrations, prometheus.GaugeValue, float64(len(regs)), queue))
	byLabel := make(map[string]string, len(regs))
	for _, r := range regs {
		l := QueueLabel(r.Name)
		if other, ok := byLabel[l]; ok {
			out = append(out, constMetric(recScrapeErr, prometheus.GaugeValue, 1, queue, errorLabel(fmt.Errorf(
				"registrations with SHA-256 %s and %s both have the name label %q: the second is not reported", fullHash(other), fullHash(r.Name), l))))
			continue
		}
		byLabel[l] = r.Name
		if !r.Last.IsZero() {
			out = append(out, constMetric(recLast, prometheus.GaugeValue, float64(r.Last.UnixMilli())/1e3, queue, l))
		}
		if !r.Next.IsZero() {
			out = append(out, constMetric(recNext, prometheus.GaugeValue, float64(r.Next.UnixMilli())/1e3, queue, l))
		}
		out = append(out, constMetric(recEnqueued, prometheus.GaugeValue, float64(r.Enqueued.UnixMilli())/1e3, queue, l))
		seen := 0.0
		if !r.Seen.IsZero() {
			seen = float64(r.Seen.UnixMilli()) / 1e3
		}
		out = append(out, constMetric(recSeen, prometheus.GaugeValue, seen, queue, l))
		out = append(out, constMetric(recSkipped, prometheus.CounterValue, float64(r.Skipped), queue, l))
		if !r.Paused.IsZero() {
			out = append(out, constMetric(recPaused, prometheus.GaugeValue, float64(r.Paused.UnixMilli())/1e3, queue, l))
		}
		if r.SpecErr != nil {
			// No next run to alert on: say why, where the alerts look.
			out = append(out, constMetric(recScrapeErr, prometheus.GaugeValue, 1, queue, errorLabel(fmt.Errorf(
				"registration %q: schedule %q cannot be computed by this exporter (written by a later version?): %v", l, r.Spec, r.SpecErr))))
		}
	}
	return out
}
