package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
)

// A floor is the lateness of a bare sleep primitive re-armed for random
// short delays, one at a time: no queue, no contention. It is what any timer
// based queue can at best achieve on this machine and runtime.
type floor struct {
	name string
	// sleep blocks for about d and returns when it woke; arm is called once
	// before the samples, done once after.
	sleep func(d time.Duration)
	arm   func() error
	done  func()
}

// floors returns the floors available on this OS, time.Timer first.
func floors() []floor {
	var t *time.Timer
	timer := floor{
		name: "floor/timer",
		arm:  func() error { t = time.NewTimer(time.Hour); t.Stop(); return nil },
		sleep: func(d time.Duration) {
			t.Reset(d)
			<-t.C
		},
		done: func() {},
	}
	return append([]floor{timer}, osFloors()...)
}

// runFloor measures f for o.floorSamples sleeps of uniform random length in
// [0, o.floorDelay).
func runFloor(f floor, o *options) report.Result {
	res := report.Result{Name: f.name, Kind: "floor", Mode: "floor", Items: o.floorSamples, HeapPerItem: -1}
	if err := f.arm(); err != nil {
		res.Note = err.Error()
		return res
	}
	defer f.done()
	r := rand.New(rand.NewPCG(o.seed, 7))
	lat := make([]int64, 0, o.floorSamples)
	cpu0 := report.CPUTime()
	start := time.Now()
	for range o.floorSamples {
		d := time.Duration(r.Int64N(int64(o.floorDelay)) + 1)
		s := time.Now()
		f.sleep(d)
		lat = append(lat, int64(time.Since(s)-d))
	}
	el := time.Since(start)
	res.CPUSeconds = (report.CPUTime() - cpu0).Seconds()
	res.CPUPerItemNs = float64(report.CPUTime()-cpu0) / float64(o.floorSamples)
	res.Delivered = len(lat)
	res.DeliverRate = float64(len(lat)) / el.Seconds()
	for _, l := range lat {
		if l < 0 {
			res.Early++
		}
	}
	res.SetLateness(lat)
	return res
}

// compareFloor prints each queue's p50/p99 as a multiple of floor/timer's.
func compareFloor(w io.Writer, rs []report.Result) {
	var fl *report.Percentiles
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
