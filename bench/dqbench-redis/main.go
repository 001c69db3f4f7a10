// Command dqbench-redis measures redisq, delayqueue's Redis backend, end to
// end against a Redis server, next to asynq, and redisq.Partitioned's
// capacity on a Redis Cluster. It writes the same report as dqbench, which
// measures the in-process queue and links no Redis client.
//
// -impl redis (the default) runs redisq against the server at -redis, on
// queues named dqbench-RUN-* whose keys it deletes at the end (point it at a
// scratch server with maxmemory-policy noeviction):
//
//	go run ./bench/dqbench-redis -impl redis -redis 127.0.0.1:6379 -rate 1000 -duration 10s
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
//	go run ./bench/dqbench-redis -impl redis,worker,asynq -redis 127.0.0.1:6379 -rate 1000 -duration 10s -delay 0 -delay-max 1s -idle 10s -wake-cap 5s
//
// -impl worker-mux runs the steady phase of -impl worker with items of 3
// kinds, round-robin, each a small JSON payload enqueued through its
// redisq.JobKind[T], and a Worker over a redisq.Mux of the 3 typed
// handlers; -impl worker-retain the same with each item's Job.Retention an
// hour and a small result (Message.SetResult), so every ack keeps the item
// completed. Beside -impl worker they end with a table of the cost of
// kinds (target: server commands and CPU per item within 5% of the plain
// Worker's) and of a kept item (retain - mux: CPU, and the growth of the
// server's used_memory, per item):
//
//	go run ./bench/dqbench-redis -impl worker,worker-mux,worker-retain,asynq -redis 127.0.0.1:6379 -rate 1000 -duration 10s -delay 0 -delay-max 1s
//
// Before each phase, with appendonly on, dqbench-redis rewrites the AOF and
// waits for the rewrite, so that a rewrite the phases before triggered
// (a fork) does not land on this one; a phase during which one ran anyway
// says so.
//
// -mode steady (the default) runs all three phases; -mode idle runs the idle
// phase alone; -mode burst is refused (a million-item burst over one second
// is not a Redis workload). -redis-items 0 or -idle 0 skip those phases.
//
// -mode limits measures what flow control costs (rate limits and
// concurrency limits, redisq.Queue.SetRateLimit and SetConcurrencyLimit),
// with -impl worker (a redisq.Worker), redis (the Take loops of -batch)
// and asynq: rows of the same load, -rate items/s for -duration due at
// once, handled by -consumers handlers that each hold an item -hold: an
// unlimited queue (the baseline); a rate limit of -limit-rate per second
// (half of -rate unless given) on the one limit key all items carry, so
// that the limiter is at its limit throughout; -limit-keys keys
// (default 1,000) with concurrency 1 each, items round-robin over them;
// and the same keys in runs of -limit-run consecutive items (0 skips the
// row), so that items wait for a place. asynq runs the unlimited row and
// its wiki's rate-limit pattern (golang.org/x/time/rate in the handler,
// per process); it has no per-key concurrency limit. It ends with a table
// of each row's server CPU per item over the unlimited redisq row's and
// over that of the unlimited row of its consumers (target, the
// flow-control issue: within 1.5x), the starts per second,
// the most starts in any second (never above the rate limit) and the
// lateness of starts from their rate slot (see limits.go):
//
//	go run ./bench/dqbench-redis -mode limits -impl worker,asynq -redis 127.0.0.1:6379 -rate 1000 -duration 5s
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
//	go run ./bench/dqbench-redis -impl partitioned -local-cluster 3 -rounds 5
//
// -md prints markdown tables for a README; -json FILE writes the results.
package main

import (
	"flag"
	"io"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
)

type options struct {
	report.Output
	impl, mode           string
	producers, consumers int
	batch, payload       int
	rate                 float64
	delay, duration      time.Duration
	idleFor              time.Duration
	seed                 uint64
	set                  map[string]bool // flags given on the command line

	// -impl redis
	redisAddr  string
	redisItems int
	redisBatch int
	delayMax   time.Duration
	asynqCheck time.Duration
	wakeCap    time.Duration

	// -mode limits
	limitRate, limitKeys, limitRun int
	hold                           time.Duration

	// -impl partitioned
	localCluster int
	clusterAddrs string
	rounds       int
}

func main() {
	o := options{Output: report.Output{Command: "dqbench-redis"}}
	flag.StringVar(&o.impl, "impl", "redis", "implementation: any of redis (redisq's Take loops), worker (redisq.Worker), worker-mux and worker-retain (a Worker over a Mux of 3 typed kinds, without and with Retention: steady phase only) and asynq at -redis (comma-separated: phase by phase, then compared); or partitioned (redisq.Partitioned's capacity on a Redis Cluster: -local-cluster or -cluster)")
	flag.StringVar(&o.mode, "mode", "steady", "steady: the backlog, idle and steady phases; idle: the idle phase alone; limits: the cost of rate and concurrency limits against an unlimited queue (-impl worker, redis, asynq)")
	flag.IntVar(&o.producers, "producers", 1, "steady: enqueueing goroutines (backlog: 8 unless given)")
	flag.IntVar(&o.consumers, "consumers", 4, "consuming goroutines; the Worker's and asynq's Concurrency")
	flag.IntVar(&o.batch, "batch", 1, "items per take: 1: Take+Ack, 0: AckTake, more: TakeBatch max, with AckMany (at most 1000)")
	flag.IntVar(&o.payload, "payload", 0, "payload bytes per item (at least 8, which hold the item's index)")
	flag.Float64Var(&o.rate, "rate", 1000, "steady: items enqueued per second, all producers together")
	flag.DurationVar(&o.delay, "delay", 10*time.Millisecond, "steady: each item is due this long after it is enqueued")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "steady: how long producers enqueue")
	flag.DurationVar(&o.idleFor, "idle", 5*time.Second, "length of the idle phase (0 skips it)")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed for the delays of -delay-max")
	flag.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "-impl redis: Redis address (a scratch server: keys dqbench-* are created and deleted)")
	flag.IntVar(&o.redisItems, "redis-items", 20_000, "-impl redis: items in the backlog phase (enqueue/s, then delivered+acked/s; 0 skips it); -impl partitioned: items per queue and run (30,000 unless given)")
	flag.IntVar(&o.redisBatch, "redis-batch", 100, "-impl redis: the backlog phase also runs EnqueueMany(this many) by the producers and TakeBatch(this many)+AckMany by the consumers (0 skips); -impl partitioned: the TakeBatch(this many)+AckMany loop (0 skips)")
	flag.DurationVar(&o.delayMax, "delay-max", 0, "steady: when > -delay, each item's delay is uniform in [-delay, -delay-max]")
	flag.DurationVar(&o.asynqCheck, "asynq-check", 0, "-impl asynq: asynq.Config.DelayedTaskCheckInterval (0: asynq's default, 5s)")
	flag.DurationVar(&o.wakeCap, "wake-cap", time.Second, "-impl redis: redisq.WithWakeCap in the idle phase (the other phases use redisq's default)")
	flag.IntVar(&o.limitRate, "limit-rate", 0, "-mode limits: the rate limit's N per second, below -rate (0: half of -rate)")
	flag.IntVar(&o.limitKeys, "limit-keys", 1000, "-mode limits: limit keys with concurrency 1 each")
	flag.IntVar(&o.limitRun, "limit-run", 8, "-mode limits: the conc-runs row's consecutive items per key (0 skips the row)")
	flag.DurationVar(&o.hold, "hold", time.Millisecond, "-mode limits: how long each handler holds its item")
	flag.IntVar(&o.localCluster, "local-cluster", 0, "-impl partitioned: start a local Redis Cluster of this many masters (>= 3; redis-server and redis-cli on PATH) and close it at the end")
	flag.StringVar(&o.clusterAddrs, "cluster", "", "-impl partitioned: measure on this Redis Cluster (comma-separated host:port of its nodes; its masters must serve nothing else meanwhile)")
	flag.IntVar(&o.rounds, "rounds", 3, "-impl partitioned: rounds; each configuration is reported by its median round. -mode limits: rounds of every row in turn (unlimited, rate, conc, ... then again), each limited row's ratio taken to the unlimited row of its round and reported by the median (1 unless given)")
	o.Parse("dqbench-redis measures redisq end to end on a Redis server (lateness, throughput, commands and CPU per item) next to asynq, and redisq.Partitioned's capacity on a Redis Cluster; dqbench measures the in-process queue.",
		func(given map[string]bool) error {
			o.set = given
			return o.check()
		})
	o.Main(o.meta(), func(rep *report.Report) error {
		var err error
		if o.isPartitioned() {
			rep.Capacity, err = runPartitioned(&o, &rep.Meta)
		} else {
			rep.Results, err = runRedis(&o, &rep.Meta)
		}
		return err
	}, report.Sections{
		Head: func(w io.Writer, rep *report.Report) {
			if rep.Capacity != nil {
				writeCapacity(w, &o, rep.Capacity)
			}
		},
		Tail: func(w io.Writer, rs []report.Result) { writeRedisSections(w, &o, rs) },
	})
}

func (o *options) check() error {
	if o.isPartitioned() {
		return o.checkPartitioned()
	}
	return o.checkRedis()
}

func (o *options) meta() report.Meta {
	m := report.NewMeta(o.title())
	m.Mode, m.Producers, m.Consumers, m.Batch, m.Payload = o.mode, o.producers, o.consumers, o.batch, o.payload
	m.Rate, m.DelayNs, m.DurationNs = o.rate, int64(o.delay), int64(o.duration)
	return m
}

func (o *options) title() string {
	if o.isPartitioned() {
		return o.partitionedTitle()
	}
	return o.redisTitle()
}
