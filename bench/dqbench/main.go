// Command dqbench measures delayqueue end to end, the way a user sizing a
// system would: how late do items come out, how fast can they go in and out,
// how much CPU and memory does it cost, next to the alternatives.
//
// Burst mode (default) offers -items items first, due uniformly over -window
// starting -lead after the run starts, then measures per delivered item
// lateness = delivery time - deadline (monotonic clock):
//
//	go run ./bench/dqbench -items 1000000 -window 1s -consumers 1 -batch 256
//
// For delayqueue rows it also reads the queue's own lateness figures
// (Stats.Lateness) and checks them against its per-item measurement: they
// must agree within the histogram's 6.25% plus the hand-off from the
// queue's clock reading to the consumer's (see statslateness.go).
//
// Steady mode offers at -rate items/s for -duration, each due -delay later:
//
//	go run ./bench/dqbench -mode steady -rate 200000 -delay 10ms -duration 5s
//
// Idle mode parks -takers goroutines in Take with the head an hour away and
// reports the CPU the process burns over -idle of real time, per timer:
//
//	go run ./bench/dqbench -mode idle
//
// -impl picks the implementation: delayqueue, afterfunc (one time.AfterFunc
// per item sending to a channel), heapcond (mutex + container/heap + a timer
// loop feeding a channel), floor (bare timers: time.Timer and, on Linux,
// nanosleep on a locked thread and a timerfd in the netpoller), or all of
// them in one run with a comparison table. -timer picks the delayqueue
// leader timer: runtime (default), precise (WithPreciseTimer) or both.
//
// The Redis backend (redisq, next to asynq) is measured by dqbench-redis,
// a command of its own so that this one links no Redis client:
//
//	go run ./bench/dqbench-redis -impl redis -redis 127.0.0.1:6379
//
// -md prints markdown tables for a README; -json FILE writes the results for
// scripts/perfchart, which renders docs/perf.svg:
//
//	go run ./scripts/perfchart -run -out docs/perf.svg
package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
)

type options struct {
	report.Output
	impl, mode, timer       string
	items                   int
	window, lead            time.Duration
	producers, consumers    int
	batch, payload          int
	rate                    float64
	delay, duration         time.Duration
	floorSamples            int
	floorDelay              time.Duration
	idleTakers              int
	idleFor                 time.Duration
	seed                    uint64
	floorDelaySet, leadAuto bool
}

func main() {
	o := options{Output: report.Output{Command: "dqbench"}}
	flag.StringVar(&o.impl, "impl", "delayqueue", "implementation: delayqueue, afterfunc, heapcond, floor, all (comma-separated list allowed); the Redis backend is dqbench-redis's")
	flag.StringVar(&o.mode, "mode", "burst", "burst: offer all, then due over -window; steady: offer at -rate with -delay; idle: blocked takers, CPU over -idle")
	flag.StringVar(&o.timer, "timer", "runtime", "delayqueue leader timer: runtime, precise (WithPreciseTimer) or both (idle mode: both unless set)")
	flag.IntVar(&o.items, "items", 1_000_000, "burst: number of items")
	flag.DurationVar(&o.window, "window", time.Second, "burst: deadlines fall uniformly over this window (0: all due at once)")
	flag.DurationVar(&o.lead, "lead", 0, "burst: time from the start of the offers to the window's opening (0: auto, 1s + 1µs per item)")
	flag.IntVar(&o.producers, "producers", 1, "offering goroutines")
	flag.IntVar(&o.consumers, "consumers", 1, "consuming goroutines")
	flag.IntVar(&o.batch, "batch", 256, "items per take: TakeBatch max (0 or 1: plain Take)")
	flag.IntVar(&o.payload, "payload", 0, "payload bytes per item (0: the queue holds int64 indexes; else []byte of max(8, payload))")
	flag.Float64Var(&o.rate, "rate", 100_000, "steady: items offered per second, all producers together")
	flag.DurationVar(&o.delay, "delay", 10*time.Millisecond, "steady: each item is due this long after it is offered")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "steady: how long producers offer")
	flag.IntVar(&o.floorSamples, "floor-samples", 2000, "floor: number of timer sleeps")
	flag.DurationVar(&o.floorDelay, "floor-delay", 0, "floor: sleeps are uniform in [0, floor-delay) (0: auto, 2*window/items clamped to [20µs, 2ms])")
	flag.IntVar(&o.idleTakers, "takers", 1000, "idle: blocked takers")
	flag.DurationVar(&o.idleFor, "idle", time.Second, "idle: real time over which CPU use is measured")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed for deadlines and floor delays")
	o.Parse("dqbench measures delayqueue end to end (lateness, throughput, CPU, memory) next to the alternatives; dqbench-redis measures the Redis backend.",
		func(given map[string]bool) error {
			if o.mode == "idle" && !given["timer"] {
				o.timer = "both" // the idle target is for both timers
			}
			return o.check()
		})
	o.Main(o.meta(), func(rep *report.Report) error {
		g0 := runtime.NumGoroutine()
		for _, name := range o.runs() {
			settle(g0)
			rep.Results = append(rep.Results, o.run(name))
		}
		return nil
	}, report.Sections{Rows: func(w io.Writer, rows []report.Result) {
		writeStatsLateness(w, rows, o.batch)
		compareFloor(w, rows)
	}})
}

// settle waits (up to 10s) for the previous run's goroutines to exit, e.g.
// afterfunc's senders after a timeout, then collects garbage.
func settle(goroutines int) {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines+2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
}

func (o *options) check() error {
	switch o.mode {
	case "burst", "steady", "idle":
	default:
		return fmt.Errorf("unknown -mode %q", o.mode)
	}
	switch o.timer {
	case "runtime", "precise", "both":
	default:
		return fmt.Errorf("unknown -timer %q", o.timer)
	}
	for _, s := range strings.Split(o.impl, ",") {
		switch s {
		case "delayqueue", "afterfunc", "heapcond", "floor", "all":
		case "redis", "worker", "asynq", "partitioned":
			return report.WrongCommand{Impl: s, Where: "on Redis", Command: "dqbench-redis"}
		default:
			return fmt.Errorf("unknown -impl %q", s)
		}
	}
	if o.items <= 0 || o.producers <= 0 || o.consumers <= 0 || o.window < 0 || o.rate <= 0 {
		return fmt.Errorf("-items, -producers, -consumers, -rate must be > 0 and -window >= 0")
	}
	if o.lead == 0 {
		o.leadAuto = true
		o.lead = time.Second + time.Duration(o.items)*time.Microsecond
	}
	if o.floorDelay == 0 {
		d := 20 * time.Microsecond
		if o.mode == "steady" {
			d = 2 * time.Duration(1e9/o.rate)
		} else if o.items > 0 {
			d = 2 * o.window / time.Duration(o.items)
		}
		o.floorDelay = min(max(d, 20*time.Microsecond), 2*time.Millisecond)
	} else {
		o.floorDelaySet = true
	}
	return nil
}

// runs lists the measurements to make, in order.
func (o *options) runs() []string {
	if o.mode == "idle" {
		r := []string{"idle/none"}
		if o.timer != "precise" {
			r = append(r, "idle/runtime")
		}
		if o.timer != "runtime" {
			r = append(r, "idle/precise")
		}
		return r
	}
	var dq []string
	if o.timer != "precise" {
		dq = append(dq, "delayqueue")
	}
	if o.timer != "runtime" {
		dq = append(dq, "delayqueue/precise")
	}
	var fl []string
	for _, f := range floors() {
		fl = append(fl, f.name)
	}
	var r []string
	for _, s := range strings.Split(o.impl, ",") {
		switch s {
		case "delayqueue":
			r = append(r, dq...)
		case "floor":
			r = append(r, fl...)
		case "all":
			// Floors first: they are meant to be measured in a quiet
			// process, before the queues' leftovers (afterfunc's
			// goroutines, say) keep it busy.
			r = append(append(append(r, fl...), dq...), "afterfunc", "heapcond")
		default:
			r = append(r, s)
		}
	}
	return r
}

func (o *options) run(name string) report.Result {
	switch {
	case strings.HasPrefix(name, "idle/"):
		return runIdle(strings.TrimPrefix(name, "idle/"), o)
	case strings.HasPrefix(name, "floor/"):
		for _, f := range floors() {
			if f.name == name {
				return runFloor(f, o)
			}
		}
	}
	var r report.Result
	if o.payload == 0 {
		r = runQueue(name, o, pickEngine[int64](name), int64Codec)
	} else {
		r = runQueue(name, o, pickEngine[[]byte](name), bytesCodec(o.payload))
	}
	return r
}

func pickEngine[T any](name string) func() engine[T] {
	switch name {
	case "delayqueue":
		return func() engine[T] { return newDQ[T](false) }
	case "delayqueue/precise":
		return func() engine[T] { return newDQ[T](true) }
	case "afterfunc":
		return newAfterFunc[T]
	case "heapcond":
		return newHeapCond[T]
	}
	panic("unknown implementation " + name)
}

func (o *options) meta() report.Meta {
	m := report.NewMeta(o.title())
	m.Mode, m.Items, m.WindowNs, m.LeadNs = o.mode, o.items, int64(o.window), int64(o.lead)
	m.Producers, m.Consumers, m.Batch, m.Payload = o.producers, o.consumers, o.batch, o.payload
	m.Rate, m.DelayNs, m.DurationNs = o.rate, int64(o.delay), int64(o.duration)
	m.FloorNs, m.Timer = int64(o.floorDelay), o.timer
	return m
}

func (o *options) title() string {
	take, pay := report.TitleParts(o.batch, o.payload)
	switch o.mode {
	case "steady":
		return fmt.Sprintf("steady: %s items/s, each due %v after offer, for %v; %d producer(s), %d consumer(s), %s%s",
			report.Group(int64(o.rate)), o.delay, o.duration, o.producers, o.consumers, take, pay)
	case "idle":
		return fmt.Sprintf("idle: %d takers blocked, head 1h away, CPU over %v", o.idleTakers, o.idleFor)
	}
	return fmt.Sprintf("burst: %s items offered first, due uniformly over %v; %d producer(s), %d consumer(s), %s%s",
		report.Group(int64(o.items)), o.window, o.producers, o.consumers, take, pay)
}
