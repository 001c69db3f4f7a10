package dqweb

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The history charts draw the points rates keeps (see rates.go) over the
// time they cover, in whole minutes, at least minChartSpan and at most
// historySpan: one of rates (enqueued, delivered and failed per second
// between two points) and one of sizes (due, in flight, dead). Lines
// break where no page read the queue for longer than maxGap.

// maxGap is the longest time between two points a line joins.
const maxGap = 3 * historyEvery

// minChartSpan is the shortest time the history charts cover.
const minChartSpan = 2 * time.Minute

// chartSpan is the time the history h, ending at now, covers on the charts.
func chartSpan(h []point, now time.Time) time.Duration {
	span := minChartSpan
	if len(h) > 0 {
		span = max(span, now.Sub(h[0].at).Truncate(time.Minute)+time.Minute)
	}
	return min(span, historySpan)
}

type lineChart struct {
	Label  string // what the chart shows, for screen readers
	Series []series
	Ticks  []tick
	Grid   []grid
	Empty  bool // no value to draw
	W, H   float64
}

type series struct {
	Class, Name string
	Path        string // SVG path data: one subpath per unbroken run
	Points      int
	Last        string // the latest value, formatted
}

// value is one series' value at a point (NaN: none, at a run's start).
type value struct {
	at time.Time
	v  float64
}

// historyCharts draws the rates and sizes of the history h, which ends at
// now.
func historyCharts(h []point, now time.Time) (ratesChart, sizesChart lineChart) {
	gap := func(i int) bool { return i == 0 || h[i].at.Sub(h[i-1].at) > maxGap }
	rate := func(f func(p point) int64) []value {
		var out []value
		for i := range h {
			if gap(i) {
				out = append(out, value{h[i].at, math.NaN()})
				continue
			}
			d := h[i].at.Sub(h[i-1].at).Seconds()
			out = append(out, value{h[i].at, float64(max(0, f(h[i])-f(h[i-1]))) / d})
		}
		return out
	}
	failed := func(i int) int64 {
		return (h[i].delivered - h[i-1].delivered) - (h[i].acked - h[i-1].acked) - (h[i].inFlight - h[i-1].inFlight)
	}
	failedRate := make([]value, len(h))
	for i := range h {
		if gap(i) {
			failedRate[i] = value{h[i].at, math.NaN()}
			continue
		}
		failedRate[i] = value{h[i].at, float64(max(0, failed(i))) / h[i].at.Sub(h[i-1].at).Seconds()}
	}
	size := func(f func(p point) int64) []value {
		out := make([]value, len(h))
		for i := range h {
			out[i] = value{h[i].at, float64(f(h[i]))}
		}
		return out
	}
	perSec := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "/s" }
	count := func(v float64) string { return compact(int64(v)) }
	span := chartSpan(h, now)
	ratesChart = lines(now, span, "Rates over the last "+short(span), []lineIn{
		{"enqueued", "enqueued", rate(func(p point) int64 { return p.enqueued }), perSec},
		{"delivered", "delivered", rate(func(p point) int64 { return p.delivered }), perSec},
		{"failed", "failed", failedRate, perSec},
	}, true)
	sizesChart = lines(now, span, "Sizes over the last "+short(span), []lineIn{
		{"due", "due now", size(func(p point) int64 { return p.due }), count},
		{"inflight", "in flight", size(func(p point) int64 { return p.inFlight }), count},
		{"dead", "dead", size(func(p point) int64 { return p.d }), count},
	}, false)
	return ratesChart, sizesChart
}

type lineIn struct {
	class, name string
	vals        []value
	format      func(float64) string
}

// lines lays out series over [now-span, now] (span whole minutes) on one
// y axis.
func lines(now time.Time, span time.Duration, label string, in []lineIn, fractional bool) lineChart {
	c := lineChart{W: chartW, H: chartH, Label: label}
	most := 0.0
	points := 0
	for _, s := range in {
		n := 0
		for _, v := range s.vals {
			if !math.IsNaN(v.v) {
				most = math.Max(most, v.v)
				n++
			}
		}
		points = max(points, n)
	}
	c.Empty = points == 0
	top := niceTopF(most, fractional)
	for _, f := range []float64{0, 0.5, 1} {
		v := top * f
		lbl := compactF(v)
		c.Grid = append(c.Grid, grid{Y: r1(plotBot - v/top*(plotBot-plotTop)), Label: lbl})
	}
	from := now.Add(-span)
	x := func(t time.Time) float64 {
		return r1(plotLeft + 4 + t.Sub(from).Seconds()/span.Seconds()*(plotRight-plotLeft-4))
	}
	y := func(v float64) float64 { return r1(plotBot - v/top*(plotBot-plotTop)) }
	for _, s := range in {
		var d strings.Builder
		out := series{Class: s.class, Name: s.name, Last: "–"}
		open := false
		for _, v := range s.vals {
			if math.IsNaN(v.v) {
				open = false
				continue
			}
			if v.at.Before(from) {
				continue
			}
			if !open {
				// A run of one point shows as a dot (a round cap on a
				// zero-length segment).
				fmt.Fprintf(&d, "M%g %gL%g %g", x(v.at), y(v.v), x(v.at), y(v.v))
				open = true
			} else {
				fmt.Fprintf(&d, "L%g %g", x(v.at), y(v.v))
			}
			out.Points++
			out.Last = s.format(v.v)
		}
		out.Path = d.String()
		c.Series = append(c.Series, out)
	}
	mins := int(span / time.Minute)
	step := max(1, mins/5)
	for m := 0; m <= mins; m += step {
		t := tick{x(from.Add(time.Duration(m) * time.Minute)), fmt.Sprintf("-%dm", mins-m), "middle"}
		switch m {
		case 0:
			t.Anchor = "start"
		case mins:
			t.Label, t.Anchor = "now", "end"
		}
		c.Ticks = append(c.Ticks, t)
	}
	return c
}

// niceTopF rounds m up to 1, 2 or 5 times a power of ten (for counts, at
// least 1).
func niceTopF(m float64, fractional bool) float64 {
	if m <= 0 {
		return 1
	}
	if !fractional && m <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(m)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= m {
			return f * p
		}
	}
	return 10 * p
}

// compactF formats an axis value: 0.5, 2, 1.5k.
func compactF(v float64) string {
	if v >= 1000 || v == math.Trunc(v) {
		return compact(int64(v))
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}
