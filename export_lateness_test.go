package delayqueue

// This file exports test-only hooks into the lateness histogram.

// LatenessBucket returns the index of the lateness bucket holding d ns.
func LatenessBucket(d uint64) int { return latenessBucket(d) }

// LatenessBounds returns the range [lo, hi) of lateness bucket i.
var LatenessBounds = latenessBounds

// LatenessRecorder is the Queue's lateness recorder, for benchmarks.
type LatenessRecorder struct{ l lateness }

// Record records one lateness of d ns, as a take does under the mutex.
func (r *LatenessRecorder) Record(d uint64) { r.l.record(d) }

// Histogram returns what Stats would report.
func (r *LatenessRecorder) Histogram() Histogram { return r.l.histogram() }
