package redisq

import (
	"strconv"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// StatsCounters are a queue's event counters since it was created (or last
// destroyed), kept in Redis by the scripts, so every process contributes to
// the same figures. Each is zero until its event first happens. With no call
// in progress, Enqueued == Acked + Cancelled + Deleted + Skipped +
// Scheduled + InFlight + Dead (Stats' state counts).
type StatsCounters struct {
	Enqueued     int64 `json:"enqueued"`      // new items (Enqueue, EnqueueAfter, Schedule creating one)
	Delivered    int64 `json:"delivered"`     // leases granted by Take/TakeBatch (redeliveries included)
	Acked        int64 `json:"acked"`         // items acked (gone)
	Nacked       int64 `json:"nacked"`        // leases given back by Nack (retried, dead-lettered or dropped)
	Expired      int64 `json:"expired"`       // leases that timed out and were retried
	DeadLettered int64 `json:"dead_lettered"` // items moved to the dead set (max attempts or DeadLetter)
	Cancelled    int64 `json:"cancelled"`     // items removed by Cancel, or dropped after Cancel marked them in flight
	Rescheduled  int64 `json:"rescheduled"`   // Reschedule calls that moved an item, Schedule replacing one
	Requeued     int64 `json:"requeued"`      // dead items revived by RequeueDead/RequeueAllDead
	Deleted      int64 `json:"deleted"`       // items removed by DeleteDead, DeleteAllDead and Purge
	Skipped      int64 `json:"skipped"`       // recurring occurrences deleted unstarted by their Overlap or CatchUpWindow
	Snoozed      int64 `json:"snoozed"`       // leases given back by Snooze (no attempt counted)
}

// counterFields maps the stats hash's field names to StatsCounters fields.
var counterFields = []struct {
	name string
	get  func(*StatsCounters) *int64
}{
	{"enqueued", func(c *StatsCounters) *int64 { return &c.Enqueued }},
	{"delivered", func(c *StatsCounters) *int64 { return &c.Delivered }},
	{"acked", func(c *StatsCounters) *int64 { return &c.Acked }},
	{"nacked", func(c *StatsCounters) *int64 { return &c.Nacked }},
	{"expired", func(c *StatsCounters) *int64 { return &c.Expired }},
	{"dead", func(c *StatsCounters) *int64 { return &c.DeadLettered }},
	{"cancelled", func(c *StatsCounters) *int64 { return &c.Cancelled }},
	{"rescheduled", func(c *StatsCounters) *int64 { return &c.Rescheduled }},
	{"requeued", func(c *StatsCounters) *int64 { return &c.Requeued }},
	{"deleted", func(c *StatsCounters) *int64 { return &c.Deleted }},
	{"skipped", func(c *StatsCounters) *int64 { return &c.Skipped }},
	{"snoozed", func(c *StatsCounters) *int64 { return &c.Snoozed }},
}

func countersFrom(m map[string]int64) StatsCounters {
	var c StatsCounters
	for _, f := range counterFields {
		*f.get(&c) = m[f.name]
	}
	return c
}

// Lateness is a histogram of how late deliveries were: Redis TIME when the
// claim script leased an item minus the item's due time, both in
// milliseconds. It is kept in Redis (fixed size) by every consumer's claims.
type Lateness struct {
	// Bounds are the inclusive upper bounds of the buckets, ascending.
	Bounds []time.Duration
	// Counts[i] counts deliveries with lateness <= Bounds[i] and above
	// Bounds[i-1]; Counts[len(Bounds)] counts those above the last bound.
	// Not cumulative.
	Counts []int64
	// Sum is the total lateness of all counted deliveries, saturated at
	// the Duration maximum (about 292 years). Redis keeps it in
	// milliseconds, each delivery counting at most about 2,850 years, and
	// saturated at the int64 maximum.
	Sum time.Duration
}

// LatenessBounds returns the bucket bounds of the lateness histogram.
func LatenessBounds() []time.Duration {
	b := make([]time.Duration, len(rdb.LatenessBoundsMS))
	for i, v := range rdb.LatenessBoundsMS {
		b[i] = time.Duration(v) * time.Millisecond
	}
	return b
}

// latenessFrom reads the lateness hash (bucket bound or "inf" -> count,
// and "sum").
func latenessFrom(h map[string]int64) Lateness {
	l := Lateness{Bounds: LatenessBounds(), Counts: make([]int64, len(rdb.LatenessBoundsMS)+1)}
	for i, v := range rdb.LatenessBoundsMS {
		l.Counts[i] = h[strconv.FormatInt(v, 10)]
	}
	l.Counts[len(rdb.LatenessBoundsMS)] = h["inf"]
	l.Sum = msDuration(h["sum"])
	return l
}

// Count returns the number of deliveries in the histogram.
func (l Lateness) Count() int64 {
	var n int64
	for _, c := range l.Counts {
		n += c
	}
	return n
}

// Quantile returns an upper bound for the q-quantile (0 <= q <= 1) of
// lateness: the bound of the bucket that holds it. It returns 0 for an empty
// histogram, and -1 when the quantile lies in the last, unbounded bucket.
func (l Lateness) Quantile(q float64) time.Duration {
	n := l.Count()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen int64
	for i, c := range l.Counts {
		seen += c
		if seen >= rank {
			if i < len(l.Bounds) {
				return l.Bounds[i]
			}
			break
		}
	}
	return -1
}

// Since returns the histogram of the deliveries that l counts and earlier,
// a reading of the same queue's Lateness taken before, does not: both are
// cumulative since the queue was created, so this is what came between
// the two readings (dqctl watch and the dashboard show it). When a count
// went down (the queue was destroyed and made anew meanwhile) it is empty.
func (l Lateness) Since(earlier Lateness) Lateness {
	d := Lateness{Bounds: l.Bounds, Counts: make([]int64, len(l.Counts)), Sum: l.Sum - earlier.Sum}
	for i := range l.Counts {
		d.Counts[i] = l.Counts[i]
		if i < len(earlier.Counts) {
			d.Counts[i] -= earlier.Counts[i]
		}
		if d.Counts[i] < 0 {
			return Lateness{Bounds: l.Bounds, Counts: make([]int64, len(l.Counts))}
		}
	}
	return d
}
