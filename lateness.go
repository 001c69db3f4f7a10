package delayqueue

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"time"
)

// Lateness is how long after its deadline an item was handed out: the clock
// reading with which the queue found the item due, minus its deadline. The
// queue records it for every item that Take, TakeBatch, Poll and
// DrainExpired hand out (and their Keyed equivalents), from the reading it
// takes anyway for the due check, so recording costs no clock read and no
// allocation.
//
// Take, TakeBatch and DrainExpired read the clock at the start of every
// call (and again as they need to, to find a later head due), so their
// items' lateness is measured from the call that hands them out, however
// long the caller worked between calls. Poll, the non-blocking hot path,
// reads the clock only when the head's deadline is past the queue's latest
// reading, and otherwise reuses that reading: a Poll after an idle spell,
// or a Poll loop through a backlog, is measured against the reading some
// earlier call took, and reads low by up to the time since. Use Take or
// TakeBatch where lateness figures matter. An item with the zero deadline
// counts as due since year 1, in the overflow bucket.

// Histogram buckets: [0, 2^latMinExp ns), then each power-of-two range
// [2^e, 2^(e+1)) for latMinExp <= e < latMaxExp split into latSub equal
// buckets, then an overflow bucket [2^latMaxExp ns, ∞). Reporting a
// bucket's midpoint is off by at most half a bucket's width, 1/(2*latSub)
// = 6.25% of the value, from 512 ns up to 2^42 ns (73 minutes).
const (
	latSubBits = 3
	latSub     = 1 << latSubBits
	latMinExp  = 9  // 512 ns
	latMaxExp  = 42 // about 73 minutes
	// LatenessBuckets is the number of buckets of a Histogram.
	LatenessBuckets = 1 + (latMaxExp-latMinExp)*latSub + 1
)

// latenessBucket returns the index of the bucket holding d nanoseconds.
// It has no branches (min and max compile to conditional moves), so
// recording costs the same whatever the values: clamping d to
// [2^(latMinExp-1), 2^latMaxExp] maps everything below 2^latMinExp to an
// index <= 0, then 0, and everything from 2^latMaxExp to the last bucket.
func latenessBucket(d uint64) int {
	d = min(max(d, 1<<(latMinExp-1)), 1<<latMaxExp)
	e := bits.Len64(d) - 1
	return max(0, 1+(e-latMinExp)*latSub+int(d>>(e-latSubBits)&(latSub-1)))
}

// latenessBounds returns the bucket i's range [lo, hi); hi is
// math.MaxInt64 for the overflow bucket.
func latenessBounds(i int) (lo, hi time.Duration) {
	switch {
	case i <= 0:
		return 0, 1 << latMinExp
	case i >= LatenessBuckets-1:
		return 1 << latMaxExp, math.MaxInt64
	}
	e, s := latMinExp+(i-1)/latSub, (i-1)%latSub
	w := time.Duration(1) << (e - latSubBits)
	return time.Duration(latSub+s) * w, time.Duration(latSub+s+1) * w
}

// lateness is the Queue's recorder behind Stats.Lateness. It is guarded by
// Queue.mu.
type lateness struct {
	max    uint64 // first: on a cache line with the Queue's other counters
	counts [LatenessBuckets]uint64
}

// record adds one lateness of d nanoseconds.
func (l *lateness) record(d uint64) {
	// min: no bounds check (latenessBucket is in range anyway); the branch
	// on max is almost never taken, where a branchless max stores each time.
	l.counts[min(latenessBucket(d), LatenessBuckets-1)]++
	if d > l.max {
		l.max = d
	}
}

// histogram returns a copy as a Histogram.
func (l *lateness) histogram() Histogram {
	h := Histogram{counts: l.counts, Max: time.Duration(min(l.max, math.MaxInt64))}
	for _, c := range l.counts {
		h.Count += c
	}
	return h
}

// takeHeadLocked removes the head, which the caller just found due with
// headDueLocked, and records its lateness against the reading that found it
// due. The difference is taken as unsigned: q.lastNow >= at, and the true
// difference fits in a uint64 even where int64 would overflow (the zero
// deadline).
func (q *Queue[T]) takeHeadLocked() T {
	q.lateness.record(uint64(q.lastNow) - uint64(q.heap.head().at))
	return q.heap.pop()
}

// Histogram is a distribution of lateness (see Stats.Lateness) in
// log-linear buckets: one bucket below 512 ns, then each power-of-two range
// of nanoseconds up to 2^42 ns (about 73 minutes) split into 8 equal
// buckets, then one overflow bucket. Quantile is therefore within 6.25% of
// the true value from 512 ns to 73 minutes. The zero Histogram is empty.
type Histogram struct {
	Count  uint64        // values recorded
	Max    time.Duration // the largest value recorded; 0 if none
	counts [LatenessBuckets]uint64
}

// Bucket is one bucket of a Histogram: Count values in [Lo, Hi). The last
// bucket's Hi is math.MaxInt64.
type Bucket struct {
	Lo, Hi time.Duration
	Count  uint64
}

// Buckets returns an iterator over the non-empty buckets in increasing
// order, for exporters: a Prometheus histogram, say, takes the running sum
// of Count as the cumulative count for "le" = Hi.
func (h *Histogram) Buckets() iter.Seq[Bucket] {
	return func(yield func(Bucket) bool) {
		for i, c := range h.counts {
			if c == 0 {
				continue
			}
			lo, hi := latenessBounds(i)
			if !yield(Bucket{Lo: lo, Hi: hi, Count: c}) {
				return
			}
		}
	}
}

// Quantile returns the q-quantile (0 <= q <= 1) of the recorded values:
// the midpoint of the bucket that holds the value of rank ceil(q*Count),
// capped at Max, so within 6.25% of the true value between 512 ns and 73
// minutes; in the overflow bucket it returns Max. It returns 0 if the
// histogram is empty and panics if q is outside [0, 1].
func (h *Histogram) Quantile(q float64) time.Duration {
	if !(q >= 0 && q <= 1) {
		panic("delayqueue: Histogram.Quantile outside [0, 1]")
	}
	if h.Count == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(h.Count))), 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		if i == LatenessBuckets-1 {
			return h.Max
		}
		lo, hi := latenessBounds(i)
		return min(lo+(hi-lo)/2, h.Max)
	}
	return h.Max
}

// String summarises the histogram: count, median, 99th percentile and max.
func (h Histogram) String() string {
	return fmt.Sprintf("{Count:%d p50:%v p99:%v Max:%v}", h.Count, h.Quantile(0.5), h.Quantile(0.99), h.Max)
}
