package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/bench/internal/report"
)

// delayqueue records every item's lateness itself (Stats.Lateness), from
// the clock reading with which it found the item due; dqbench measures
// each item again in the consumer, after Take or TakeBatch returns. The two
// must agree within the histogram's error (6.25% from 512 ns up) plus the
// hand-off between the queue's reading and the consumer's, which the queue
// does not see: unlocking and returning (statsSlack), and for a batch the
// popping of the whole batch after the reading (statsSlackPerItem each).

const (
	statsSlack        = 20 * time.Microsecond
	statsSlackPerItem = 250 * time.Nanosecond
)

// statsLatenessEngine is an engine whose queue reports lateness itself.
type statsLatenessEngine interface {
	statsLateness() delayqueue.Histogram
}

func (e *dqEngine[T]) statsLateness() delayqueue.Histogram { return e.q.Stats().Lateness }

// percentilesOf reads the percentiles from a queue's histogram.
func percentilesOf(h delayqueue.Histogram) *report.Percentiles {
	if h.Count == 0 {
		return nil
	}
	q := func(p float64) int64 { return int64(h.Quantile(p)) }
	return &report.Percentiles{N: int(h.Count), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999), Max: int64(h.Max), Mean: -1}
}

// statsAgreement compares Stats' percentiles with the measured ones and
// returns the worst disagreement beyond the histogram's error, as a
// fraction of the allowance (<= 1: they agree), and which percentile it is.
func statsAgreement(measured, stats *report.Percentiles, slack time.Duration) (worst float64, at string) {
	for _, c := range []struct {
		name string
		m, s int64
	}{{"p50", measured.P50, stats.P50}, {"p90", measured.P90, stats.P90}, {"p99", measured.P99, stats.P99}} {
		allow := 0.0625*math.Abs(float64(c.m)) + float64(slack)
		if r := math.Abs(float64(c.m-c.s)) / allow; r > worst {
			worst, at = r, c.name
		}
	}
	return worst, at
}

// writeStatsLateness prints, for each row that has them, the queue's own
// figures next to the measured ones and whether they agree.
func writeStatsLateness(w io.Writer, rs []report.Result, batch int) {
	slack := statsSlack + time.Duration(max(batch, 1))*statsSlackPerItem
	for _, r := range rs {
		s, m := r.StatsLateness, r.Lateness
		if s == nil || m == nil {
			continue
		}
		worst, at := statsAgreement(m, s, slack)
		verdict := "agree"
		if worst > 1 {
			verdict = fmt.Sprintf("DISAGREE at %s", at)
		}
		fmt.Fprintf(w, "Stats.Lateness: %s: p50 %s p90 %s p99 %s max %s (%d items; measured p50 %s p90 %s p99 %s): %s within 6.25%% + %v\n",
			r.Name, report.Dur(s.P50), report.Dur(s.P90), report.Dur(s.P99), report.Dur(s.Max), s.N, report.Dur(m.P50), report.Dur(m.P90), report.Dur(m.P99), verdict, slack)
	}
}
