package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

func watchFlags(fs *flag.FlagSet, e *env) {
	fs.DurationVar(&e.interval, "interval", time.Second, "refresh every `duration`")
	fs.DurationVar(&e.window, "window", 10*time.Minute, "the chart covers the next `duration`, in 10 bars")
	fs.IntVar(&e.count, "n", 0, "stop after `n` refreshes (0: until interrupted)")
}

// chartBars is the number of bars of the due chart; chartWidth the longest.
const (
	chartBars  = 10
	chartWidth = 40
)

func cmdWatch(e *env) error {
	if e.interval < 10*time.Millisecond || e.window < chartBars*time.Millisecond || e.count < 0 {
		return usageErr("need -interval >= 10ms, -window >= 10ms, -n >= 0")
	}
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	tty := isTerminal(e.stdout)
	var prev *redisq.Stats
	tick := time.NewTicker(e.interval)
	defer tick.Stop()
	for i := 0; e.count == 0 || i < e.count; i++ {
		if i > 0 {
			select {
			case <-e.ctx.Done():
				return nil // interrupted: the normal way to stop watching
			case <-tick.C:
			}
		}
		st, h, err := readWatch(e, t)
		if err != nil {
			return err
		}
		var b strings.Builder
		if tty {
			b.WriteString("\x1b[H\x1b[2J") // home, clear: our own escapes only
		}
		printStats(&b, t.label(), e.conn.where(), st, prev)
		printChart(&b, h)
		if !tty {
			b.WriteString("\n")
		}
		if _, err := io.WriteString(e.stdout, b.String()); err != nil {
			return err
		}
		prev = &st
	}
	return nil
}

func readWatch(e *env, q redisq.Admin) (redisq.Stats, redisq.DueHistogram, error) {
	ctx, cancel := context.WithTimeout(e.ctx, e.conn.timeout)
	defer cancel()
	st, err := q.Stats(ctx)
	if err != nil {
		return st, redisq.DueHistogram{}, err
	}
	h, err := q.DueHistogram(ctx, e.window/chartBars, chartBars)
	return st, h, err
}

// printChart draws the due histogram as horizontal bars, scaled to the
// largest bar of the window: the overdue backlog and the items due later
// can be far larger, and would flatten the window's bars, so theirs are
// cut at the full width, marked ">".
func printChart(w io.Writer, h redisq.DueHistogram) {
	fmt.Fprintf(w, "  due in the next %v (%v a bar):\n", h.Width*time.Duration(len(h.Counts)), h.Width)
	var most int64
	for _, c := range h.Counts {
		most = max(most, c)
	}
	if most == 0 {
		most = max(h.Overdue, h.Later)
	}
	bar := func(label string, n int64) {
		s := ""
		if most > 0 && n > 0 {
			width := (min(n, most)*chartWidth + most - 1) / most
			s = strings.Repeat("#", int(width))
			if n > most {
				s = s[:chartWidth-1] + ">"
			}
		}
		fmt.Fprintf(w, "  %13s |%-*s %d\n", label, chartWidth, s, n)
	}
	bar("overdue", h.Overdue)
	for i, c := range h.Counts {
		bar(fmt.Sprintf("+%v", h.Width*time.Duration(i+1)), c)
	}
	bar("later", h.Later)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
