// Command perfchart renders dqbench results (-json) as an SVG chart of
// throughput and lateness per implementation, one section per workload.
//
// Regenerate docs/perf.svg (runs the standard workloads, about a minute):
//
//	go run ./scripts/perfchart -run -out docs/perf.svg
//
// or chart results you already have:
//
//	go run ./scripts/perfchart -out docs/perf.svg /tmp/heavy.json /tmp/light.json
//
// Pure Go, no dependencies beyond the standard library.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The standard workloads -run measures: heavy (targets 3, 5) and light (4).
var workloads = [][]string{
	{"-impl", "all", "-items", "1000000", "-window", "1s", "-batch", "256"},
	{"-impl", "all", "-items", "10000", "-window", "2s", "-batch", "256"},
}

type report struct {
	Meta struct {
		Title      string `json:"title"`
		GoVersion  string `json:"go_version"`
		GOOS       string `json:"goos"`
		GOARCH     string `json:"goarch"`
		NumCPU     int    `json:"num_cpu"`
		GOMAXPROCS int    `json:"gomaxprocs"`
		LoadAvg    string `json:"loadavg"`
	} `json:"meta"`
	Results []struct {
		Name        string  `json:"name"`
		Kind        string  `json:"kind"`
		Items       int     `json:"items"`
		Delivered   int     `json:"delivered"`
		OfferRate   float64 `json:"offers_per_second"`
		DeliverRate float64 `json:"deliveries_per_second"`
		CPUPerItem  float64 `json:"cpu_ns_per_item"`
		Lateness    *struct {
			P50 int64 `json:"p50"`
			P99 int64 `json:"p99"`
			Max int64 `json:"max"`
		} `json:"lateness_ns"`
	} `json:"results"`
}

func main() {
	out := flag.String("out", "docs/perf.svg", "SVG file to write")
	run := flag.Bool("run", false, "run the standard dqbench workloads first (go run ./bench/dqbench, from the repository root)")
	keep := flag.String("keep", "", "with -run: directory to keep the JSON results in (default: a temporary one)")
	flag.Parse()
	files := flag.Args()
	if *run {
		dir := *keep
		if dir != "" {
			check(os.MkdirAll(dir, 0o755))
		} else {
			d, err := os.MkdirTemp("", "perfchart")
			check(err)
			defer os.RemoveAll(d)
			dir = d
		}
		for i, w := range workloads {
			f := filepath.Join(dir, fmt.Sprintf("workload%d.json", i+1))
			args := append([]string{"run", "./bench/dqbench", "-quiet", "-hist=false", "-json", f}, w...)
			fmt.Fprintln(os.Stderr, "go", strings.Join(args, " "))
			cmd := exec.Command("go", args...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			check(cmd.Run())
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "perfchart: no input: give dqbench -json files or -run")
		os.Exit(2)
	}
	var reps []report
	for _, f := range files {
		b, err := os.ReadFile(f)
		check(err)
		var r report
		check(json.Unmarshal(b, &r))
		reps = append(reps, r)
	}
	if dir := filepath.Dir(*out); dir != "" {
		check(os.MkdirAll(dir, 0o755))
	}
	check(os.WriteFile(*out, []byte(render(reps)), 0o644))
	fmt.Fprintln(os.Stderr, "wrote", *out)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfchart:", err)
		os.Exit(1)
	}
}

// Layout.
const (
	width    = 1100
	labelW   = 170
	panelGap = 50
	rowH     = 36
	headH    = 74
	axisH    = 34
	sectGap  = 26
)

var (
	panelW = (width - labelW - panelGap - 30) / 2
	thrX0  = float64(labelW)
	latX0  = float64(labelW + panelW + panelGap)
)

// Log axes: throughput 1e3..1e8 items/s, lateness 1µs..10s.
var (
	thrAxis = logAxis{lo: 1e3, hi: 1e8, x0: thrX0, w: float64(panelW)}
	latAxis = logAxis{lo: 1e3, hi: 1e10, x0: latX0, w: float64(panelW)}
)

type logAxis struct{ lo, hi, x0, w float64 }

func (a logAxis) x(v float64) float64 {
	v = math.Min(math.Max(v, a.lo), a.hi)
	return a.x0 + a.w*math.Log10(v/a.lo)/math.Log10(a.hi/a.lo)
}

const (
	colOffer   = "#9ecae1"
	colDeliver = "#3182bd"
	colP99     = "#fdae6b"
	colP50     = "#e6550d"
	colMax     = "#636363"
)

func render(reps []report) string {
	var b strings.Builder
	h := 0
	for _, r := range reps {
		h += headH + len(r.Results)*rowH + axisH + sectGap
	}
	h += 40
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="-apple-system,Segoe UI,Helvetica,Arial,sans-serif" font-size="12">`+"\n", width, h, width, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	y := 10
	for _, r := range reps {
		y = section(&b, r, y)
	}
	// Legend.
	lx := float64(labelW)
	for _, l := range []struct{ col, txt string }{
		{colOffer, "offers/s"}, {colDeliver, "deliveries/s"},
		{colP50, "lateness p50"}, {colP99, "lateness p99"}, {colMax, "lateness max"},
	} {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="12" height="12" fill="%s"/><text x="%.0f" y="%d">%s</text>`+"\n", lx, y, l.col, lx+16, y+10, l.txt)
		lx += 130
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func section(b *strings.Builder, r report, y int) int {
	m := r.Meta
	fmt.Fprintf(b, `<text x="10" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", y+16, esc(m.Title))
	sub := fmt.Sprintf("%s %s/%s, %d CPUs, GOMAXPROCS=%d", m.GoVersion, m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS)
	if m.LoadAvg != "" {
		sub += ", load average " + m.LoadAvg
	}
	fmt.Fprintf(b, `<text x="10" y="%d" fill="#555">%s</text>`+"\n", y+34, esc(sub))
	fmt.Fprintf(b, `<text x="%.0f" y="%d" font-weight="bold">throughput (items/s, log)</text>`+"\n", thrX0, y+58)
	fmt.Fprintf(b, `<text x="%.0f" y="%d" font-weight="bold">lateness = delivery − deadline (log)</text>`+"\n", latX0, y+58)
	top := y + headH
	bottom := top + len(r.Results)*rowH
	grid(b, thrAxis, top, bottom, func(v float64) string { return si(v) })
	grid(b, latAxis, top, bottom, func(v float64) string { return dur(v) })
	for i, res := range r.Results {
		ry := float64(top + i*rowH)
		if i%2 == 1 {
			fmt.Fprintf(b, `<rect x="5" y="%.0f" width="%d" height="%d" fill="#000" fill-opacity="0.035"/>`+"\n", ry, width-10, rowH)
		}
		label := res.Name
		if res.Kind == "queue" && res.Delivered < res.Items {
			label += fmt.Sprintf(" (%d%% delivered)", 100*res.Delivered/max(res.Items, 1))
		}
		fmt.Fprintf(b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", labelW-8, ry+22, esc(label))
		if res.Kind == "queue" {
			bar(b, thrAxis, res.OfferRate, ry+3, 8, colOffer)
			bar(b, thrAxis, res.DeliverRate, ry+12, 8, colDeliver)
			fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="10" fill="#333">%s offered/s, %s delivered/s, %.0f ns CPU/item</text>`+"\n",
				thrX0, ry+31, si(res.OfferRate), si(res.DeliverRate), res.CPUPerItem)
		} else {
			fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="10" fill="#777">a bare timer, re-armed for random short sleeps (no queue)</text>`+"\n", thrX0, ry+31)
		}
		if l := res.Lateness; l != nil {
			bar(b, latAxis, float64(l.P99), ry+3, 17, colP99)
			bar(b, latAxis, float64(l.P50), ry+7, 9, colP50)
			mx := latAxis.x(float64(l.Max))
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="%s" stroke-width="2"/>`+"\n", mx, mx, ry+1, ry+22, colMax)
			fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="10" fill="#333">p50 %s · p99 %s · max %s</text>`+"\n",
				latX0, ry+31, dur(float64(l.P50)), dur(float64(l.P99)), dur(float64(l.Max)))
		}
	}
	return bottom + axisH + sectGap
}

func bar(b *strings.Builder, a logAxis, v, y, h float64, col string) {
	if v <= 0 {
		return
	}
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.1f" height="%.0f" fill="%s"/>`+"\n", a.x0, y, a.x(v)-a.x0, h, col)
}

func grid(b *strings.Builder, a logAxis, top, bottom int, label func(float64) string) {
	for v := a.lo; v <= a.hi*1.0001; v *= 10 {
		x := a.x(v)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>`+"\n", x, x, top, bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="10" fill="#555">%s</text>`+"\n", x, bottom+14, label(v))
	}
}

func si(v float64) string {
	switch {
	case v >= 1e6:
		return trim(v/1e6) + "M"
	case v >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return trim(ns/1e9) + "s"
	case ns >= 1e6:
		return trim(ns/1e6) + "ms"
	case ns >= 1e3:
		return trim(ns/1e3) + "µs"
	}
	return trim(ns) + "ns"
}

func trim(f float64) string {
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0")
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

func esc(s string) string { return html.EscapeString(s) }
