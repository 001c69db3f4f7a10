package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

func cmdStats(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	st, err := q.Stats(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		return writeJSON(e.stdout, statsJSON(q.Name(), st))
	}
	printStats(e.stdout, q.Name(), e.conn.where(), st, nil)
	return nil
}

// statsJSON is Stats for -json: fixed keys, durations in seconds.
func statsJSON(name string, st redisq.Stats) any {
	type bucket struct {
		LE    any   `json:"le_seconds"` // a number, or "+Inf"
		Count int64 `json:"count"`
	}
	var buckets []bucket
	for i, c := range st.Lateness.Counts {
		var le any = "+Inf"
		if i < len(st.Lateness.Bounds) {
			le = st.Lateness.Bounds[i].Seconds()
		}
		buckets = append(buckets, bucket{le, c})
	}
	return struct {
		Queue                string               `json:"queue"`
		Now                  time.Time            `json:"now"`
		Scheduled            int64                `json:"scheduled"`
		Due                  int64                `json:"due"`
		OldestOverdueSeconds float64              `json:"oldest_overdue_seconds"`
		InFlight             int64                `json:"inflight"`
		Dead                 int64                `json:"dead"`
		Counters             redisq.StatsCounters `json:"counters"`
		Lateness             any                  `json:"lateness"`
	}{name, st.Now, st.Scheduled, st.DueBacklog, st.OldestOverdue.Seconds(), st.InFlight, st.Dead, st.StatsCounters,
		struct {
			Count   int64    `json:"count"`
			Sum     float64  `json:"sum_seconds"`
			Buckets []bucket `json:"buckets"`
		}{st.Lateness.Count(), st.Lateness.Sum.Seconds(), buckets}}
}

// printStats prints a queue's stats; with prev (the previous refresh of
// watch) it adds rates.
func printStats(w io.Writer, name, where string, st redisq.Stats, prev *redisq.Stats) {
	fmt.Fprintf(w, "queue %s on %s at %s (Redis TIME)\n", quote(name), where, stamp(st.Now))
	fmt.Fprintf(w, "  scheduled %d (due now %d, oldest overdue %v), in flight %d, dead %d\n",
		st.Scheduled, st.DueBacklog, roundDur(st.OldestOverdue), st.InFlight, st.Dead)
	c := st.StatsCounters
	counters := []struct {
		name string
		v    int64
		p    func(*redisq.StatsCounters) int64
	}{
		{"enqueued", c.Enqueued, func(c *redisq.StatsCounters) int64 { return c.Enqueued }},
		{"delivered", c.Delivered, func(c *redisq.StatsCounters) int64 { return c.Delivered }},
		{"acked", c.Acked, func(c *redisq.StatsCounters) int64 { return c.Acked }},
		{"nacked", c.Nacked, func(c *redisq.StatsCounters) int64 { return c.Nacked }},
		{"expired", c.Expired, func(c *redisq.StatsCounters) int64 { return c.Expired }},
		{"dead-lettered", c.DeadLettered, func(c *redisq.StatsCounters) int64 { return c.DeadLettered }},
		{"cancelled", c.Cancelled, func(c *redisq.StatsCounters) int64 { return c.Cancelled }},
		{"rescheduled", c.Rescheduled, func(c *redisq.StatsCounters) int64 { return c.Rescheduled }},
		{"requeued", c.Requeued, func(c *redisq.StatsCounters) int64 { return c.Requeued }},
		{"deleted", c.Deleted, func(c *redisq.StatsCounters) int64 { return c.Deleted }},
	}
	var parts []string
	for _, k := range counters {
		s := fmt.Sprintf("%s %d", k.name, k.v)
		if prev != nil {
			if dt := st.Now.Sub(prev.Now).Seconds(); dt > 0 {
				s += fmt.Sprintf(" (%.1f/s)", float64(k.v-k.p(&prev.StatsCounters))/dt)
			}
		}
		parts = append(parts, s)
	}
	fmt.Fprintf(w, "  counters: %s\n", strings.Join(parts[:5], ", "))
	fmt.Fprintf(w, "            %s\n", strings.Join(parts[5:], ", "))
	l := st.Lateness
	if n := l.Count(); n == 0 {
		fmt.Fprintf(w, "  lateness: no deliveries yet\n")
	} else {
		fmt.Fprintf(w, "  lateness of %d deliveries (claim - due, Redis TIME): mean %v, p50 %s, p90 %s, p99 %s, max %s\n",
			n, roundDur(l.Sum/time.Duration(n)), upTo(l, 0.5), upTo(l, 0.9), upTo(l, 0.99), upTo(l, 1))
	}
}

// upTo is a quantile as the bucket bound that holds it.
func upTo(l redisq.Lateness, q float64) string {
	d := l.Quantile(q)
	if d < 0 {
		return "> " + l.Bounds[len(l.Bounds)-1].String()
	}
	return "<= " + d.String()
}
