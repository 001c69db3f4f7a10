package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Sections are a command's own parts of the text report, each printed at
// its place by Print; a nil one prints nothing.
type Sections struct {
	// Head follows the header lines (dqbench-redis: the capacity tables).
	Head func(w io.Writer, rep *Report)
	// Rows follows the results table and its notes (dqbench: Stats.Lateness
	// and the comparison with the timer floor).
	Rows func(w io.Writer, rows []Result)
	// Tail follows the idle table and precedes the histograms
	// (dqbench-redis: its idle phases, the comparison with asynq).
	Tail func(w io.Writer, rs []Result)
}

// Print writes rep as text, or with md as markdown tables, as command
// (named in the header line) ran it: the header, a table of the results
// with their notes, a table of the idle runs, and with hist a lateness
// histogram per result. Results with RedisIdle are left to s.Tail.
func (rep *Report) Print(w io.Writer, command string, md, hist bool, s Sections) {
	m := rep.Meta
	fmt.Fprintf(w, "%s\n", m.Title)
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, GOMAXPROCS=%d", m.GoVersion, m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS)
	if m.LoadAvg != "" {
		fmt.Fprintf(w, ", load average %s", m.LoadAvg)
	}
	fmt.Fprintf(w, "; %s %s\n", command, m.Args)
	if m.Redis != "" {
		fmt.Fprintf(w, "%s\n", m.Redis)
	}
	fmt.Fprintln(w)
	if s.Head != nil {
		s.Head(w, rep)
	}

	var idle, rows []Result
	for _, r := range rep.Results {
		switch {
		case r.RedisIdle != nil: // s.Tail's
		case r.Kind == "idle":
			idle = append(idle, r)
		default:
			rows = append(rows, r)
		}
	}
	if len(rows) > 0 {
		t := Table{MD: md, Head: []string{"impl", "delivered", "offer/s", "deliver/s", "p50", "p90", "p99", "p99.9", "max", "CPU", "CPU/item", "heap/item"}}
		for _, r := range rows {
			row := []string{r.Name, deliveredCell(r), Rate(r.OfferRate), Rate(r.DeliverRate)}
			if p := r.Lateness; p != nil {
				row = append(row, Dur(p.P50), Dur(p.P90), Dur(p.P99), Dur(p.P999), Dur(p.Max))
			} else {
				row = append(row, "-", "-", "-", "-", "-")
			}
			row = append(row, Dur(int64(r.CPUSeconds*1e9)), fmt.Sprintf("%.0fns", r.CPUPerItemNs), bytesCell(r.HeapPerItem))
			if r.Kind == "floor" {
				row[2], row[3], row[11] = "-", "-", "-"
				row[1] = fmt.Sprintf("%d sleeps", r.Delivered)
			}
			t.Add(row)
		}
		fmt.Fprintln(w, "p50..max: lateness = delivery time - deadline; lower is better")
		if md {
			fmt.Fprintln(w)
		}
		t.Write(w)
		fmt.Fprintln(w)
		Notes(w, rows)
		if s.Rows != nil {
			s.Rows(w, rows)
		}
	}
	if len(idle) > 0 {
		t := Table{MD: md, Head: []string{"idle", "takers", "real time", "CPU used", "wake-ups"}}
		for _, r := range idle {
			t.Add([]string{r.Name, strconv.Itoa(r.Items), Dur(int64(r.IdleSeconds * 1e9)), Dur(int64(r.CPUSeconds * 1e9)), strconv.FormatUint(r.Wakeups, 10)})
		}
		t.Write(w)
		fmt.Fprintln(w)
		Notes(w, idle)
	}
	if s.Tail != nil {
		s.Tail(w, rep.Results)
	}
	if hist {
		for _, r := range rows {
			if len(r.Histogram) == 0 {
				continue
			}
			if md {
				fmt.Fprintf(w, "```\n")
			}
			fmt.Fprintf(w, "lateness histogram: %s (%d samples)\n", r.Name, r.Lateness.N)
			writeHistogram(w, r.Histogram, r.Lateness.N)
			if md {
				fmt.Fprintf(w, "```\n")
			}
			fmt.Fprintln(w)
		}
	}
}

func deliveredCell(r Result) string {
	s := Group(int64(r.Delivered))
	if r.Delivered != r.Items {
		s += "/" + Group(int64(r.Items)) + " (!)"
	}
	return s
}

// Notes prints each result's note (a redis or asynq result's one line per
// part) and how many items it delivered early or twice.
func Notes(w io.Writer, rs []Result) {
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
		return ">= " + Dur(b.Lo)
	}
	return fmt.Sprintf("[%s, %s)", Dur(b.Lo), Dur(b.Hi))
}

// Dur formats nanoseconds compactly with three significant digits.
func Dur(ns int64) string {
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

// Rate formats a rate (k, M); "-" for none.
func Rate(r float64) string {
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

// Group formats n with thousands separators.
func Group(n int64) string {
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

// Table prints aligned text or, with MD, a markdown table: Head, then the
// rows added.
type Table struct {
	MD   bool
	Head []string
	rows [][]string
}

// Add appends a row.
func (t *Table) Add(r []string) { t.rows = append(t.rows, r) }

// Write prints the table, names left-aligned and other cells right-aligned.
func (t *Table) Write(w io.Writer) {
	width := make([]int, len(t.Head))
	for _, r := range append([][]string{t.Head}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		if t.MD {
			b.WriteString("|")
		}
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				c += pad // left-align names
			} else {
				c = pad + c
			}
			if t.MD {
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
	line(t.Head)
	if t.MD {
		sep := make([]string, len(t.Head))
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
