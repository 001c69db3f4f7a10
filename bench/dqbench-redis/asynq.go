package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// -impl asynq: hibiken/asynq on the same server, in the same phases and with
// the same item counts as -impl redis, for a side-by-side comparison. An
// item is an asynq task of type "dq" with TaskID = the item's index (asynq
// then refuses duplicates, as redisq does); -consumers is the server's
// Concurrency and a handler returning nil is the ack. Due times are asynq's
// own: the client's clock + ProcessIn, moved to the pending list by the
// server's forwarder every DelayedTaskCheckInterval (-asynq-check).

const asynqTaskType = "dq"

func (r *redisRun) asynqQueue(phase string) string { return r.prefix + "asynq-" + phase }

// asynqClients returns a go-redis client for asynq's use and asynq's client
// on it.
func (r *redisRun) asynqClients() (*redis.Client, *asynq.Client) {
	rc := redis.NewClient(&redis.Options{Addr: r.o.redisAddr, PoolSize: 2*(r.o.consumers+max(r.o.producers, r.o.backlogProducers())) + 16})
	return rc, asynq.NewClientFromRedisClient(rc)
}

// asynqServer starts an asynq server with -consumers workers on queue.
func (r *redisRun) asynqServer(rc *redis.Client, queue string, h asynq.HandlerFunc) (*asynq.Server, error) {
	return r.asynqServerWith(rc, queue, h, nil)
}

// asynqServerWith is asynqServer with set (if not nil) changing the
// configuration first.
func (r *redisRun) asynqServerWith(rc *redis.Client, queue string, h asynq.HandlerFunc, set func(*asynq.Config)) (*asynq.Server, error) {
	cfg := asynq.Config{
		Concurrency:              r.o.consumers,
		Queues:                   map[string]int{queue: 1},
		LogLevel:                 asynq.FatalLevel,
		DelayedTaskCheckInterval: r.o.asynqCheck,
		ShutdownTimeout:          5 * time.Second,
	}
	if set != nil {
		set(&cfg)
	}
	srv := asynq.NewServerFromRedisClient(rc, cfg)
	return srv, srv.Start(h)
}

func asynqTask(o *options, i int) *asynq.Task {
	return asynq.NewTask(asynqTaskType, payload(o, i))
}

func taskIndex(t *asynq.Task) int {
	if len(t.Payload()) < 8 {
		return -1
	}
	return int(binary.LittleEndian.Uint64(t.Payload()))
}

// asynqDrained waits until queue has no pending or active task left, i.e.
// the last handler's done script has run.
func (r *redisRun) asynqDrained(queue string) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		n, err := r.c.LLen(r.ctx, "asynq:{"+queue+"}:active").Result()
		m, err2 := r.c.LLen(r.ctx, "asynq:{"+queue+"}:pending").Result()
		if err != nil || err2 != nil || n+m == 0 {
			return
		}
	}
}

// asynqBacklog: -redis-items tasks enqueued (due at once) by the producers,
// then processed by a server with -consumers workers.
func (r *redisRun) asynqBacklog() ([]report.Result, error) {
	o := r.o
	n := o.redisItems
	res := report.Result{Name: "asynq/backlog", Kind: "queue", Mode: "backlog", Items: n, HeapPerItem: -1}
	queue := r.asynqQueue("backlog")
	rc, _ := r.asynqClients()
	defer rc.Close()
	var offered, delivered atomic.Int64
	start := time.Now()
	stopProgress := o.Progress(res.Name, n, &offered, &delivered, start)
	defer stopProgress()
	cpu0, s0 := report.CPUTime(), snapServer(r.ctx, r.c)

	// The producers' loop and client as a program writes them: its own
	// client with asynq's defaults, one Enqueue after the other (asynq
	// makes the task ID).
	pcl := asynq.NewClient(asynq.RedisClientOpt{Addr: o.redisAddr})
	defer pcl.Close()
	err := produceAll(o.backlogProducers(), n, 1, func(i, _ int) error {
		_, err := pcl.EnqueueContext(r.ctx, asynqTask(o, i), asynq.Queue(queue))
		return err
	}, &offered)
	el := time.Since(start)
	res.OfferSeconds = el.Seconds()
	res.OfferRate = float64(offered.Load()) / el.Seconds()
	s1 := snapServer(r.ctx, r.c)
	if err != nil {
		err = fmt.Errorf("enqueue: %w", err)
		res.Note = err.Error()
		return []report.Result{res}, err
	}

	seen := make([]atomic.Bool, n)
	var dups atomic.Int64
	allDone := make(chan struct{})
	d0 := time.Now()
	srv, err := r.asynqServer(rc, queue, func(_ context.Context, t *asynq.Task) error {
		i := taskIndex(t)
		if i < 0 || i >= n || !seen[i].CompareAndSwap(false, true) {
			dups.Add(1)
			return nil
		}
		if delivered.Add(1) == int64(n) {
			close(allDone)
		}
		return nil
	})
	if err != nil {
		res.Note = err.Error()
		return []report.Result{res}, err
	}
	select {
	case <-allDone:
	case <-time.After(30*time.Second + time.Duration(n)*time.Millisecond):
		res.Note = report.JoinNote(res.Note, "timed out draining")
	case <-r.ctx.Done():
	}
	r.asynqDrained(queue)
	drain := time.Since(d0)
	s2 := snapServer(r.ctx, r.c)
	srv.Shutdown()
	res.CPUSeconds = (report.CPUTime() - cpu0).Seconds()
	res.Delivered = int(delivered.Load())
	res.Duplicates = int(dups.Load())
	res.DeliverRate = float64(res.Delivered) / drain.Seconds()
	if n > 0 {
		res.CPUPerItemNs = res.CPUSeconds * 1e9 / float64(n)
	}
	res.Note = report.JoinNote(res.Note, fmt.Sprintf("offer/s = Client.Enqueue by %d producers, each its own loop, on asynq.NewClient (%v), deliver/s = handled and done by a server with Concurrency %d (%v); CPU: this process's, per item",
		o.backlogProducers(), el.Round(time.Millisecond), o.consumers, drain.Round(time.Millisecond)))
	setServer(&res, n, s0, s1, s2)
	if res.Delivered < n {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d items NOT delivered", n-res.Delivered))
	}
	return []report.Result{res}, nil
}

// asynqIdle: a server with -consumers workers and one task an hour away;
// what the server runs meanwhile.
func (r *redisRun) asynqIdle() ([]report.Result, error) {
	o := r.o
	res := report.Result{Name: "asynq/idle", Kind: "idle", Mode: "idle", Items: o.consumers, HeapPerItem: -1}
	queue := r.asynqQueue("idle")
	rc, cl := r.asynqClients()
	defer rc.Close()
	if _, err := cl.EnqueueContext(r.ctx, asynqTask(o, 0), asynq.Queue(queue), asynq.ProcessIn(time.Hour)); err != nil {
		res.Note = err.Error()
		return []report.Result{res}, err
	}
	var got atomic.Int64
	srv, err := r.asynqServer(rc, queue, func(context.Context, *asynq.Task) error { got.Add(1); return nil })
	if err != nil {
		res.Note = err.Error()
		return []report.Result{res}, err
	}
	defer srv.Shutdown()
	time.Sleep(2 * time.Second) // let the server's start-up traffic pass
	s0, cpu0, t0 := snapServer(r.ctx, r.c), report.CPUTime(), time.Now()
	select {
	case <-time.After(o.idleFor):
	case <-r.ctx.Done():
	}
	el := time.Since(t0)
	s1 := snapServer(r.ctx, r.c)
	res.IdleSeconds = el.Seconds()
	res.CPUSeconds = (report.CPUTime() - cpu0).Seconds()
	setIdle(&res, s0, s1, el)
	if got.Load() > 0 {
		res.Note = report.JoinNote(res.Note, "an item was delivered")
	}
	return []report.Result{res}, nil
}

// asynqSteady: -rate tasks/s for -duration, each ProcessIn(its delay); a
// server with -consumers workers handles them. Lateness = handler start -
// (the instant before Enqueue + delay), both on this process's clock, which
// is asynq's clock for due times.
func (r *redisRun) asynqSteady() ([]report.Result, error) {
	o := r.o
	n := int(o.rate * o.duration.Seconds())
	res := report.Result{Name: "asynq", Kind: "queue", Mode: "steady", Items: n, HeapPerItem: -1}
	queue := r.asynqQueue("steady")
	rc, cl := r.asynqClients()
	defer rc.Close()

	lat := make([]int64, n)
	sentAt := make([]int64, n) // local instant just before Enqueue, ns since start
	seen := make([]atomic.Bool, n)
	var offered, delivered, dups atomic.Int64
	var errs atomic.Value
	allDone := make(chan struct{})
	var start time.Time
	var started atomic.Bool
	srv, err := r.asynqServer(rc, queue, func(_ context.Context, t *asynq.Task) error {
		recv := time.Now()
		i := taskIndex(t)
		if !started.Load() || i < 0 || i >= n || !seen[i].CompareAndSwap(false, true) {
			dups.Add(1)
			return nil
		}
		lat[i] = int64(recv.Sub(start)) - (atomic.LoadInt64(&sentAt[i]) + int64(o.itemDelay(i)))
		if delivered.Add(1) == int64(n) {
			close(allDone)
		}
		return nil
	})
	if err != nil {
		res.Note = err.Error()
		return []report.Result{res}, err
	}
	time.Sleep(2 * time.Second) // let the server's start-up traffic pass
	s0 := snapServer(r.ctx, r.c)
	start = time.Now()
	started.Store(true)
	stopProgress := o.Progress(res.Name, n, &offered, &delivered, start)
	cpu0 := report.CPUTime()

	produceAtRate(o, n, start, func(_, i int) error {
		atomic.StoreInt64(&sentAt[i], int64(time.Since(start)))
		_, err := cl.EnqueueContext(r.ctx, asynqTask(o, i), asynq.Queue(queue),
			asynq.TaskID(strconv.Itoa(i)), asynq.ProcessIn(o.itemDelay(i)))
		return err
	}, &offered, &errs)
	offerDone := time.Since(start)
	res.OfferSeconds = offerDone.Seconds()
	res.OfferRate = float64(offered.Load()) / offerDone.Seconds()
	if !o.waitTail(r.ctx, allDone, start) {
		res.Note = report.JoinNote(res.Note, "timed out waiting for deliveries")
	}
	r.asynqDrained(queue)
	last := time.Since(start)
	cpu1 := report.CPUTime()
	s1 := snapServer(r.ctx, r.c)
	stopProgress()
	srv.Shutdown()

	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.Delivered = int(delivered.Load())
	res.Duplicates = int(dups.Load())
	if res.Delivered > 0 {
		res.CPUPerItemNs = float64(cpu1-cpu0) / float64(res.Delivered)
		res.DeliverRate = float64(res.Delivered) / last.Seconds()
	}
	var ls []int64
	for i := range seen {
		if seen[i].Load() {
			if lat[i] < 0 {
				res.Early++
			}
			ls = append(ls, lat[i])
		}
	}
	res.SetLateness(ls)
	check := "5s (asynq's default)"
	if o.asynqCheck > 0 {
		check = o.asynqCheck.String()
	}
	res.Note = report.JoinNote(res.Note, fmt.Sprintf("lateness = handler start - (instant before Client.Enqueue + delay), this process's clock; DelayedTaskCheckInterval %s; asynq stores due times in whole seconds (Unix), so it may deliver up to 1s early: %d early",
		check, res.Early))
	setServer(&res, res.Delivered, s0, s1)
	if res.Delivered < n {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d items NOT delivered", n-res.Delivered))
	}
	if err, _ := errs.Load().(error); err != nil {
		res.Note = report.JoinNote(res.Note, err.Error())
		return []report.Result{res}, err
	}
	return []report.Result{res}, nil
}
