package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/redisprobe"
	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// -impl redis: the Redis backend, measured in phases (see the package doc).

// redisRun is the state shared by the phases of one -impl redis run.
type redisRun struct {
	o      *options
	ctx    context.Context
	c      *redis.Client
	hook   *redisprobe.CountHook
	prefix string // queue names: prefix + phase
}

// redisImpls lists the Redis-backed implementations in -impl, in order:
// "redis" (redisq's Take/AckTake/TakeBatch loops), "worker" (a
// redisq.Worker), "worker-mux" and "worker-retain" (a Worker over a Mux of
// 3 typed kinds, without and with Retention; see jobs.go) and "asynq"
// (hibiken/asynq), alone or together.
func (o *options) redisImpls() []string {
	var r []string
	for _, s := range strings.Split(o.impl, ",") {
		if isRedisImpl(s) {
			r = append(r, s)
		}
	}
	return r
}

func isRedisImpl(s string) bool {
	switch s {
	case "redis", "worker", "worker-mux", "worker-retain", "asynq":
		return true
	}
	return false
}

// checkRedis checks the flags of -impl redis, worker, worker-mux,
// worker-retain and asynq.
func (o *options) checkRedis() error {
	for _, s := range strings.Split(o.impl, ",") {
		switch {
		case isRedisImpl(s):
		case s == "delayqueue", s == "afterfunc", s == "heapcond", s == "floor", s == "all":
			return report.WrongCommand{Impl: s, Where: "in process", Command: "dqbench"}
		default:
			return fmt.Errorf("unknown -impl %q", s)
		}
	}
	switch o.mode {
	case "steady", "idle":
	case "limits":
		if err := o.checkLimits(); err != nil {
			return err
		}
	case "burst":
		return fmt.Errorf("-impl redis: -mode burst is not supported (a million items over one second is not a Redis workload); use -mode steady (lateness at -rate, plus the backlog and idle phases), -mode idle or -mode limits")
	default:
		return fmt.Errorf("unknown -mode %q", o.mode)
	}
	if o.producers <= 0 || o.consumers <= 0 || o.rate <= 0 {
		return fmt.Errorf("-producers, -consumers and -rate must be > 0")
	}
	if o.batch > redisq.MaxBatch {
		return fmt.Errorf("-impl redis: -batch %d > %d", o.batch, redisq.MaxBatch)
	}
	if o.redisItems < 0 || o.idleFor < 0 || o.redisBatch < 0 || o.redisBatch > redisq.MaxBatch {
		return fmt.Errorf("-redis-items and -idle must be >= 0, -redis-batch in 0..%d", redisq.MaxBatch)
	}
	if o.mode == "steady" && o.delayMax > 0 && o.delayMax < o.delay {
		return fmt.Errorf("-delay-max must be >= -delay")
	}
	if o.wakeCap < 10*time.Millisecond {
		return fmt.Errorf("-wake-cap must be >= 10ms")
	}
	return nil
}

func (o *options) redisTitle() string {
	take, pay := report.TitleParts(o.batch, o.payload)
	if o.batch > 1 {
		take += "+AckMany"
	} else {
		take += "+Ack"
	}
	idle := fmt.Sprintf("idle: %d consumers blocked for %v, head 1h away, wake cap %v", o.consumers, o.idleFor, o.wakeCap)
	if o.mode == "idle" {
		return "redis " + idle
	}
	if o.mode == "limits" {
		return o.limitsTitle()
	}
	var ph []string
	if o.redisItems > 0 {
		ph = append(ph, fmt.Sprintf("backlog: %s items enqueued by %d producers, drained by %d consumers",
			report.Group(int64(o.redisItems)), o.backlogProducers(), o.consumers))
	}
	if o.idleFor > 0 {
		ph = append(ph, idle)
	}
	delay := o.delay.String()
	if o.delayMax > o.delay {
		delay = o.delay.String() + "-" + o.delayMax.String()
	}
	ph = append(ph, fmt.Sprintf("steady: %s items/s, each due %s after EnqueueAfter, for %v; %d producer(s), %d consumer(s)",
		report.Group(int64(o.rate)), delay, o.duration, o.producers, o.consumers))
	how := ""
	if slices.Contains(o.redisImpls(), "redis") {
		how = take // the consumer loops of -impl redis
	}
	if pay != "" {
		how = strings.TrimPrefix(how+pay, ", ")
	}
	if how != "" {
		how = " (" + how + ")"
	}
	return fmt.Sprintf("%s%s: %s", strings.Join(o.redisImpls(), " vs "), how, strings.Join(ph, "; "))
}

func (o *options) backlogProducers() int {
	if o.set["producers"] {
		return o.producers
	}
	return 8
}

// runRedis connects, runs the phases and deletes the queues' keys. It
// returns the results gathered so far with the first error.
func runRedis(o *options, meta *report.Meta) ([]report.Result, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h := &redisprobe.CountHook{}
	c := redis.NewClient(&redis.Options{Addr: o.redisAddr, PoolSize: 2*(o.consumers+max(o.producers, o.backlogProducers())) + 16})
	defer c.Close()
	c.AddHook(h)
	meta.Redis = serverInfo(ctx, c, o.redisAddr)
	if meta.Redis == "" {
		return nil, fmt.Errorf("cannot reach Redis at %s: %w", o.redisAddr, c.Ping(ctx).Err())
	}
	run := &redisRun{o: o, ctx: ctx, c: c, hook: h,
		prefix: "dqbench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"}
	defer func() {
		if n := run.cleanup(); n > 0 {
			o.Warnf("%d keys %s* left behind", n, run.prefix)
		}
	}()

	// Phase by phase, each implementation in turn, so that all see the
	// machine in about the same state.
	type phase struct {
		impl string
		run  func() ([]report.Result, error)
	}
	var phases []phase
	// add adds a phase of each implementation in byImpl (one it lacks
	// has none: worker-mux and worker-retain run the steady phase alone).
	add := func(byImpl map[string]func() ([]report.Result, error)) {
		for _, impl := range o.redisImpls() {
			if f := byImpl[impl]; f != nil {
				phases = append(phases, phase{impl, f})
			}
		}
	}
	if o.mode == "steady" && o.redisItems > 0 {
		add(map[string]func() ([]report.Result, error){"redis": run.backlog, "worker": one(run.workerBacklog), "asynq": run.asynqBacklog})
	}
	if (o.idleFor > 0 && o.mode != "limits") || o.mode == "idle" {
		add(map[string]func() ([]report.Result, error){"redis": one(run.idle), "worker": one(run.workerIdle), "asynq": run.asynqIdle})
	}
	if o.mode == "steady" {
		add(map[string]func() ([]report.Result, error){"redis": one(run.steady), "worker": one(run.workerSteady), "asynq": run.asynqSteady,
			"worker-mux": one(run.workerMuxSteady), "worker-retain": one(run.workerRetainSteady)})
	}
	if o.mode == "limits" {
		for _, f := range run.limitsPhases() {
			phases = append(phases, phase{"", f})
		}
	}
	var rs []report.Result
	for _, ph := range phases {
		// Each phase starts with a compact AOF and no rewrite running, so
		// that the rewrite the phases before triggered does not land on
		// this one (a fork competing for the CPU).
		before, err := run.quiesceAOF()
		if err != nil {
			o.Warnf("%v", err)
		}
		r, err := ph.run()
		if n := run.aofRewrites() - before; before >= 0 && n > 0 {
			for i := range r {
				r[i].Note = report.JoinNote(r[i].Note, fmt.Sprintf("%d AOF rewrite(s) ran during this phase (a fork: expect it slower)", n))
			}
		}
		rs = append(rs, r...)
		if err != nil {
			return rs, err
		}
		if ctx.Err() != nil {
			return rs, ctx.Err()
		}
	}
	return rs, nil
}

// aofRewrites returns the server's count of AOF rewrites (INFO persistence
// aof_rewrites), or -1.
func (r *redisRun) aofRewrites() int64 {
	info, err := r.c.Info(r.ctx, "persistence").Result()
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(infoField(info, "aof_rewrites"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// quiesceAOF waits for a running AOF rewrite or RDB save to end, then,
// with appendonly on, rewrites the AOF (BGREWRITEAOF) and waits for that
// too (up to a minute). It returns the rewrite count afterwards.
func (r *redisRun) quiesceAOF() (int64, error) {
	busy := func() (aof, busy bool, err error) {
		info, err := r.c.Info(r.ctx, "persistence").Result()
		if err != nil {
			return false, false, err
		}
		aof = infoField(info, "aof_enabled") == "1"
		busy = infoField(info, "aof_rewrite_in_progress") == "1" || infoField(info, "aof_rewrite_scheduled") == "1" ||
			infoField(info, "rdb_bgsave_in_progress") == "1"
		return aof, busy, nil
	}
	wait := func() error {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			_, b, err := busy()
			if err != nil || !b {
				return err
			}
			if time.Now().After(deadline) {
				return errors.New("an AOF rewrite or RDB save still runs after a minute")
			}
		}
	}
	if err := wait(); err != nil {
		return r.aofRewrites(), err
	}
	aof, _, err := busy()
	if err != nil || !aof {
		return r.aofRewrites(), err
	}
	if err := r.c.BgRewriteAOF(r.ctx).Err(); err != nil {
		return r.aofRewrites(), fmt.Errorf("BGREWRITEAOF: %w", err)
	}
	time.Sleep(20 * time.Millisecond) // let it be scheduled
	err = wait()
	return r.aofRewrites(), err
}

func one(f func() (report.Result, error)) func() ([]report.Result, error) {
	return func() ([]report.Result, error) {
		r, err := f()
		return []report.Result{r}, err
	}
}

// serverInfo describes the server ("" if unreachable).
func serverInfo(ctx context.Context, c *redis.Client, addr string) string {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	s := "redis " + infoField(info, "redis_version") + " at " + addr
	if cfg, err := c.ConfigGet(ctx, "appendonly").Result(); err == nil {
		s += ", appendonly " + cfg["appendonly"]
		if cfg["appendonly"] == "yes" {
			if f, err := c.ConfigGet(ctx, "appendfsync").Result(); err == nil {
				s += ", appendfsync " + f["appendfsync"]
			}
		}
	}
	return s
}

func infoField(info, name string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(l, "\r"), name+":"); ok {
			return v
		}
	}
	return "?"
}

// serverCPU returns redis-server's user+system CPU time so far (-1: unknown).
func serverCPU(ctx context.Context, c *redis.Client) time.Duration {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return -1
	}
	u, err1 := strconv.ParseFloat(infoField(info, "used_cpu_user"), 64)
	s, err2 := strconv.ParseFloat(infoField(info, "used_cpu_sys"), 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration((u + s) * 1e9)
}

// commandCalls returns INFO commandstats call counts by command (nil: not
// available).
func commandCalls(ctx context.Context, c *redis.Client) map[string]int64 {
	calls, _ := commandStats(ctx, c)
	return calls
}

// commandStats returns INFO commandstats call counts and time (usec) by
// command (nil: not available).
func commandStats(ctx context.Context, c *redis.Client) (calls, usec map[string]int64) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, nil
	}
	return parseCommandStats(info)
}

// parseCommandStats reads the text of INFO commandstats.
func parseCommandStats(info string) (calls, usec map[string]int64) {
	calls, usec = map[string]int64{}, map[string]int64{}
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimRight(l, "\r"), ":calls=")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		n, rest, _ := strings.Cut(rest, ",")
		calls[name], _ = strconv.ParseInt(n, 10, 64)
		if u, ok := strings.CutPrefix(rest, "usec="); ok {
			u, _, _ = strings.Cut(u, ",")
			usec[name], _ = strconv.ParseInt(u, 10, 64)
		}
	}
	return calls, usec
}

// perItemNote describes the commands the producers and consumers sent per
// delivered item in the steady phase (go-redis hook, which sees only what
// they send under their own contexts; the server's own count, scripts' calls
// included, is in setServer's note).
func perItemNote(h *redisprobe.CountHook, o *options, items int) string {
	if items == 0 {
		return ""
	}
	var prod, scripts, bz, other int64
	for i := range o.consumers + o.producers {
		c := h.Counts(i)
		if i >= o.consumers {
			prod += c.Scripts + c.BZPopMin + c.Other
			continue
		}
		scripts += c.Scripts
		bz += c.BZPopMin
		other += c.Other
	}
	f := func(n int64) string { return strconv.FormatFloat(float64(n)/float64(items), 'f', 2, 64) }
	return fmt.Sprintf("commands sent per delivered item (go-redis hook): producers %s, consumers %s = %s scripts (claims, acks) + %s BZPOPMIN + %s other",
		f(prod), f(scripts+bz+other), f(scripts), f(bz), f(other))
}

// cleanup deletes every key of this run's queues and returns how many are
// still there afterwards.
func (r *redisRun) cleanup() int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := func() int {
		n := 0
		for _, pattern := range []string{"{dq:" + r.prefix + "*", "asynq:{" + r.prefix + "*"} {
			n += r.scanDelete(ctx, pattern)
		}
		return n
	}
	del()
	if qs, err := r.c.SMembers(ctx, "asynq:queues").Result(); err == nil {
		for _, q := range qs {
			if strings.HasPrefix(q, r.prefix) {
				r.c.SRem(ctx, "asynq:queues", q)
			}
		}
	}
	return del()
}

// scanDelete deletes the keys matching pattern and returns how many it
// found.
func (r *redisRun) scanDelete(ctx context.Context, pattern string) int {
	n := 0
	iter := r.c.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		n++
		if len(batch) == 500 {
			r.c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		r.c.Unlink(ctx, batch...)
	}
	return n
}

func (r *redisRun) newQueue(phase string, opts ...redisq.Option) (*redisq.Queue, error) {
	return redisq.New(r.ctx, r.c, r.prefix+phase, opts...)
}

// consumer runs Take+Ack (batch 1), an AckTake loop (batch 0) or
// TakeBatch+AckMany (batch > 1) until ctx is done, handing each delivery to
// got with its receive instant first.
func consumer(ctx context.Context, q *redisq.Queue, batch int, got func(recv time.Time, ms []*redisq.Message), errs *atomic.Value) {
	ackCtx := context.WithoutCancel(ctx)
	if batch == 0 {
		ackTakeLoop(ctx, q, got, errs)
		return
	}
	for {
		var ms []*redisq.Message
		var err error
		if batch <= 1 {
			var m *redisq.Message
			if m, err = q.Take(ctx); err == nil {
				ms = []*redisq.Message{m}
			}
		} else {
			ms, err = q.TakeBatch(ctx, batch)
		}
		if err != nil {
			if ctx.Err() == nil {
				errs.CompareAndSwap(nil, err)
			}
			return
		}
		got(time.Now(), ms)
		if len(ms) == 1 {
			err = ms[0].Ack(ackCtx)
		} else {
			err = errors.Join(q.AckMany(ackCtx, ms)...)
		}
		if err != nil {
			errs.CompareAndSwap(nil, fmt.Errorf("ack: %w", err))
		}
	}
}

// ackTakeLoop is consumer's AckTake loop: each call acks the last item and
// takes the next, in one round trip when one is due.
func ackTakeLoop(ctx context.Context, q *redisq.Queue, got func(recv time.Time, ms []*redisq.Message), errs *atomic.Value) {
	var prev *redisq.Message
	for {
		m, err := q.AckTake(ctx, prev)
		if err != nil {
			if ctx.Err() == nil {
				errs.CompareAndSwap(nil, err)
				return
			}
			// Stopped: prev's ack may not have run; Ack settles it (a
			// repeat of an applied ack returns nil).
			if prev != nil {
				if err := prev.Ack(context.WithoutCancel(ctx)); err != nil {
					errs.CompareAndSwap(nil, fmt.Errorf("ack: %w", err))
				}
			}
			return
		}
		got(time.Now(), []*redisq.Message{m})
		prev = m
	}
}

func payload(o *options, i int) []byte {
	b := make([]byte, max(8, o.payload))
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b
}

// backlog: enqueue throughput, then delivered+acked throughput draining the
// backlog with o.consumers consumers; with -redis-batch, again with
// EnqueueMany and TakeBatch+AckMany, and with EnqueueAfter and AckTake.
func (r *redisRun) backlog() ([]report.Result, error) {
	res, err := r.backlogWith("redis/backlog", 1, r.o.batch)
	rs := []report.Result{res}
	if err != nil || r.o.redisBatch <= 1 {
		return rs, err
	}
	res, err = r.backlogWith("redis/backlog-batch", r.o.redisBatch, r.o.redisBatch)
	rs = append(rs, res)
	if err != nil {
		return rs, err
	}
	res, err = r.backlogWith("redis/backlog-acktake", 1, 0)
	return append(rs, res), err
}

// backlogWith runs one backlog phase: producers enqueue in batches of
// enq (1: Enqueue, else EnqueueMany), consumers take batches of take
// (1: Take+Ack, 0: AckTake, -1: a redisq.Worker, else TakeBatch+AckMany).
func (r *redisRun) backlogWith(name string, enq, take int) (report.Result, error) {
	o := r.o
	n := o.redisItems
	res := report.Result{Name: name, Kind: "queue", Mode: "backlog", Items: n, HeapPerItem: -1}
	phase := strings.ReplaceAll(name, "/", "-")
	q, err := r.newQueue(phase)
	if err != nil {
		res.Note = err.Error()
		return res, err
	}
	defer q.Close()
	// The producers use a Queue of their own on a client of their own,
	// with go-redis' defaults, as a program would.
	pc := redis.NewClient(&redis.Options{Addr: o.redisAddr})
	defer pc.Close()
	pq, err := redisq.New(r.ctx, pc, r.prefix+phase)
	if err != nil {
		res.Note = err.Error()
		return res, err
	}
	defer pq.Close()
	var offered, delivered atomic.Int64
	start := time.Now()
	stopProgress := o.Progress(res.Name, n, &offered, &delivered, start)
	defer stopProgress()
	cpu0, s0 := report.CPUTime(), snapServer(r.ctx, r.c)

	// Enqueue as fast as the producers can, all items due at once.
	err = produceAll(o.backlogProducers(), n, enq, func(lo, hi int) error {
		return enqueueRange(r.ctx, pq, o, lo, hi)
	}, &offered)
	el := time.Since(start)
	res.OfferSeconds = el.Seconds()
	res.OfferRate = float64(offered.Load()) / el.Seconds()
	s1 := snapServer(r.ctx, r.c)
	var errs atomic.Value
	if err != nil {
		err = fmt.Errorf("enqueue: %w", err)
		res.Note = err.Error()
		return res, err
	}

	// Drain with the consumers.
	seen := make([]atomic.Bool, n)
	var dups atomic.Int64
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	allDone := make(chan struct{})
	d0 := time.Now()
	got := func(_ time.Time, ms []*redisq.Message) {
		for _, m := range ms {
			i, _ := strconv.Atoi(m.ID)
			if !seen[i].CompareAndSwap(false, true) {
				dups.Add(1)
				continue
			}
			if delivered.Add(1) == int64(n) {
				close(allDone)
			}
		}
	}
	var stop func()
	var wg sync.WaitGroup
	if take < 0 {
		stop = startWorker(ctx, q, o.consumers, got, &errs)
	} else {
		for range o.consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				consumer(ctx, q, take, got, &errs)
			}()
		}
		stop = func() { cancel(); wg.Wait() }
	}
	limit := 30*time.Second + time.Duration(n)*time.Millisecond
	select {
	case <-allDone:
	case <-time.After(limit):
		res.Note = report.JoinNote(res.Note, "timed out draining")
	case <-r.ctx.Done():
	}
	// Delivered+acked: the last consumer to finish its ack ends the phase.
	stop()
	drain := time.Since(d0)
	res.CPUSeconds = (report.CPUTime() - cpu0).Seconds()
	res.Delivered = int(delivered.Load())
	res.Duplicates = int(dups.Load())
	res.DeliverRate = float64(res.Delivered) / drain.Seconds()
	if n > 0 {
		res.CPUPerItemNs = res.CPUSeconds * 1e9 / float64(n)
	}
	how, put := "Take+Ack", "Enqueue"
	switch {
	case take < 0:
		how = fmt.Sprintf("a Worker with Concurrency %d", o.consumers)
	case take == 0:
		how = "AckTake"
	case take > 1:
		how = fmt.Sprintf("TakeBatch(%d)+AckMany", take)
	}
	if enq > 1 {
		put = fmt.Sprintf("EnqueueMany(%d)", enq)
	}
	res.Note = report.JoinNote(res.Note, fmt.Sprintf("offer/s = %s by %d producers, each its own loop (%v), deliver/s = %s by %d consumers (%v); CPU: this process's, per item enqueued+taken+acked",
		put, o.backlogProducers(), el.Round(time.Millisecond), how, o.consumers, drain.Round(time.Millisecond)))
	setServer(&res, n, s0, s1, snapServer(r.ctx, r.c))
	if err, _ := errs.Load().(error); err != nil {
		res.Note = report.JoinNote(res.Note, err.Error())
		return res, err
	}
	if res.Delivered < n {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d items NOT delivered", n-res.Delivered))
	}
	return res, nil
}

// produceAll is the producer loop a program writes: p goroutines, each
// enqueueing its own share, producer k items [k·chunk, (k+1)·chunk),
// [(k+p)·chunk, ...) and so on (chunk 1: k, k+p, k+2p, ...), one call
// after the other, until n. send(lo, hi) enqueues items lo..hi-1. It
// returns the first error (each producer stops at its own).
func produceAll(p, n, chunk int, send func(lo, hi int) error, offered *atomic.Int64) error {
	var wg sync.WaitGroup
	var first atomic.Value
	for k := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := k * chunk; lo < n; lo += p * chunk {
				hi := min(lo+chunk, n)
				if err := send(lo, hi); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				offered.Add(int64(hi - lo))
			}
		}()
	}
	wg.Wait()
	err, _ := first.Load().(error)
	return err
}

// enqueueRange enqueues items lo..hi-1, due now: one Enqueue for a single
// item (q.Enqueue(ctx, id, payload, time.Now()), as a program writes it),
// else one EnqueueMany.
func enqueueRange(ctx context.Context, q *redisq.Queue, o *options, lo, hi int) error {
	if hi-lo == 1 {
		return q.Enqueue(ctx, strconv.Itoa(lo), payload(o, lo), time.Now())
	}
	items := make([]redisq.EnqueueItem, 0, hi-lo)
	for i := lo; i < hi; i++ {
		items = append(items, redisq.EnqueueItem{ID: strconv.Itoa(i), Payload: payload(o, i)})
	}
	rs, err := q.EnqueueMany(ctx, items)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// itemDelay is item i's delay in the steady phase: -delay, or uniform in
// [-delay, -delay-max] (the same for every implementation in a run).
func (o *options) itemDelay(i int) time.Duration {
	if o.delayMax <= o.delay {
		return o.delay
	}
	x := uint64(i)*0x9e3779b97f4a7c15 + o.seed
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return o.delay + time.Duration(x%uint64(o.delayMax-o.delay+1))
}

// waitTail waits for done: at least the last item's delay plus 5s past the
// offers, even when the producers fell behind -rate. It reports whether done
// came.
func (o *options) waitTail(ctx context.Context, done <-chan struct{}, start time.Time) bool {
	d := max(o.delay, o.delayMax)
	limit := max(o.duration+d+max(5*time.Second, d)-time.Since(start), d+5*time.Second)
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	case <-ctx.Done():
		return true
	}
}

// steady: lateness at o.rate items/s, with Take+Ack (or TakeBatch+AckMany)
// consumers.
func (r *redisRun) steady() (report.Result, error) {
	return r.steadyWith("redis", nil, func(ctx context.Context, q *redisq.Queue, got func(time.Time, []*redisq.Message), errs *atomic.Value) func() {
		var cwg sync.WaitGroup
		for c := range r.o.consumers {
			cwg.Add(1)
			go func() {
				defer cwg.Done()
				consumer(redisprobe.WithCaller(ctx, c), q, r.o.batch, got, errs)
			}()
		}
		return cwg.Wait
	})
}

// steadyWith runs the steady phase as name, with the consumers that
// consume starts: they hand each delivery to got with its receive instant,
// until ctx is done, and the function consume returns waits for them.
// enqueue sends item i due delay after Redis TIME (nil: q.EnqueueAfter of
// payload(i), the item's index in 8 bytes, and no Job).
func (r *redisRun) steadyWith(name string, enqueue func(ctx context.Context, q *redisq.Queue, i int, delay time.Duration) error, consume func(ctx context.Context, q *redisq.Queue, got func(time.Time, []*redisq.Message), errs *atomic.Value) func()) (report.Result, error) {
	o := r.o
	n := int(o.rate * o.duration.Seconds())
	res := report.Result{Name: name, Kind: "queue", Mode: "steady", Items: n, HeapPerItem: -1}
	off0, rtt0, err := redisprobe.Calibrate(r.ctx, r.c, 200)
	if err != nil {
		res.Note = err.Error()
		return res, err
	}
	q, err := r.newQueue(name + "-steady")
	if err != nil {
		res.Note = err.Error()
		return res, err
	}
	defer q.Close()

	lat := make([]int64, n)     // receive (Redis clock) - Message.Due, ns
	byRedis := make([]int64, n) // ClaimedAt - Due, ns (ms resolution)
	recvAt := make([]int64, n)  // receive, ns since start
	dueAt := make([]int64, n)   // Message.Due mapped to the local clock, ns since start
	sentAt := make([]int64, n)  // local instant just before EnqueueAfter, ns since start
	claimed := make([]int64, n) // ClaimedAt (Redis clock), ns since start mapped to the local clock
	seen := make([]atomic.Bool, n)
	var offered, delivered, dups atomic.Int64
	var errs atomic.Value
	allDone := make(chan struct{})
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	if enqueue == nil {
		enqueue = func(ctx context.Context, q *redisq.Queue, i int, delay time.Duration) error {
			_, err := q.EnqueueAfter(ctx, strconv.Itoa(i), payload(o, i), delay)
			return err
		}
	}
	h := r.hook
	h.Reset(o.consumers + o.producers) // consumers 0.., then producers
	s0 := snapServer(r.ctx, r.c)
	start := time.Now()
	stopProgress := o.Progress(res.Name, n, &offered, &delivered, start)
	cpu0 := report.CPUTime()

	wait := consume(ctx, q, func(recv time.Time, ms []*redisq.Message) {
		since := int64(recv.Sub(start))
		for _, m := range ms {
			i, err := strconv.Atoi(m.ID)
			if err != nil || i < 0 || i >= n {
				continue
			}
			if !seen[i].CompareAndSwap(false, true) {
				dups.Add(1)
				continue
			}
			lat[i] = int64(recv.Add(off0).Sub(m.Due))
			byRedis[i] = int64(m.ClaimedAt.Sub(m.Due))
			recvAt[i] = since
			dueAt[i] = int64(m.Due.Add(-off0).Sub(start))
			claimed[i] = int64(m.ClaimedAt.Add(-off0).Sub(start))
			if delivered.Add(1) == int64(n) {
				close(allDone)
			}
		}
	}, &errs)

	produceAtRate(o, n, start, func(p, i int) error {
		sentAt[i] = int64(time.Since(start))
		return enqueue(redisprobe.WithCaller(r.ctx, o.consumers+p), q, i, o.itemDelay(i))
	}, &offered, &errs)
	offerDone := time.Since(start)
	res.OfferSeconds = offerDone.Seconds()
	res.OfferRate = float64(offered.Load()) / offerDone.Seconds()

	// Wait for the tail (at least the last item's delay plus 5s, even when
	// the producers fell behind -rate).
	if !o.waitTail(r.ctx, allDone, start) {
		res.Note = report.JoinNote(res.Note, "timed out waiting for deliveries")
	}
	cpu1 := report.CPUTime()
	cancel()
	wait()
	stopProgress()
	s1 := snapServer(r.ctx, r.c)
	off1, rtt1, err := redisprobe.Calibrate(r.ctx, r.c, 200)
	if err != nil {
		off1, rtt1 = off0, rtt0
	}

	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.Delivered = int(delivered.Load())
	res.Duplicates = int(dups.Load())
	if res.Delivered > 0 {
		res.CPUPerItemNs = float64(cpu1-cpu0) / float64(res.Delivered)
	}
	// Early: claimed (Redis TIME in the claim script) before Redis TIME at
	// the EnqueueAfter call + delay. The call's Redis TIME is at or after the
	// local instant before it mapped through the offset, which is off by at
	// most unc; so with that slack no on-time item is counted.
	unc := max(rtt0, rtt1)/2 + absDur(off1-off0)
	var ls, rs []int64
	first, last := int64(1<<62), int64(0)
	for i := range seen {
		if !seen[i].Load() {
			continue
		}
		if lat[i] < 0 || claimed[i] < sentAt[i]+int64(o.itemDelay(i)-unc) {
			res.Early++
		}
		ls = append(ls, lat[i])
		rs = append(rs, byRedis[i])
		first = min(first, dueAt[i])
		last = max(last, recvAt[i])
	}
	if len(ls) > 0 && last > first {
		res.DeliverRate = float64(len(ls)) / (float64(last-first) / 1e9)
	}
	res.SetLateness(ls)
	res.Note = report.JoinNote(res.Note, fmt.Sprintf("delivered early: %d (must be 0: claimed before Redis TIME at the EnqueueAfter call + delay, to within ±%v)",
		res.Early, unc.Round(time.Microsecond)))
	res.Note = report.JoinNote(res.Note, fmt.Sprintf("lateness = receive instant on the Redis clock - Message.Due (ms); clock offset from min-RTT TIME round trips: RTT %v before, %v after, offset drift %v over the run: uncertainty about ±%v",
		rtt0.Round(time.Microsecond), rtt1.Round(time.Microsecond), (off1-off0).Round(time.Microsecond), unc.Round(time.Microsecond)))
	if len(rs) > 0 {
		slices.Sort(rs)
		q := func(p float64) string { return report.Dur(rs[int(p*float64(len(rs)-1))]) }
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("by Redis TIME alone (claim script TIME - due, 1ms resolution): p50 %s, p99 %s, p99.9 %s, max %s",
			q(0.5), q(0.99), q(0.999), q(1)))
	}
	if res.Lateness != nil && o.rate == 1000 {
		verdict := "PASS"
		if res.Delivered < n || res.Lateness.P99 > int64(10*time.Millisecond) {
			verdict = "FAIL"
		}
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("target p99 <= 10ms at 1,000 items/s, all delivered: %s", verdict))
	}
	if o.rate > 0 && res.OfferRate < 0.95*o.rate {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("the producers fell behind -rate (%s/s offered)", report.Rate(res.OfferRate)))
	}
	setServer(&res, res.Delivered, s0, s1)
	setServerMem(&res, res.Delivered, s0, s1)
	if s := perItemNote(h, o, res.Delivered); s != "" {
		res.Note = report.JoinNote(res.Note, s)
	}
	if st, err := q.Stats(r.ctx); err == nil {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("redisq stats: enqueued %d, delivered %d, acked %d, expired %d, in flight %d, scheduled %d, completed (kept) %d",
			st.Counters["enqueued"], st.Counters["delivered"], st.Counters["acked"], st.Counters["expired"], st.InFlight, st.Scheduled, st.Completed))
		res.Kept = int(st.Completed)
	}
	if res.Delivered < n {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d items NOT delivered", n-res.Delivered))
	}
	if err, _ := errs.Load().(error); err != nil {
		res.Note = report.JoinNote(res.Note, err.Error())
		return res, err
	}
	return res, nil
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// idle: consumers blocked with nothing due; count what each sends.
func (r *redisRun) idle() (report.Result, error) {
	o := r.o
	res := report.Result{Name: "redis/idle", Kind: "idle", Mode: "idle", Items: o.consumers, HeapPerItem: -1}
	ri := &report.RedisIdle{WakeCapNs: int64(o.wakeCap), ServerBZPopMin: -1, ServerEval: -1}
	res.RedisIdle = ri
	q, err := r.newQueue("idle", redisq.WithWakeCap(o.wakeCap))
	if err != nil {
		res.Note = err.Error()
		return res, err
	}
	defer q.Close()
	if _, err := q.EnqueueAfter(r.ctx, "head", payload(o, 0), time.Hour); err != nil {
		res.Note = err.Error()
		return res, err
	}
	h := r.hook
	h.Reset(o.consumers)
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	var errs atomic.Value
	var wg sync.WaitGroup
	for i := range o.consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consumer(redisprobe.WithCaller(ctx, i), q, o.batch, func(time.Time, []*redisq.Message) {
				errs.CompareAndSwap(nil, errors.New("idle phase: an item was delivered"))
			}, &errs)
		}()
	}
	// Wait until every consumer has sent its first BZPOPMIN, then one more
	// second for the first claims and waits to settle.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		all := true
		for i := range o.consumers {
			all = all && h.Counts(i).BZPopMin > 0
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			res.Note = "not every consumer blocked within 10s"
			break
		}
	}
	time.Sleep(min(time.Second, o.wakeCap/2))

	snap := func() (bz, cl, ot []int64, waitNs, waits int64) {
		for i := range o.consumers {
			c := h.Counts(i)
			bz = append(bz, c.BZPopMin)
			cl = append(cl, c.Scripts)
			ot = append(ot, c.Other)
		}
		n, blocked := h.Waits()
		return bz, cl, ot, int64(blocked), n
	}
	s0 := snapServer(r.ctx, r.c)
	calls0 := s0.calls
	bz0, cl0, ot0, wn0, w0 := snap()
	cpu0 := report.CPUTime()
	t0 := time.Now()
	select {
	case <-time.After(o.idleFor):
	case <-r.ctx.Done():
	}
	el := time.Since(t0)
	cpu1 := report.CPUTime()
	bz1, cl1, ot1, wn1, w1 := snap()
	s1 := snapServer(r.ctx, r.c)
	calls1 := s1.calls
	setIdle(&res, s0, s1, el)
	cancel()
	wg.Wait()

	res.IdleSeconds = el.Seconds()
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	var sumBZ, sumCl int64
	pass := true
	// One wait per wake cap, a claim after each, nothing else.
	maxWaits := int64(el/o.wakeCap) + 1
	for i := range o.consumers {
		b, c, x := bz1[i]-bz0[i], cl1[i]-cl0[i], ot1[i]-ot0[i]
		ri.BZPopMin = append(ri.BZPopMin, b)
		ri.Claims = append(ri.Claims, c)
		ri.Other = append(ri.Other, x)
		sumBZ += b
		sumCl += c
		pass = pass && b <= maxWaits && c <= b+1 && x == 0
	}
	res.Wakeups = uint64(sumBZ)
	if w1 > w0 {
		ri.MeanWaitNs = (wn1 - wn0) / (w1 - w0)
	}
	if calls0 != nil && calls1 != nil {
		ri.ServerBZPopMin = calls1["bzpopmin"] - calls0["bzpopmin"]
		ri.ServerEval = calls1["evalsha"] + calls1["eval"] - calls0["evalsha"] - calls0["eval"]
	}
	ri.Pass = pass
	if err, _ := errs.Load().(error); err != nil {
		res.Note = report.JoinNote(res.Note, err.Error())
		return res, err
	}
	return res, nil
}

// produceAtRate enqueues items 0..n-1 from o.producers goroutines, each
// sending its share at o.rate/o.producers items per second from start, and
// returns when they are done or one failed (the first error goes to errs).
// enqueue(p, i) sends item i from producer p.
func produceAtRate(o *options, n int, start time.Time, enqueue func(p, i int) error, offered *atomic.Int64, errs *atomic.Value) {
	var pwg sync.WaitGroup
	for p := range o.producers {
		lo, hi := p*n/o.producers, (p+1)*n/o.producers
		rate := o.rate / float64(o.producers)
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			t0 := time.Since(start)
			for k, i := 0, lo; i < hi; {
				now := time.Since(start)
				for ; i < hi && t0+time.Duration(float64(k)/rate*1e9) <= now; i, k = i+1, k+1 {
					if err := enqueue(p, i); err != nil {
						errs.CompareAndSwap(nil, fmt.Errorf("enqueue: %w", err))
						return
					}
					offered.Add(1)
				}
				if i < hi {
					time.Sleep(t0 + time.Duration(float64(k)/rate*1e9) - time.Since(start))
				}
			}
		}()
	}
	pwg.Wait()
}
