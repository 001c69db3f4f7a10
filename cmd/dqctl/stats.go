package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

func cmdStats(e *env) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	if t.p != nil {
		return statsPartitioned(e, t.p)
	}
	st, err := t.Stats(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		return writeJSON(e.stdout, statsJSON(t.Name(), st))
	}
	printStats(e.stdout, t.label(), e.conn.where(), st, nil)
	return nil
}

// statsPartitioned prints the stats of a partitioned queue: the sums of
// its partitions' (Partitioned.Stats), then a line per partition.
func statsPartitioned(e *env, p *redisq.Partitioned) error {
	ss, err := p.PartitionStats(e.ctx)
	if err != nil {
		return err
	}
	st := redisq.SumStats(ss)
	if e.json {
		out := statsJSON(p.Name(), st)
		out.Partitions = []statsOut{}
		for i, s := range ss {
			j := statsJSON(p.Partition(i).Name(), s)
			j.Partition = &i
			out.Partitions = append(out.Partitions, j)
		}
		return writeJSON(e.stdout, out)
	}
	t := &target{Admin: p, p: p}
	printStats(e.stdout, t.label(), e.conn.where(), st, nil)
	paused := 0
	for _, s := range ss {
		if s.Paused {
			paused++
		}
	}
	if paused > 0 && !st.Paused {
		fmt.Fprintf(e.stdout, "  PAUSED: %d of %s deliver nothing until resumed (dqctl resume)\n", paused, plural(int64(len(ss)), "partition"))
	}
	rows := [][]string{{"  #", "PARTITION", "SCHEDULED", "DUE", "INFLIGHT", "DEAD", "COMPLETED", "ENQUEUED", "DELIVERED", "ACKED"}}
	if paused > 0 {
		rows[0] = append(rows[0], "PAUSED")
	}
	for i, s := range ss {
		r := []string{fmt.Sprintf("  %d", i), cell(p.Partition(i).Name()), num(s.Scheduled), num(s.DueBacklog), num(s.InFlight),
			num(s.Dead), num(s.Completed), num(s.Enqueued), num(s.Delivered), num(s.Acked)}
		if paused > 0 {
			r = append(r, infoOf("", s).pausedCell())
		}
		rows = append(rows, r)
	}
	return writeTable(e.stdout, rows)
}

// latenessBucket is one bucket of the lateness histogram in stats -json:
// the deliveries late by more than the previous bucket's bound and at
// most this one's (UpperBound nil: the last bucket, above every bound).
// Count is this bucket's own; CumulativeCount adds the buckets before it,
// as a Prometheus "le" bucket does.
type latenessBucket struct {
	UpperBound      *float64 `json:"upper_bound_seconds"`
	Count           int64    `json:"count"`
	CumulativeCount int64    `json:"cumulative_count"`
}

// statsOut is Stats for -json: fixed keys, durations in seconds; a
// partitioned queue's has the sums, and each partition's in Partitions
// (with its number in Partition).
type statsOut struct {
	Queue                string               `json:"queue"`
	Partition            *int                 `json:"partition,omitempty"`
	Now                  time.Time            `json:"now"`
	Paused               bool                 `json:"paused"`
	PausedSince          time.Time            `json:"paused_since,omitzero"`
	Scheduled            int64                `json:"scheduled"`
	Due                  int64                `json:"due"`
	OldestOverdueSeconds float64              `json:"oldest_overdue_seconds"`
	InFlight             int64                `json:"inflight"`
	Dead                 int64                `json:"dead"`
	Completed            int64                `json:"completed"`
	Counters             redisq.StatsCounters `json:"counters"`
	Lateness             latenessJSON         `json:"lateness"`
	Partitions           []statsOut           `json:"partitions,omitempty"`
}

type latenessJSON struct {
	Count   int64            `json:"count"`
	Sum     float64          `json:"sum_seconds"`
	Buckets []latenessBucket `json:"buckets"`
}

// statsJSON is Stats for -json.
func statsJSON(name string, st redisq.Stats) statsOut {
	var buckets []latenessBucket
	var cum int64
	for i, c := range st.Lateness.Counts {
		b := latenessBucket{Count: c}
		if i < len(st.Lateness.Bounds) {
			s := st.Lateness.Bounds[i].Seconds()
			b.UpperBound = &s
		}
		cum += c
		b.CumulativeCount = cum
		buckets = append(buckets, b)
	}
	return statsOut{Queue: name, Now: st.Now, Paused: st.Paused, PausedSince: st.PausedSince, Scheduled: st.Scheduled, Due: st.DueBacklog,
		OldestOverdueSeconds: st.OldestOverdue.Seconds(), InFlight: st.InFlight, Dead: st.Dead, Completed: st.Completed, Counters: st.StatsCounters,
		Lateness: latenessJSON{st.Lateness.Count(), st.Lateness.Sum.Seconds(), buckets}}
}

// statsWidth is the width stats and watch lines are wrapped to: a
// default terminal's.
const statsWidth = 80

// printStats prints the stats of the queue label (`queue "emails"`, see
// target.label) in lines of at most statsWidth columns (unless one figure
// is longer); with prev (the previous refresh of watch) it adds rates,
// and the lateness is of the deliveries since prev.
func printStats(w io.Writer, label, where string, st redisq.Stats, prev *redisq.Stats) {
	head := fmt.Sprintf("%s on %s at %s (Redis TIME)", label, where, stamp(st.Now))
	if utf8.RuneCountInString(head) > statsWidth {
		head = fmt.Sprintf("%s on %s\n  at %s (Redis TIME)", label, where, stamp(st.Now))
	}
	fmt.Fprintln(w, head)
	if st.Paused {
		fmt.Fprintln(w, "  PAUSED: no item is delivered until the queue is resumed (dqctl resume)")
		if !st.PausedSince.IsZero() {
			fmt.Fprintf(w, "  paused since %s (%s)\n", stamp(st.PausedSince), rel(st.PausedSince, st.Now))
		}
	}
	fmt.Fprint(w, wrap("  ", "  ", []string{
		fmt.Sprintf("scheduled %s (due now %s, oldest overdue %v)", num(st.Scheduled), num(st.DueBacklog), roundDur(st.OldestOverdue)),
		"in flight " + num(st.InFlight), "dead " + num(st.Dead), "completed " + num(st.Completed)}, ","))
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
		{"skipped", c.Skipped, func(c *redisq.StatsCounters) int64 { return c.Skipped }},
		{"snoozed", c.Snoozed, func(c *redisq.StatsCounters) int64 { return c.Snoozed }},
	}
	var parts []string
	for _, k := range counters {
		s := k.name + " " + num(k.v)
		if prev != nil {
			if dt := st.Now.Sub(prev.Now).Seconds(); dt > 0 {
				s += fmt.Sprintf(" (%.1f/s)", float64(k.v-k.p(&prev.StatsCounters))/dt)
			}
		}
		parts = append(parts, s)
	}
	fmt.Fprint(w, wrap("  counters: ", "            ", parts, ","))
	// With prev, the deliveries since: the histogram is cumulative.
	l, since := st.Lateness, ""
	if prev != nil {
		l, since = st.Lateness.Since(prev.Lateness), " since the last refresh"
	}
	switch n := l.Count(); {
	case n == 0 && prev != nil:
		fmt.Fprintf(w, "  lateness: no deliveries since the last refresh\n")
	case n == 0:
		fmt.Fprintf(w, "  lateness: no deliveries yet\n")
	default:
		what := fmt.Sprintf("%d deliveries", n)
		if n == 1 {
			what = "1 delivery"
		}
		parts := []string{"mean " + roundDur(l.Sum/time.Duration(n)).String(), "p50 " + quantileCell(l, 0.5, true),
			"p90 " + quantileCell(l, 0.9, true), "p99 " + quantileCell(l, 0.99, true), "max " + quantileCell(l, 1, false)}
		fmt.Fprint(w, wrap(fmt.Sprintf("  lateness of %s%s (claim - due, Redis TIME): ", what, since), "            ", parts, ","))
		if strings.Contains(strings.Join(parts, ""), "~") {
			fmt.Fprintln(w, "            (a histogram: ~ is interpolated within the bucket shown)")
		}
	}
}

// wrap is wrapTo statsWidth.
func wrap(first, indent string, parts []string, sep string) string {
	return wrapTo(statsWidth, first, indent, parts, sep)
}

// wrapTo joins parts, each but the last followed by sep, with spaces
// after first, in lines of at most cols columns, the later ones starting
// with indent; a line breaks between parts only.
func wrapTo(cols int, first, indent string, parts []string, sep string) string {
	var b strings.Builder
	line, empty := first, true
	for i, p := range parts {
		if i < len(parts)-1 {
			p += sep
		}
		switch cand := line + p; {
		case empty || width(cand) <= cols:
			line, empty = cand+" ", false
		default:
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent + p + " "
		}
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}

// quantileCell is the q-quantile of a lateness histogram: the bucket
// that holds it, lo-hi (above lo, at most hi), after an estimate
// interpolated within it (with estimate), as Prometheus'
// histogram_quantile does: "~3ms (2ms-5ms)". Lateness is in whole ms of
// Redis TIME, so a bucket 1ms wide, or the one of 0 (on time to the ms),
// holds one value, which it gives exactly; the last bucket has no upper
// bound ("> 1h0m0s"). Counts come from Redis, where anyone may have
// written anything: a negative one counts as none.
func quantileCell(l redisq.Lateness, q float64, estimate bool) string {
	var n int64
	for _, c := range l.Counts {
		n += max(c, 0)
	}
	if n == 0 || len(l.Bounds) == 0 {
		return "-"
	}
	rank := min(max(int64(q*float64(n)+0.5), 1), n)
	var seen int64
	for i, c := range l.Counts {
		if c = max(c, 0); seen+c < rank {
			seen += c
			continue
		}
		if i >= len(l.Bounds) {
			return "> " + l.Bounds[len(l.Bounds)-1].String()
		}
		hi, lo := l.Bounds[i], time.Duration(0)
		if i > 0 {
			lo = l.Bounds[i-1]
		}
		if i == 0 || hi-lo <= time.Millisecond {
			return hi.String()
		}
		span := lo.String() + "-" + hi.String()
		if !estimate {
			return span
		}
		est := lo + time.Duration(float64(hi-lo)*float64(rank-seen)/float64(c))
		return "~" + roundDur(est).String() + " (" + span + ")"
	}
	return "-"
}
