package redisq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Since is what came between two readings of the cumulative histogram;
// after the queue was made anew (a count went down), nothing.
func TestLatenessSince(t *testing.T) {
	b := LatenessBounds()
	earlier := Lateness{Bounds: b, Counts: make([]int64, len(b)+1), Sum: 10 * time.Millisecond}
	later := Lateness{Bounds: b, Counts: make([]int64, len(b)+1), Sum: 25 * time.Millisecond}
	earlier.Counts[1], later.Counts[1], later.Counts[3] = 2, 5, 1
	d := later.Since(earlier)
	require.EqualValues(t, 3, d.Counts[1])
	require.EqualValues(t, 1, d.Counts[3])
	require.EqualValues(t, 4, d.Count())
	require.Equal(t, 15*time.Millisecond, d.Sum)
	require.Zero(t, earlier.Since(later).Count(), "a count that went down: made anew")
	require.Equal(t, later, later.Since(Lateness{}), "since nothing: all of it")
}
