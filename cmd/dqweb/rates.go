package dqweb

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// Rates and recent lateness come from the difference between the Stats a
// page reads and an earlier reading of the same queue kept in memory: the
// counters and the lateness histogram in Redis are totals since the queue
// was created. The first page shown for a queue has no rates; pages that
// auto-refresh get them from the second view on.

const (
	rateWindow  = time.Minute     // rates cover up to this much of the past
	sampleEvery = 2 * time.Second // readings kept at most this often
	minRateSpan = time.Second     // shortest span a rate is computed over
	maxTracked  = 1000            // queues with readings; beyond, all are forgotten
)

type sample struct {
	at       time.Time
	counters redisq.StatsCounters
	late     redisq.Lateness
}

// rates keeps recent Stats readings per queue. Safe for concurrent use.
type rates struct {
	mu sync.Mutex
	m  map[string][]sample // guarded by mu; oldest first, within rateWindow
}

func newRates() *rates { return &rates{m: map[string][]sample{}} }

// rateView is what a page shows of a queue's recent activity.
type rateView struct {
	Known               bool          // false until two readings span minRateSpan
	Span                time.Duration // what the rates cover
	Enqueued, Delivered float64       // per second over Span
	// Lateness is of the deliveries over Span when there were any, else
	// since the queue was created (Recent false).
	Lateness redisq.Lateness
	Recent   bool
}

// observe records st (a reading of queue name) and returns the rates
// since the oldest reading within rateWindow.
func (r *rates) observe(name string, st redisq.Stats) rateView {
	v := rateView{Lateness: st.Lateness}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.m[name]
	if !ok && len(r.m) >= maxTracked {
		clear(r.m)
	}
	// Forget readings out of the window, from the future (another Redis
	// clock), or from before a Destroy (counters went down).
	s = slices.DeleteFunc(s, func(p sample) bool {
		age := st.Now.Sub(p.at)
		return age > rateWindow || age < 0 || p.counters.Enqueued > st.Enqueued || p.counters.Delivered > st.Delivered
	})
	if len(s) > 0 {
		base := s[0]
		if span := st.Now.Sub(base.at); span >= minRateSpan {
			v.Known, v.Span = true, span
			v.Enqueued = float64(st.Enqueued-base.counters.Enqueued) / span.Seconds()
			v.Delivered = float64(st.Delivered-base.counters.Delivered) / span.Seconds()
			if d := diff(st.Lateness, base.late); d.Count() > 0 {
				v.Lateness, v.Recent = d, true
			}
		}
	}
	if len(s) == 0 || st.Now.Sub(s[len(s)-1].at) >= sampleEvery {
		s = append(s, sample{st.Now, st.StatsCounters, st.Lateness})
	}
	r.m[name] = s
	return v
}

// diff is the histogram of the deliveries counted in a and not in b.
func diff(a, b redisq.Lateness) redisq.Lateness {
	d := redisq.Lateness{Bounds: a.Bounds, Counts: make([]int64, len(a.Counts)), Sum: a.Sum - b.Sum}
	for i := range a.Counts {
		d.Counts[i] = a.Counts[i]
		if i < len(b.Counts) {
			d.Counts[i] -= b.Counts[i]
		}
		if d.Counts[i] < 0 {
			return redisq.Lateness{Bounds: a.Bounds, Counts: make([]int64, len(a.Counts))}
		}
	}
	return d
}

// queueList caches the names redisq.ListQueues finds. Safe for
// concurrent use; concurrent requests share one SCAN.
type queueList struct {
	ttl time.Duration

	mu      sync.Mutex
	names   []string      // guarded by mu
	at      time.Time     // guarded by mu: when names were listed
	pending chan struct{} // guarded by mu: closed when the SCAN under way ends
}

func (l *queueList) get(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	for {
		l.mu.Lock()
		if l.names != nil && time.Since(l.at) < l.ttl {
			names := l.names
			l.mu.Unlock()
			return names, nil
		}
		if wait := l.pending; wait != nil {
			l.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		l.pending = done
		l.mu.Unlock()
		names, err := redisq.ListQueues(ctx, c)
		l.mu.Lock()
		if err == nil {
			l.names, l.at = names, time.Now()
		}
		l.pending = nil
		l.mu.Unlock()
		close(done)
		return names, err
	}
}
