// Command dqbench measures delayqueue end to end, the way a user sizing a
// system would: how late do items come out, how fast can they go in and out,
// how much CPU and memory does it cost, next to the alternatives.
//
// Burst mode (default) offers -items items first, due uniformly over -window
// starting -lead after the run starts, then measures per delivered item
// lateness = delivery time - deadline (monotonic clock):
//
//	go run ./cmd/dqbench -items 1000000 -window 1s -consumers 1 -batch 256
//
// For delayqueue rows it also reads the queue's own lateness figures
// (Stats.Lateness) and checks them against its per-item measurement: they
// must agree within the histogram's 6.25% plus the hand-off from the
// queue's clock reading to the consumer's (see statslateness.go).
//
// Steady mode offers at -rate items/s for -duration, each due -delay later:
//
//	go run ./cmd/dqbench -mode steady -rate 200000 -delay 10ms -duration 5s
//
// Idle mode parks -takers goroutines in Take with the head an hour away and
// reports the CPU the process burns over -idle of real time, per timer:
//
//	go run ./cmd/dqbench -mode idle
//
// -impl picks the implementation: delayqueue, afterfunc (one time.AfterFunc
// per item sending to a channel), heapcond (mutex + container/heap + a timer
// loop feeding a channel), floor (bare timers: time.Timer and, on Linux,
// nanosleep on a locked thread and a timerfd in the netpoller), or all of
// them in one run with a comparison table. -timer picks the delayqueue
// leader timer: runtime (default), precise (WithPreciseTimer) or both.
//
// -impl redis runs the Redis backend (redisq) against the server at -redis
// instead, on queues named dqbench-RUN-* whose keys it deletes at the end
// (point it at a scratch server with maxmemory-policy noeviction):
//
//	go run ./cmd/dqbench -impl redis -redis 127.0.0.1:6379 -rate 1000 -duration 10s
//
// It runs three phases:
//
//   - backlog: -redis-items items enqueued (Enqueue, due now) as fast as 8
//     producers (or -producers) can, each its own loop on a Queue and
//     client of their own (the loop a program writes), then drained by
//     -consumers consumers (Take+Ack, or TakeBatch(-batch)+AckMany):
//     enqueue/s and delivered+acked/s;
//   - idle: -consumers consumers blocked in Take for -idle (default 5s) with
//     the head an hour away and -wake-cap as redisq.WithWakeCap (default
//     1s); a go-redis hook counts the commands each consumer sends per
//     blocked wait (target: one BZPOPMIN per wait, no polling loop);
//   - steady: -rate items/s for -duration, each EnqueueAfter(-delay), taken
//     and acked by -consumers consumers; lateness = receive instant mapped
//     onto the Redis clock (offset calibrated with min-RTT TIME round trips,
//     uncertain by about half that RTT) - Message.Due (target: p99 <= 10ms at
//     1,000 items/s).
//
// -impl worker runs the same phases with a redisq.Worker of -consumers
// handlers instead of consumer loops, and -impl asynq with asynq.Server
// (Concurrency -consumers), both with a handler that returns nil at once;
// -impl redis,worker,asynq runs all three, phase by phase, and ends with a
// table of ratios against asynq and the targets:
//
//	go run ./cmd/dqbench -impl redis,worker,asynq -redis 127.0.0.1:6379 -rate 1000 -duration 10s -delay 0 -delay-max 1s -idle 10s -wake-cap 5s
//
// Before each phase, with appendonly on, dqbench rewrites the AOF and
// waits for the rewrite, so that a rewrite the phases before triggered
// (a fork) does not land on this one; a phase during which one ran anyway
// says so.
//
// With -impl redis, -mode defaults to steady (all three phases); -mode idle
// runs the idle phase alone; -mode burst is refused (a million-item burst
// over one second is not a Redis workload). -rate defaults to 1000,
// -consumers to 4 and -batch to 1 (plain Take+Ack) unless given. -redis-items 0 or -idle 0 skip
// those phases.
//
// -impl partitioned measures the capacity of a redisq.Partitioned queue
// on a Redis Cluster of M masters: the server main-thread CPU per item of
// the busiest master (INFO cpu used_cpu_sys_main_thread +
// used_cpu_user_main_thread; its capacity ceiling is one second divided by
// that) and every master's commands per item (INFO commandstats), for an
// ordinary Queue, a 1-partition and an M-partition queue, and M 1-partition
// queues, one on each master, delivered at the same time (1 partition with
// the masters equally loaded); each with AckTake loops (32 consumers) and
// TakeBatch(-redis-batch)+AckMany loops (8 consumers), -redis-items items
// per queue (30,000 unless given), median of -rounds rounds. It prints a
// table per loop and the ratios of the M-partition ceiling to the others
// (target with 3 masters, issue 19: >= 2.5x that of 1 partition under equal
// load). -local-cluster N starts a cluster of N masters (redis-server and
// redis-cli on PATH) and closes it at the end; -cluster host:port,... uses a
// given one, whose masters must serve nothing else meanwhile (queues named
// dqbench-RUN-cap*, destroyed after each run):
//
//	go run ./cmd/dqbench -impl partitioned -local-cluster 3 -rounds 5
//
// -md prints markdown tables for a README; -json FILE writes the results for
// scripts/perfchart, which renders docs/perf.svg:
//
//	go run ./scripts/perfchart -run -out docs/perf.svg
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

type options struct {
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
	md, hist, quiet         bool
	jsonPath, cpuprofile    string
	seed                    uint64
	floorDelaySet, leadAuto bool

	// -impl redis
	redisAddr  string
	redisItems int
	redisBatch int
	delayMax   time.Duration
	asynqCheck time.Duration
	wakeCap    time.Duration
	set        map[string]bool // flags given on the command line

	// -impl partitioned
	localCluster int
	clusterAddrs string
	rounds       int
}

func main() {
	var o options
	flag.StringVar(&o.impl, "impl", "delayqueue", "implementation: delayqueue, afterfunc, heapcond, floor, all (comma-separated list allowed); or any of redis (redisq's Take loops), worker (redisq.Worker) and asynq at -redis; or partitioned (redisq.Partitioned's capacity on a Redis Cluster: -local-cluster or -cluster)")
	flag.StringVar(&o.mode, "mode", "burst", "burst: offer all, then due over -window; steady: offer at -rate with -delay; idle: blocked takers, CPU over -idle (-impl redis: steady unless given, burst refused)")
	flag.StringVar(&o.timer, "timer", "runtime", "delayqueue leader timer: runtime, precise (WithPreciseTimer) or both (idle mode: both unless set)")
	flag.IntVar(&o.items, "items", 1_000_000, "burst: number of items")
	flag.DurationVar(&o.window, "window", time.Second, "burst: deadlines fall uniformly over this window (0: all due at once)")
	flag.DurationVar(&o.lead, "lead", 0, "burst: time from the start of the offers to the window's opening (0: auto, 1s + 1µs per item)")
	flag.IntVar(&o.producers, "producers", 1, "offering goroutines")
	flag.IntVar(&o.consumers, "consumers", 1, "consuming goroutines (-impl redis: 4 unless given)")
	flag.IntVar(&o.batch, "batch", 256, "items per take: TakeBatch max (0 or 1: plain Take; -impl redis: 1 unless given, at most 1000)")
	flag.IntVar(&o.payload, "payload", 0, "payload bytes per item (0: the queue holds int64 indexes; else []byte of max(8, payload))")
	flag.Float64Var(&o.rate, "rate", 100_000, "steady: items offered per second, all producers together (-impl redis: 1000 unless given)")
	flag.DurationVar(&o.delay, "delay", 10*time.Millisecond, "steady: each item is due this long after it is offered")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "steady: how long producers offer")
	flag.IntVar(&o.floorSamples, "floor-samples", 2000, "floor: number of timer sleeps")
	flag.DurationVar(&o.floorDelay, "floor-delay", 0, "floor: sleeps are uniform in [0, floor-delay) (0: auto, 2*window/items clamped to [20µs, 2ms])")
	flag.IntVar(&o.idleTakers, "takers", 1000, "idle: blocked takers")
	flag.DurationVar(&o.idleFor, "idle", time.Second, "idle: real time over which CPU use is measured (-impl redis: length of the idle phase, 5s unless given; 0 skips it)")
	flag.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "-impl redis: Redis address (a scratch server: keys dqbench-* are created and deleted)")
	flag.IntVar(&o.redisItems, "redis-items", 20_000, "-impl redis: items in the backlog phase (enqueue/s, then delivered+acked/s; 0 skips it); -impl partitioned: items per queue and run (30,000 unless given)")
	flag.IntVar(&o.redisBatch, "redis-batch", 100, "-impl redis: the backlog phase also runs EnqueueMany(this many) by the producers and TakeBatch(this many)+AckMany by the consumers (0 skips); -impl partitioned: the TakeBatch(this many)+AckMany loop (0 skips)")
	flag.DurationVar(&o.delayMax, "delay-max", 0, "steady: when > -delay, each item's delay is uniform in [-delay, -delay-max]")
	flag.DurationVar(&o.asynqCheck, "asynq-check", 0, "-impl asynq: asynq.Config.DelayedTaskCheckInterval (0: asynq's default, 5s)")
	flag.DurationVar(&o.wakeCap, "wake-cap", time.Second, "-impl redis: redisq.WithWakeCap in the idle phase (the other phases use redisq's default)")
	flag.IntVar(&o.localCluster, "local-cluster", 0, "-impl partitioned: start a local Redis Cluster of this many masters (>= 3; redis-server and redis-cli on PATH) and close it at the end")
	flag.StringVar(&o.clusterAddrs, "cluster", "", "-impl partitioned: measure on this Redis Cluster (comma-separated host:port of its nodes; its masters must serve nothing else meanwhile)")
	flag.IntVar(&o.rounds, "rounds", 3, "-impl partitioned: rounds; each configuration is reported by its median round")
	flag.BoolVar(&o.md, "md", false, "print markdown tables")
	flag.BoolVar(&o.hist, "hist", true, "print a lateness histogram per implementation")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr")
	flag.StringVar(&o.jsonPath, "json", "", "write results as JSON to this file")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed for deadlines and floor delays")
	flag.Usage = func() {
		out := flag.CommandLine.Output()
		fmt.Fprintln(out, "dqbench measures delayqueue end to end (lateness, throughput, CPU, memory) next to the alternatives and the Redis backend.")
		fmt.Fprintln(out, "\nUsage: dqbench [flags]")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.set = map[string]bool{}
	flag.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.mode == "idle" && !o.set["timer"] {
		o.timer = "both" // the idle target is for both timers
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "dqbench:", err)
		flag.Usage()
		os.Exit(2)
	}

	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	rep := Report{Meta: o.meta()}
	if o.isPartitioned() {
		cr, err := runPartitioned(&o, &rep.Meta)
		rep.Capacity = cr
		if err != nil {
			if cr == nil || len(cr.Loops) == 0 {
				fatal(err)
			}
			fmt.Fprintln(os.Stderr, "dqbench:", err)
		}
	} else if o.isRedis() {
		rs, err := runRedis(&o, &rep.Meta)
		rep.Results = rs
		if err != nil {
			if len(rs) == 0 {
				fatal(err)
			}
			fmt.Fprintln(os.Stderr, "dqbench:", err)
		}
	} else {
		g0 := runtime.NumGoroutine()
		for _, name := range o.runs() {
			settle(g0)
			rep.Results = append(rep.Results, o.run(name))
		}
	}
	rep.Meta.LoadAvg = loadAvg()
	rep.print(os.Stdout, &o)
	if o.jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fatal(err)
		}
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			fatal(err)
		}
	}
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

// loadAvg returns the 1, 5 and 15 minute load averages where the OS has
// /proc/loadavg: other work on the machine shows up in tail lateness.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "dqbench:", err)
	os.Exit(1)
}

func (o *options) check() error {
	if o.isPartitioned() {
		return o.checkPartitioned()
	}
	if err := o.checkRedis(); err != nil {
		return err
	}
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
		case "delayqueue", "afterfunc", "heapcond", "floor", "all", "redis", "worker", "asynq", "partitioned":
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

func (o *options) run(name string) Result {
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
	var r Result
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

func (o *options) meta() Meta {
	m := Meta{
		Time:       time.Now().UTC().Format(time.RFC3339),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Args:       strings.Join(os.Args[1:], " "),
		Mode:       o.mode,
		Items:      o.items,
		WindowNs:   int64(o.window),
		LeadNs:     int64(o.lead),
		Producers:  o.producers,
		Consumers:  o.consumers,
		Batch:      o.batch,
		Payload:    o.payload,
		Rate:       o.rate,
		DelayNs:    int64(o.delay),
		DurationNs: int64(o.duration),
		FloorNs:    int64(o.floorDelay),
		Timer:      o.timer,
	}
	m.Title = o.title()
	return m
}

func (o *options) title() string {
	take := fmt.Sprintf("TakeBatch(%d)", o.batch)
	if o.batch <= 1 {
		take = "Take"
	}
	pay := ""
	if o.payload > 0 {
		pay = fmt.Sprintf(", %d B payload", max(8, o.payload))
	}
	if o.isPartitioned() {
		return o.partitionedTitle()
	}
	if o.isRedis() {
		return o.redisTitle(take, pay)
	}
	switch o.mode {
	case "steady":
		return fmt.Sprintf("steady: %s items/s, each due %v after offer, for %v; %d producer(s), %d consumer(s), %s%s",
			group(int64(o.rate)), o.delay, o.duration, o.producers, o.consumers, take, pay)
	case "idle":
		return fmt.Sprintf("idle: %d takers blocked, head 1h away, CPU over %v", o.idleTakers, o.idleFor)
	}
	return fmt.Sprintf("burst: %s items offered first, due uniformly over %v; %d producer(s), %d consumer(s), %s%s",
		group(int64(o.items)), o.window, o.producers, o.consumers, take, pay)
}
