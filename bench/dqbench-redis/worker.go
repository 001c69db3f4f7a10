package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/redisprobe"
	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/dq-go/delayqueue/redisq"
)

// -impl worker: a redisq.Worker with Concurrency -consumers and a no-op
// handler, in the same phases as -impl redis and -impl asynq: the job
// runner side by side with asynq.Server (Concurrency -consumers, the same
// no-op handler).

// startWorker runs a Worker on q with n handlers, each handing its message
// to got with the instant it started, and returns a function that stops it
// (Shutdown, letting the handlers finish and their acks go out) and waits
// for Run to return. ctx's values reach the Worker (the command-counting
// hook's caller tag); its end stops it as Shutdown with no time left.
func startWorker(ctx context.Context, q *redisq.Queue, n int, got func(time.Time, []*redisq.Message), errs *atomic.Value) func() {
	return startWorkerWith(ctx, q, n, func(_ context.Context, m *redisq.Message) error {
		got(time.Now(), []*redisq.Message{m})
		return nil
	}, errs)
}

// startWorkerWith is startWorker with the handler h.
func startWorkerWith(ctx context.Context, q *redisq.Queue, n int, h redisq.Handler, errs *atomic.Value) func() {
	w := redisq.NewWorker(q, h, redisq.WorkerOptions{Concurrency: n})
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if err := w.Run(ctx); err != nil {
			errs.CompareAndSwap(nil, fmt.Errorf("worker: %w", err))
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			errs.CompareAndSwap(nil, fmt.Errorf("worker shutdown: %w", err))
		}
		<-ran
	}
}

// workerBacklog: -redis-items items enqueued (due now) by the producers,
// then handled by a Worker with -consumers handlers.
func (r *redisRun) workerBacklog() (report.Result, error) {
	return r.backlogWith("worker/backlog", 1, -1)
}

// workerSteady: lateness at -rate items/s, handled by a Worker with
// -consumers handlers; a message is received when its handler starts.
func (r *redisRun) workerSteady() (report.Result, error) {
	return r.steadyWith("worker", nil, func(ctx context.Context, q *redisq.Queue, got func(time.Time, []*redisq.Message), errs *atomic.Value) func() {
		return startWorker(redisprobe.WithCaller(ctx, 0), q, r.o.consumers, got, errs)
	})
}

// workerIdle: a Worker with -consumers handlers and nothing due (the head
// an hour away, wake cap -wake-cap) for -idle; the server's commands per
// 10 s.
func (r *redisRun) workerIdle() (report.Result, error) {
	o := r.o
	res := report.Result{Name: "worker/idle", Kind: "idle", Mode: "idle", Items: o.consumers, HeapPerItem: -1}
	q, err := r.newQueue("worker-idle", redisq.WithWakeCap(o.wakeCap))
	if err != nil {
		res.Note = err.Error()
		return res, err
	}
	defer q.Close()
	if _, err := q.EnqueueAfter(r.ctx, "head", payload(o, 0), time.Hour); err != nil {
		res.Note = err.Error()
		return res, err
	}
	var errs atomic.Value
	stop := startWorker(r.ctx, q, o.consumers, func(time.Time, []*redisq.Message) {
		errs.CompareAndSwap(nil, fmt.Errorf("idle phase: an item was delivered"))
	}, &errs)
	time.Sleep(min(time.Second, o.wakeCap/2)) // the first claim and wait
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
	stop()
	if err, _ := errs.Load().(error); err != nil {
		res.Note = report.JoinNote(res.Note, err.Error())
		return res, err
	}
	return res, nil
}
