// Package lateness holds what dqctl and the dashboard both do with
// redisq's lateness histograms: the deliveries between two readings.
package lateness

import (
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// Diff is the histogram of the deliveries counted in a and not in the
// earlier counts b (with sum bSum). When a count went down (the queue was
// destroyed and made anew meanwhile), it is empty.
func Diff(a redisq.Lateness, b []int64, bSum time.Duration) redisq.Lateness {
	d := redisq.Lateness{Bounds: a.Bounds, Counts: make([]int64, len(a.Counts)), Sum: a.Sum - bSum}
	for i := range a.Counts {
		d.Counts[i] = a.Counts[i]
		if i < len(b) {
			d.Counts[i] -= b[i]
		}
		if d.Counts[i] < 0 {
			return redisq.Lateness{Bounds: a.Bounds, Counts: make([]int64, len(a.Counts))}
		}
	}
	return d
}
