package dqweb

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// Charts are SVG bar charts drawn by the templates from these numbers, in
// a fixed viewBox that CSS scales to the page's width. Every bar carries
// its count (data-count) and a tooltip (<title>).

const (
	chartW, chartH   = 640.0, 190.0
	plotTop, plotBot = 14.0, 160.0
	plotLeft         = 40.0 // room for the y labels
	plotRight        = 632.0
)

type chart struct {
	Label string // what the chart shows, for screen readers
	Bars  []bar
	Ticks []tick // x labels
	Grid  []grid // y lines with labels
	Empty bool   // every count is zero
	W, H  float64
}

type bar struct {
	X, Y, W, H float64
	Count      int64
	Tip, Class string
}

type tick struct {
	X      float64
	Label  string
	Anchor string // text-anchor: start, middle or end
}

type grid struct {
	Y     float64
	Label string
}

func r1(x float64) float64 { return math.Round(x*10) / 10 }

// scale returns the bar height for count c on a y axis up to top.
func scale(c, top int64) float64 {
	if top <= 0 {
		return 0
	}
	return r1(float64(c) / float64(top) * (plotBot - plotTop))
}

// niceTop rounds m up to 1, 2 or 5 times a power of ten.
func niceTop(m int64) int64 {
	if m <= 1 {
		return 1
	}
	p := int64(1)
	for p*10 < m {
		p *= 10
	}
	for _, f := range []int64{1, 2, 5, 10} {
		if f*p >= m {
			return f * p
		}
	}
	return 10 * p
}

// bars lays out counts as equal bars from x0 to x1 on a y axis up to top.
func bars(c *chart, counts []int64, x0, x1 float64, top int64, tip func(i int) string, class string) {
	w := (x1 - x0) / float64(len(counts))
	gap := math.Min(2, w/5)
	for i, n := range counts {
		h := scale(n, top)
		c.Bars = append(c.Bars, bar{X: r1(x0 + float64(i)*w + gap/2), Y: r1(plotBot - h), W: r1(w - gap), H: h,
			Count: n, Tip: tip(i), Class: class})
	}
}

func yGrid(c *chart, top int64) {
	for _, f := range []int64{0, 1, 2} {
		v := top * f / 2
		c.Grid = append(c.Grid, grid{Y: r1(plotBot - scale(v, top)), Label: compact(v)})
	}
}

func items(n int64) string {
	if n == 1 {
		return "1 item"
	}
	return fmt.Sprintf("%d items", n)
}

// dueChart draws the overdue backlog (a bar of its own, on its own scale:
// a backlog would flatten the rest) and the items due in each minute of
// the next hour.
func dueChart(h redisq.DueHistogram) chart {
	c := chart{W: chartW, H: chartH, Empty: h.Overdue == 0}
	var most, total int64
	for _, n := range h.Counts {
		most = max(most, n)
		total += n
		if n > 0 {
			c.Empty = false
		}
	}
	top := niceTop(most)
	yGrid(&c, top)
	// The overdue bar fills the plot's height whenever there is a backlog.
	c.Bars = append(c.Bars, bar{X: plotLeft + 4, W: 36, Count: h.Overdue, Class: "overdue",
		Tip: items(h.Overdue) + " overdue (due, not yet delivered)"})
	if h.Overdue > 0 {
		c.Bars[0].Y, c.Bars[0].H = plotTop, plotBot-plotTop
	} else {
		c.Bars[0].Y = plotBot
	}
	c.Ticks = append(c.Ticks, tick{plotLeft + 22, "overdue", "middle"})
	x0 := plotLeft + 70
	bars(&c, h.Counts, x0, plotRight, top, func(i int) string {
		from := time.Duration(i) * h.Width
		return fmt.Sprintf("%s due in %s to %s", items(h.Counts[i]), short(from), short(from+h.Width))
	}, "due")
	span := float64(len(h.Counts)) * h.Width.Minutes()
	for m := 0.0; m <= span; m += span / 4 {
		t := tick{r1(x0 + m/span*(plotRight-x0)), fmt.Sprintf("+%gm", m), "middle"}
		switch m {
		case 0:
			t.Label, t.Anchor = "now", "start"
		case span:
			t.Anchor = "end"
		}
		c.Ticks = append(c.Ticks, t)
	}
	c.Label = fmt.Sprintf("Items due: %d overdue, %d over the next %s, %d later", h.Overdue, total, short(time.Duration(len(h.Counts))*h.Width), h.Later)
	return c
}

// latenessChart draws a lateness histogram, one bar per bucket.
func latenessChart(l redisq.Lateness) chart {
	c := chart{W: chartW, H: chartH, Empty: l.Count() == 0}
	var most int64
	for _, n := range l.Counts {
		most = max(most, n)
	}
	top := niceTop(most)
	yGrid(&c, top)
	label := func(i int) string {
		if i < len(l.Bounds) {
			return short(l.Bounds[i])
		}
		return ">" + short(l.Bounds[len(l.Bounds)-1])
	}
	bars(&c, l.Counts, plotLeft+4, plotRight, top, func(i int) string {
		n := l.Counts[i]
		what := fmt.Sprintf("%d deliveries", n)
		if n == 1 {
			what = "1 delivery"
		}
		switch {
		case i < len(l.Bounds) && l.Bounds[i] == 0:
			return fmt.Sprintf("%s on time (to the millisecond)", what)
		case i < len(l.Bounds):
			return fmt.Sprintf("%s late by at most %s", what, label(i))
		}
		return fmt.Sprintf("%s late by more than %s", what, short(l.Bounds[len(l.Bounds)-1]))
	}, "late")
	for i, b := range c.Bars {
		if i%2 == 0 || i == len(c.Bars)-1 {
			t := tick{r1(b.X + b.W/2), label(i), "middle"}
			if i == len(c.Bars)-1 {
				t.X, t.Anchor = r1(b.X+b.W), "end"
			}
			c.Ticks = append(c.Ticks, t)
		}
	}
	c.Label = fmt.Sprintf("Lateness of %d deliveries", l.Count())
	return c
}

// short formats a duration compactly: 0, 250ms, 2.5s, 90s as 1m30s, 1h.
func short(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// compact formats a count for an axis: 1500 as 1.5k.
func compact(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
