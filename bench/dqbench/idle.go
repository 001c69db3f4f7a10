package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/bench/internal/report"
)

// runIdle parks o.idleTakers goroutines in Take on a queue whose only item
// is an hour away and measures the CPU the whole process uses over
// o.idleFor of real time. timer is "runtime", "precise" or "none" (no
// queue at all: the process's own background cost).
func runIdle(timer string, o *options) report.Result {
	name := "idle/" + timer
	res := report.Result{Name: name, Kind: "idle", Mode: "idle", Items: o.idleTakers, HeapPerItem: -1}
	var q *delayqueue.Queue[int64]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	if timer != "none" {
		var opts []delayqueue.Option
		if timer == "precise" {
			opts = append(opts, delayqueue.WithPreciseTimer())
		}
		q = delayqueue.New[int64](opts...)
		defer q.Close()
		if _, err := q.Offer(0, time.Now().Add(time.Hour)); err != nil {
			res.Note = err.Error()
			return res
		}
		for range o.idleTakers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = q.Take(ctx)
			}()
		}
		for deadline := time.Now().Add(10 * time.Second); q.Stats().Waiting < o.idleTakers; {
			if time.Now().After(deadline) {
				res.Note = fmt.Sprintf("only %d of %d takers blocked", q.Stats().Waiting, o.idleTakers)
				break
			}
			time.Sleep(time.Millisecond)
		}
	} else {
		res.Items = 0
	}
	// Settle: let the runtime finish starting goroutines and collect.
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	time.Sleep(200 * time.Millisecond)

	var w0 uint64
	if q != nil {
		w0 = q.Stats().Wakeups
	}
	c0 := report.CPUTime()
	t0 := time.Now()
	time.Sleep(o.idleFor)
	c1 := report.CPUTime()
	el := time.Since(t0)
	if q != nil {
		res.Wakeups = q.Stats().Wakeups - w0
	}
	res.CPUSeconds = (c1 - c0).Seconds()
	res.IdleSeconds = el.Seconds()
	cancel()
	wg.Wait()
	return res
}
