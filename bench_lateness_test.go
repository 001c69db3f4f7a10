package delayqueue_test

// The cost of recording one lateness, alone: what every Take, Poll,
// TakeBatch and DrainExpired item pays for Stats.Lateness, next to the
// ~100 ns of an Offer+Poll (BenchmarkQueue/op=offerpoll).
//
//	go test -run '^$' -bench 'BenchmarkLatenessRecord' -count 6 .

import (
	"math"
	"testing"

	"github.com/dq-go/delayqueue"
)

func BenchmarkLatenessRecord(b *testing.B) {
	// Log-uniform values from 100 ns to 10 s, so every bucket range and
	// branch is exercised; a power-of-two table indexed by a counter.
	var vals [1024]uint64
	r := benchRand{s: 5}
	for i := range vals {
		vals[i] = uint64(math.Exp2(6.6 + float64(r.next()>>11)/(1<<53)*26.6))
	}
	var rec delayqueue.LatenessRecorder
	i := 0
	for b.Loop() {
		rec.Record(vals[i&(len(vals)-1)])
		i++
	}
	if h := rec.Histogram(); h.Count != uint64(i) {
		b.Fatal("count", h.Count, i)
	}
}
