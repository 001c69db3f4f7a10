package dqprom

import (
	"context"
	"fmt"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/prometheus/client_golang/prometheus"
)

// A queue's limits (redisq Queue.SetRateLimit, SetConcurrencyLimit) are
// reported as a series per limit key for its busiest keys, at most
// LimitSeries of each kind (redisq TopRateLimits, TopConcurrencyLimits:
// the keys with the most waiting items first, then the idle ones by
// key), and series per queue for the rest: how many keys are set, how
// many have no series of their own and the items those hold, and how
// many the scrape did not read (past WithLimitScan).

// LimitSeries is how many limit keys of each kind a scrape reports a
// series of, per queue: the busiest.
const LimitSeries = 100

// DefaultLimitScan is how many limit keys of each kind, per queue, a
// scrape reads the waiting items of (WithLimitScan): 20 pages of 500
// keys, each an HSCAN and one script, then 2 scripts for the state of the
// 100 busiest; each under 1 ms of Redis time on an idle machine.
const DefaultLimitScan = 10000

// WithLimitScan sets how many limit keys of each kind, per queue, a scrape
// counts the waiting items of to find the busiest (default
// DefaultLimitScan; 0: every key, whatever it costs). The keys past it
// are not read at that scrape: redisq_rate_limit_unread_keys and
// redisq_concurrency_limit_unread_keys count them, and a key among them
// has no series even with items waiting. A scrape of a queue costs at
// most 2*(ceil(n/500)+1)+2 round trips per kind of limit (see Limits in
// the package doc). It panics if n < 0.
func WithLimitScan(n int) RedisOption {
	if n < 0 {
		panic(fmt.Sprintf("dqprom: WithLimitScan(%d): the number of keys must not be negative", n))
	}
	return func(c *redisConfig) { c.limitScan = n }
}

var (
	// Rate limits, one series per limit key of the busiest.
	redisRateLimit = queueDesc("redisq_rate_limit_claims",
		"The limit key's rate limit: at most this many claims in any redisq_rate_limit_period_seconds.", "key")
	redisRatePeriod = queueDesc("redisq_rate_limit_period_seconds",
		"The period of the limit key's rate limit.", "key")
	redisRateUsed = queueDesc("redisq_rate_limit_used_claims",
		"Claims of the limit key's items in the period that ends now (the limit is reached at redisq_rate_limit_claims).", "key")
	redisRateWaiting = queueDesc("redisq_rate_limit_waiting_items",
		"Items of the limit key that came due over its limit and wait in the queue for a slot.", "key")
	// and for the queue.
	redisRateKeys = queueDesc("redisq_rate_limit_keys",
		"Limit keys of the queue with a rate limit.")
	redisRateOmitted = queueDesc("redisq_rate_limit_omitted_keys",
		"Rate-limited keys with no series of their own (past the 100 with the most waiting items, or unread).")
	redisRateOmittedWaiting = queueDesc("redisq_rate_limit_omitted_waiting_items",
		"Items waiting for a slot under the rate-limited keys that have no series (of those the scrape read).")
	redisRateUnread = queueDesc("redisq_rate_limit_unread_keys",
		"Rate-limited keys whose waiting items the scrape did not count (past WithLimitScan): none of them has a series.")
	// The queue's own rate limit (redisq Queue.SetQueueRateLimit): one
	// series each, while it is set.
	redisQueueRateLimit = queueDesc("redisq_queue_rate_limit_claims",
		"The queue's own rate limit (redisq Queue.SetQueueRateLimit): at most this many claims of its items, whatever their limit keys, in any redisq_queue_rate_limit_period_seconds.")
	redisQueueRatePeriod = queueDesc("redisq_queue_rate_limit_period_seconds",
		"The period of the queue's own rate limit.")
	redisQueueRateUsed = queueDesc("redisq_queue_rate_limit_used_claims",
		"Claims of the queue's items in the period that ends now: at redisq_queue_rate_limit_claims no item is claimed, and the due ones wait in redisq_due_items, in order.")
	// Concurrency limits, one series per limit key of the busiest.
	redisConcLimit = queueDesc("redisq_concurrency_limit_items",
		"The limit key's concurrency limit: at most this many of its items leased at once.", "key")
	redisConcLeased = queueDesc("redisq_concurrency_leased_items",
		"Items of the limit key leased now, each holding a place of its concurrency limit.", "key")
	redisConcWaiting = queueDesc("redisq_concurrency_waiting_items",
		"Items of the limit key that came due with every place taken and wait in the queue for one.", "key")
	// and for the queue.
	redisConcKeys = queueDesc("redisq_concurrency_limit_keys",
		"Limit keys of the queue with a concurrency limit.")
	redisConcOmitted = queueDesc("redisq_concurrency_limit_omitted_keys",
		"Concurrency-limited keys with no series of their own (past the 100 with the most waiting items, or unread).")
	redisConcOmittedWaiting = queueDesc("redisq_concurrency_limit_omitted_waiting_items",
		"Items waiting for a place under the concurrency-limited keys that have no series (of those the scrape read).")
	redisConcUnread = queueDesc("redisq_concurrency_limit_unread_keys",
		"Concurrency-limited keys whose waiting items the scrape did not count (past WithLimitScan): none of them has a series.")
)

func limitDescs() []*prometheus.Desc {
	return []*prometheus.Desc{redisQueueRateLimit, redisQueueRatePeriod, redisQueueRateUsed,
		redisRateLimit, redisRatePeriod, redisRateUsed, redisRateWaiting,
		redisRateKeys, redisRateOmitted, redisRateOmittedWaiting, redisRateUnread,
		redisConcLimit, redisConcLeased, redisConcWaiting, redisConcKeys, redisConcOmitted, redisConcOmittedWaiting, redisConcUnread}
}

// limitsRead is what a scrape read of a queue's limits: the queue's own
// rate limit when Stats says it is set, and the busiest keys of each kind
// and the totals of the kind, for the kinds Stats counts.
type limitsRead struct {
	queue            redisq.LimitState // Limit.N 0: none (or removed since the Stats)
	rate             []redisq.LimitState
	conc             []redisq.ConcurrencyState
	rateTot, concTot redisq.LimitTotals
	hasRate, hasConc bool
}

// readLimits reads the queue's own rate limit, when st says it is set,
// and the busiest limit keys of q, of the kinds st counts (a queue
// without limits costs nothing more), among the first scan.
func readLimits(ctx context.Context, q *redisq.Queue, st redisq.Stats, scan int) (limitsRead, error) {
	var l limitsRead
	var err error
	if st.QueueRateLimit.N > 0 {
		if l.queue, err = q.QueueRateLimit(ctx); err != nil {
			return l, err
		}
	}
	if st.RateLimits > 0 {
		l.hasRate = true
		if l.rate, l.rateTot, err = q.TopRateLimits(ctx, LimitSeries, scan); err != nil {
			return l, err
		}
	}
	if st.ConcurrencyLimits > 0 {
		l.hasConc = true
		l.conc, l.concTot, err = q.TopConcurrencyLimits(ctx, LimitSeries, scan)
	}
	return l, err
}

// limitMetrics appends the limit series of the queue labelled name.
func limitMetrics(out []prometheus.Metric, name string, l limitsRead) []prometheus.Metric {
	g := func(d *prometheus.Desc, v int, labels ...string) prometheus.Metric {
		return constMetric(d, prometheus.GaugeValue, float64(v), append([]string{name}, labels...)...)
	}
	if s := l.queue; s.Limit.N > 0 {
		out = append(out, g(redisQueueRateLimit, s.Limit.N),
			constMetric(redisQueueRatePeriod, prometheus.GaugeValue, s.Limit.Per.Seconds(), name), g(redisQueueRateUsed, s.Used))
	}
	if l.hasRate {
		for _, s := range l.rate {
			key := QueueLabel(s.Key)
			out = append(out, g(redisRateLimit, s.Limit.N, key),
				constMetric(redisRatePeriod, prometheus.GaugeValue, s.Limit.Per.Seconds(), name, key),
				g(redisRateUsed, s.Used, key), g(redisRateWaiting, s.Waiting, key))
		}
		t := l.rateTot
		out = append(out, g(redisRateKeys, t.Keys), g(redisRateOmitted, t.Keys-len(l.rate)), g(redisRateOmittedWaiting, t.OmittedWaiting),
			g(redisRateUnread, t.Keys-t.Read))
	}
	if l.hasConc {
		for _, s := range l.conc {
			key := QueueLabel(s.Key)
			out = append(out, g(redisConcLimit, s.Limit, key), g(redisConcLeased, s.Leased, key), g(redisConcWaiting, s.Waiting, key))
		}
		t := l.concTot
		out = append(out, g(redisConcKeys, t.Keys), g(redisConcOmitted, t.Keys-len(l.conc)), g(redisConcOmittedWaiting, t.OmittedWaiting),
			g(redisConcUnread, t.Keys-t.Read))
	}
	return out
}
