package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Report is what -json writes; scripts/perfchart reads it.
type Report struct {
	Meta    Meta     `json:"meta"`
	Results []Result `json:"results"`
	// Capacity is -impl partitioned's measurement.
	Capacity *CapacityReport `json:"capacity,omitempty"`
}

// Meta describes the machine and the workload.
type Meta struct {
	Title      string  `json:"title"`
	Time       string  `json:"time"`
	GoVersion  string  `json:"go_version"`
	GOOS       string  `json:"goos"`
	GOARCH     string  `json:"goarch"`
	NumCPU     int     `json:"num_cpu"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	Args       string  `json:"args"`
	Mode       string  `json:"mode"`
	Items      int     `json:"items"`
	WindowNs   int64   `json:"window_ns"`
	LeadNs     int64   `json:"lead_ns"`
	Producers  int     `json:"producers"`
	Consumers  int     `json:"consumers"`
	Batch      int     `json:"batch"`
	Payload    int     `json:"payload"`
	Rate       float64 `json:"rate"`
	DelayNs    int64   `json:"delay_ns"`
	DurationNs int64   `json:"duration_ns"`
	FloorNs    int64   `json:"floor_delay_ns"`
	Timer      string  `json:"timer"`
	LoadAvg    string  `json:"loadavg,omitempty"` // /proc/loadavg 1/5/15 min at the end of the run (Linux)
	Redis      string  `json:"redis,omitempty"`   // -impl redis: server version, address, AOF settings
}

// Result is one implementation's (or floor's, or idle run's) measurement.
type Result struct {
	Name         string       `json:"name"`
	Kind         string       `json:"kind"` // queue, floor, idle
	Mode         string       `json:"mode"`
	Items        int          `json:"items"`
	Delivered    int          `json:"delivered"`
	Early        int          `json:"early"`
	Duplicates   int          `json:"duplicates"`
	OfferSeconds float64      `json:"offer_seconds"`
	OfferRate    float64      `json:"offers_per_second"`
	DeliverRate  float64      `json:"deliveries_per_second"`
	CPUSeconds   float64      `json:"cpu_seconds"`
	CPUPerItemNs float64      `json:"cpu_ns_per_item"`
	HeapPerItem  float64      `json:"heap_bytes_per_item"` // -1: not measured
	IdleSeconds  float64      `json:"idle_seconds,omitempty"`
	Wakeups      uint64       `json:"wakeups"`
	Lateness     *Percentiles `json:"lateness_ns,omitempty"`
	// StatsLateness: the queue's own figures (delayqueue's Stats.Lateness).
	StatsLateness *Percentiles `json:"stats_lateness_ns,omitempty"`
	Histogram     []Bucket     `json:"histogram,omitempty"`
	RedisIdle     *RedisIdle   `json:"redis_idle,omitempty"` // -impl redis idle phase
	// -impl redis/asynq: the whole Redis server's commands (scripts' own
	// calls included) and CPU over the measured phase (-1: unknown), per
	// item; for an idle phase, commands per 10 s.
	ServerCmds         int64   `json:"server_cmds,omitempty"`
	ServerCPUNs        int64   `json:"server_cpu_ns,omitempty"`
	ServerCmdsPerItem  float64 `json:"server_cmds_per_item,omitempty"`
	ServerCPUPerItemNs float64 `json:"server_cpu_ns_per_item,omitempty"`
	IdleCmdsPer10s     float64 `json:"idle_cmds_per_10s,omitempty"`
	Note               string  `json:"note,omitempty"`
}

// Percentiles of lateness, in nanoseconds.
type Percentiles struct {
	N    int   `json:"n"`
	Mean int64 `json:"mean"`
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

// Bucket counts lateness samples in [Lo, Hi) nanoseconds.
type Bucket struct {
	Lo    int64 `json:"lo"`
	Hi    int64 `json:"hi"`
	Count int   `json:"count"`
}

func (rep *Report) print(w io.Writer, o *options) {
	m := rep.Meta
	fmt.Fprintf(w, "%s\n", m.Title)
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, GOMAXPROCS=%d", m.GoVersion, m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS)
	if m.LoadAvg != "" {
		fmt.Fprintf(w, ", load average %s", m.LoadAvg)
	}
	fmt.Fprintf(w, "; dqbench %s\n", m.Args)
	if m.Redis != "" {
		fmt.Fprintf(w, "%s\n", m.Redis)
	}
	fmt.Fprintln(w)
	if rep.Capacity != nil {
		writeCapacity(w, o, rep.Capacity)
	}

	var idle, rows, redisIdle []Result
	for _, r := range rep.Results {
		if r.RedisIdle != nil {
			redisIdle = append(redisIdle, r)
		} else if r.Kind == "idle" {
			idle = append(idle, r)
		} else {
			rows = append(rows, r)
		}
	}
	if len(rows) > 0 {
		t := table{md: o.md, head: []string{"impl", "delivered", "offer/s", "deliver/s", "p50", "p90", "p99", "p99.9", "max", "CPU", "CPU/item", "heap/item"}}
		for _, r := range rows {
			row := []string{r.Name, deliveredCell(r), rate(r.OfferRate), rate(r.DeliverRate)}
			if p := r.Lateness; p != nil {
				row = append(row, dur(p.P50), dur(p.P90), dur(p.P99), dur(p.P999), dur(p.Max))
			} else {
				row = append(row, "-", "-", "-", "-", "-")
			}
			row = append(row, dur(int64(r.CPUSeconds*1e9)), fmt.Sprintf("%.0fns", r.CPUPerItemNs), bytesCell(r.HeapPerItem))
			if r.Kind == "floor" {
				row[2], row[3], row[11] = "-", "-", "-"
				row[1] = fmt.Sprintf("%d sleeps", r.Delivered)
			}
			t.add(row)
		}
		fmt.Fprintln(w, "p50..max: lateness = delivery time - deadline; lower is better")
		if o.md {
			fmt.Fprintln(w)
		}
		t.write(w)
		fmt.Fprintln(w)
		notes(w, rows)
		writeStatsLateness(w, rows, o.batch)
		compareFloor(w, rows)
	}
	if len(idle) > 0 {
		t := table{md: o.md, head: []string{"idle", "takers", "real time", "CPU used", "wake-ups"}}
		for _, r := range idle {
			t.add([]string{r.Name, strconv.Itoa(r.Items), dur(int64(r.IdleSeconds * 1e9)), dur(int64(r.CPUSeconds * 1e9)), strconv.FormatUint(r.Wakeups, 10)})
		}
		t.write(w)
		fmt.Fprintln(w)
		notes(w, idle)
	}
	for _, r := range redisIdle {
		writeRedisIdle(w, o, r)
	}
	for _, r := range idle {
		if r.IdleCmdsPer10s > 0 {
			fmt.Fprintf(w, "%s: redis-server commands per 10 s idle: %.1f\n", r.Name, r.IdleCmdsPer10s)
		}
	}
	writeVersus(w, o, rep.Results)
	if o.hist {
		for _, r := range rows {
			if len(r.Histogram) == 0 {
				continue
			}
			if o.md {
				fmt.Fprintf(w, "```\n")
			}
			fmt.Fprintf(w, "lateness histogram: %s (%d samples)\n", r.Name, r.Lateness.N)
			writeHistogram(w, r.Histogram, r.Lateness.N)
			if o.md {
				fmt.Fprintf(w, "```\n")
			}
			fmt.Fprintln(w)
		}
	}
}

func deliveredCell(r Result) string {
	s := group(int64(r.Delivered))
	if r.Delivered != r.Items {
		s += "/" + group(int64(r.Items)) + " (!)"
	}
	return s
}

func notes(w io.Writer, rs []Result) {
	for _, r := range rs {
		if strings.HasPrefix(r.Name, "redis") || strings.HasPrefix(r.Name, "asynq") {
			// Many notes: one per line.
			for _, n := range strings.Split(r.Note, "; ") {
				if n != "" {
					fmt.Fprintf(w, "note: %s: %s\n", r.Name, n)
				}
			}
		} else if r.Note != "" {
			fmt.Fprintf(w, "note: %s: %s\n", r.Name, r.Note)
		}
		if r.Early > 0 {
			fmt.Fprintf(w, "note: %s: %d items delivered EARLY\n", r.Name, r.Early)
		}
		if r.Duplicates > 0 {
			fmt.Fprintf(w, "note: %s: %d items delivered TWICE\n", r.Name, r.Duplicates)
		}
	}
}

// compareFloor prints each queue's p50/p99 as a multiple of floor/timer's.
func compareFloor(w io.Writer, rs []Result) {
	var fl *Percentiles
	for _, r := range rs {
		if r.Name == "floor/timer" {
			fl = r.Lateness
		}
	}
	if fl == nil || fl.P50 <= 0 || fl.P99 <= 0 {
		return
	}
	for _, r := range rs {
		if r.Kind != "queue" || r.Lateness == nil {
			continue
		}
		fmt.Fprintf(w, "%s vs floor/timer: p50 %.2fx, p99 %.2fx\n", r.Name,
			float64(r.Lateness.P50)/float64(fl.P50), float64(r.Lateness.P99)/float64(fl.P99))
	}
	fmt.Fprintln(w)
}

func writeHistogram(w io.Writer, bs []Bucket, n int) {
	most := 0
	for _, b := range bs {
		most = max(most, b.Count)
	}
	cum := 0
	for _, b := range bs {
		cum += b.Count
		bar := strings.Repeat("#", (b.Count*50+most-1)/most)
		fmt.Fprintf(w, "  %-17s %9d %6.2f%% %7.3f%%  %s\n", bucketLabel(b), b.Count,
			100*float64(b.Count)/float64(n), 100*float64(cum)/float64(n), bar)
	}
}

func bucketLabel(b Bucket) string {
	switch {
	case b.Hi <= 0:
		return "< 0 (early)"
	case b.Hi >= 1<<62:
		return ">= " + dur(b.Lo)
	}
	return fmt.Sprintf("[%s, %s)", dur(b.Lo), dur(b.Hi))
}

// dur formats nanoseconds compactly with three significant digits.
func dur(ns int64) string {
	d := time.Duration(ns)
	a := d
	if a < 0 {
		a = -a
	}
	switch {
	case a < time.Microsecond:
		return fmt.Sprintf("%dns", ns)
	case a < time.Millisecond:
		return sig(float64(ns)/1e3) + "µs"
	case a < time.Second:
		return sig(float64(ns)/1e6) + "ms"
	}
	return sig(float64(ns)/1e9) + "s"
}

func sig(f float64) string {
	a := f
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

func rate(r float64) string {
	switch {
	case r <= 0:
		return "-"
	case r >= 1e6:
		return sig(r/1e6) + "M"
	case r >= 1e3:
		return sig(r/1e3) + "k"
	}
	return sig(r)
}

func bytesCell(b float64) string {
	if b < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fB", b)
}

// group formats n with thousands separators.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// table prints aligned text or a markdown table.
type table struct {
	md   bool
	head []string
	rows [][]string
}

func (t *table) add(r []string) { t.rows = append(t.rows, r) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		if t.md {
			b.WriteString("|")
		}
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				c += pad // left-align names
			} else {
				c = pad + c
			}
			if t.md {
				b.WriteString(" " + c + " |")
			} else {
				if i > 0 {
					b.WriteString("  ")
				}
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.head)
	if t.md {
		sep := make([]string, len(t.head))
		for i := range sep {
			if i == 0 {
				sep[i] = ":" + strings.Repeat("-", max(width[i]-1, 2))
			} else {
				sep[i] = strings.Repeat("-", max(width[i]-1, 2)) + ":"
			}
		}
		fmt.Fprintln(w, "| "+strings.Join(sep, " | ")+" |")
	}
	for _, r := range t.rows {
		line(r)
	}
}

// writeRedisIdle prints the -impl redis idle phase: what each blocked
// consumer sent per wait.
func writeRedisIdle(w io.Writer, o *options, r Result) {
	ri := r.RedisIdle
	t := table{md: o.md, head: []string{"redis idle", "consumer", "real time", "wake cap", "BZPOPMIN", "claims", "other", "cmds/wait", "mean wait"}}
	var bz, cl, ot int64
	for i := range ri.BZPopMin {
		bz += ri.BZPopMin[i]
		cl += ri.Claims[i]
		ot += ri.Other[i]
		t.add([]string{r.Name, strconv.Itoa(i + 1), dur(int64(r.IdleSeconds * 1e9)), dur(ri.WakeCapNs),
			strconv.FormatInt(ri.BZPopMin[i], 10), strconv.FormatInt(ri.Claims[i], 10), strconv.FormatInt(ri.Other[i], 10),
			perWait(ri.BZPopMin[i]+ri.Claims[i]+ri.Other[i], ri.BZPopMin[i]), "-"})
	}
	t.add([]string{r.Name, "all", dur(int64(r.IdleSeconds * 1e9)), dur(ri.WakeCapNs),
		strconv.FormatInt(bz, 10), strconv.FormatInt(cl, 10), strconv.FormatInt(ot, 10), perWait(bz+cl+ot, bz), dur(ri.MeanWaitNs)})
	t.write(w)
	fmt.Fprintln(w)
	verdict := "PASS"
	if !ri.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "redis idle: %d consumers blocked in Take for %s (head 1h away, wake cap %s), process CPU %s:\n",
		len(ri.BZPopMin), dur(int64(r.IdleSeconds*1e9)), dur(ri.WakeCapNs), dur(int64(r.CPUSeconds*1e9)))
	fmt.Fprintf(w, "  each blocked wait is one BZPOPMIN (mean %s blocked); the claim script that follows it is the only other command.\n", dur(ri.MeanWaitNs))
	fmt.Fprintf(w, "  target: one blocking command per wait, one wait per wake cap (<= %d per consumer), no polling: %s\n",
		int64(r.IdleSeconds*1e9)/ri.WakeCapNs+1, verdict)
	if ri.ServerBZPopMin >= 0 {
		fmt.Fprintf(w, "  server-wide INFO commandstats over the same time: %d BZPOPMIN, %d EVALSHA/EVAL (hook: %d, %d)\n",
			ri.ServerBZPopMin, ri.ServerEval, bz, cl)
	}
	fmt.Fprintln(w)
	notes(w, []Result{r})
}

func perWait(cmds, waits int64) string {
	if waits == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(cmds)/float64(waits), 'f', 2, 64)
}
