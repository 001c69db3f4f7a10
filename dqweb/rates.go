package dqweb

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// Rates, recent lateness and the history of the last minutes come from
// the Stats readings the pages make, kept in memory: the counters and the
// lateness histogram in Redis are totals since the queue was created. A
// reading is kept when a page shows the queue (the overview or its own
// page), at most every sampleEvery for rates and every historyEvery for
// the history, so the first page shown for a queue has no rates, and the
// history covers only the minutes someone had a page open (pages reload
// themselves every Options.Refresh). Prometheus (dqprom) is the
// long-term store.
//
// Memory is bounded: per queue at most rateWindow/sampleEvery readings
// with their lateness histogram and historySpan/historyEvery points of
// 7 numbers, for at most maxTracked queues (about 15 KiB a queue); a
// reading of one more queue forgets all the others.

const (
	rateWindow   = time.Minute      // rates cover up to this much of the past
	sampleEvery  = 2 * time.Second  // readings kept at most this often
	minRateSpan  = time.Second      // shortest span a rate is computed over
	historySpan  = 10 * time.Minute // the history covers this much
	historyEvery = 10 * time.Second // history points kept at most this often
	maxTracked   = 1000             // queues with readings; beyond, all are forgotten
)

type sample struct {
	at       time.Time
	counters redisq.StatsCounters
	inFlight int64
	late     redisq.Lateness // the lateness histogram's counts and sum
}

// point is one reading in the history.
type point struct {
	at                          time.Time
	enqueued, delivered, acked  int64 // counters
	scheduled, due, inFlight, d int64 // sizes (d: dead)
}

// track is what is kept of one queue.
type track struct {
	recent  []sample // oldest first, within rateWindow
	history []point  // oldest first, within historySpan
}

// rates keeps recent Stats readings per queue. Safe for concurrent use.
type rates struct {
	mu sync.Mutex
	m  map[string]*track // guarded by mu
}

func newRates() *rates { return &rates{m: map[string]*track{}} }

// rateView is what a page shows of a queue's recent activity.
type rateView struct {
	Known bool          // false until two readings span minRateSpan
	Span  time.Duration // what the rates cover
	// Per second over Span.
	Enqueued, Delivered, Acked, Nacked, Expired, DeadLettered   float64
	Cancelled, Rescheduled, Requeued, Deleted, Skipped, Snoozed float64
	// Failed is the leases that ended otherwise than by an ack or a
	// Snooze (nacked, dead-lettered, expired), per second: the
	// deliveries less the acks, the snoozes and the growth of the
	// in-flight set. A snooze is no failure (redisq.Snooze).
	Failed float64
	// ErrorRate is Failed / (Acked + Failed), when that is not 0/0
	// (ErrKnown).
	ErrorRate float64
	ErrKnown  bool
	// Lateness is of the deliveries over Span when there were any, else
	// since the queue was created (Recent false).
	Lateness redisq.Lateness
	Recent   bool
	// History is the readings of the last historySpan, oldest first.
	History []point
}

// observe records st (a reading of queue name) and returns the rates
// since the oldest reading within rateWindow, and the history.
func (r *rates) observe(name string, st redisq.Stats) rateView {
	v := rateView{Lateness: st.Lateness}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[name]
	if !ok {
		if len(r.m) >= maxTracked {
			clear(r.m)
		}
		t = &track{}
		r.m[name] = t
	}
	// Forget readings out of the window, from the future (another Redis
	// clock), or from before a Destroy (counters went down).
	reset := func(c redisq.StatsCounters) bool { return c.Enqueued > st.Enqueued || c.Delivered > st.Delivered }
	t.recent = slices.DeleteFunc(t.recent, func(p sample) bool {
		age := st.Now.Sub(p.at)
		return age > rateWindow || age < 0 || reset(p.counters)
	})
	t.history = slices.DeleteFunc(t.history, func(p point) bool {
		age := st.Now.Sub(p.at)
		return age > historySpan || age < 0 || p.enqueued > st.Enqueued || p.delivered > st.Delivered
	})
	if len(t.recent) > 0 {
		base := t.recent[0]
		if span := st.Now.Sub(base.at); span >= minRateSpan {
			v.Known, v.Span = true, span
			per := func(now, then int64) float64 { return float64(now-then) / span.Seconds() }
			c, b := st.StatsCounters, base.counters
			v.Enqueued, v.Delivered, v.Acked = per(c.Enqueued, b.Enqueued), per(c.Delivered, b.Delivered), per(c.Acked, b.Acked)
			v.Nacked, v.Expired, v.DeadLettered = per(c.Nacked, b.Nacked), per(c.Expired, b.Expired), per(c.DeadLettered, b.DeadLettered)
			v.Cancelled, v.Rescheduled = per(c.Cancelled, b.Cancelled), per(c.Rescheduled, b.Rescheduled)
			v.Requeued, v.Deleted = per(c.Requeued, b.Requeued), per(c.Deleted, b.Deleted)
			v.Skipped, v.Snoozed = per(c.Skipped, b.Skipped), per(c.Snoozed, b.Snoozed)
			failed := max(0, (c.Delivered-b.Delivered)-(c.Acked-b.Acked)-(c.Snoozed-b.Snoozed)-(st.InFlight-base.inFlight))
			v.Failed = float64(failed) / span.Seconds()
			if settled := c.Acked - b.Acked + failed; settled > 0 {
				v.ErrorRate, v.ErrKnown = float64(failed)/float64(settled), true
			}
			if d := st.Lateness.Since(base.late); d.Count() > 0 {
				v.Lateness, v.Recent = d, true
			}
		}
	}
	if len(t.recent) == 0 || st.Now.Sub(t.recent[len(t.recent)-1].at) >= sampleEvery {
		t.recent = append(t.recent, sample{st.Now, st.StatsCounters, st.InFlight, redisq.Lateness{Counts: slices.Clone(st.Lateness.Counts), Sum: st.Lateness.Sum}})
	}
	if len(t.history) == 0 || st.Now.Sub(t.history[len(t.history)-1].at) >= historyEvery {
		t.history = append(t.history, point{st.Now, st.Enqueued, st.Delivered, st.Acked, st.Scheduled, st.DueBacklog, st.InFlight, st.Dead})
	}
	// The current reading ends the history shown, kept or not.
	v.History = slices.Clone(t.history)
	if last := v.History[len(v.History)-1]; !last.at.Equal(st.Now) {
		v.History = append(v.History, point{st.Now, st.Enqueued, st.Delivered, st.Acked, st.Scheduled, st.DueBacklog, st.InFlight, st.Dead})
	}
	return v
}

// queueList caches the names redisq.ListQueues finds, merged with the
// partitioned queues redisq.ListPartitioned finds (see listing). Safe for
// concurrent use; concurrent requests share one listing.
type queueList struct {
	ttl time.Duration

	mu      sync.Mutex
	list    *listing      // guarded by mu
	at      time.Time     // guarded by mu: when list was read
	pending chan struct{} // guarded by mu: closed when the listing under way ends
}

func (l *queueList) get(ctx context.Context, c redis.UniversalClient) (*listing, error) {
	for {
		l.mu.Lock()
		if l.list != nil && time.Since(l.at) < l.ttl {
			list := l.list
			l.mu.Unlock()
			return list, nil
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
		list, err := readListing(ctx, c)
		l.mu.Lock()
		if err == nil {
			l.list, l.at = list, time.Now()
		}
		l.pending = nil
		l.mu.Unlock()
		close(done)
		return list, err
	}
}
