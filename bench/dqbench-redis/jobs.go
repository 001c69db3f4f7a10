package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/redisprobe"
	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/dq-go/delayqueue/redisq"
)

// -impl worker-mux: the steady phase of -impl worker with the job layer
// on: items of 3 kinds, round-robin, each a small JSON payload enqueued by
// its redisq.JobKind[T].EnqueueAfter, handled by a Worker (Concurrency
// -consumers) over a redisq.Mux of the 3 typed handlers (JobKind.Handle:
// routed by kind, decoded from JSON), each doing what -impl worker's does
// (hand the message over and return nil). Its commands and CPU per item
// beside -impl worker's are the cost of kinds (target: within 5%).
//
// -impl worker-retain: -impl worker-mux with every item's Job.Retention
// an hour (-retain) and a small result set by its handler
// (Message.SetResult), so that each ack keeps the item completed: beside
// worker-mux, the CPU and the server memory (INFO memory used_memory) of
// a kept item.

// The payloads of the 3 kinds.
type (
	emailJob struct {
		N  int    `json:"n"`
		To string `json:"to"`
	}
	refundJob struct {
		N     int   `json:"n"`
		Cents int64 `json:"cents"`
	}
	digestJob struct {
		N   int    `json:"n"`
		Day string `json:"day"`
	}
)

// retainFor is -impl worker-retain's Job.Retention; retainResult its
// handlers' result.
const retainFor = time.Hour

var retainResult = []byte(`{"ok":true}`)

// jobKinds are the 3 kinds of -impl worker-mux and worker-retain.
type jobKinds struct {
	email  redisq.JobKind[emailJob]
	refund redisq.JobKind[refundJob]
	digest redisq.JobKind[digestJob]
	retain bool
}

func newJobKinds(retain time.Duration) jobKinds {
	var defaults []redisq.JobOption
	if retain > 0 {
		defaults = []redisq.JobOption{redisq.Retention(retain)}
	}
	return jobKinds{
		email:  redisq.JobKind[emailJob]{Name: "email", Defaults: defaults},
		refund: redisq.JobKind[refundJob]{Name: "refund", Defaults: defaults},
		digest: redisq.JobKind[digestJob]{Name: "digest", Defaults: defaults},
		retain: retain > 0,
	}
}

// enqueue sends item i, of kind i mod 3, due delay after Redis TIME.
func (k jobKinds) enqueue(ctx context.Context, q *redisq.Queue, i int, delay time.Duration) error {
	id := strconv.Itoa(i)
	var err error
	switch i % 3 {
	case 0:
		_, err = k.email.EnqueueAfter(ctx, q, id, emailJob{N: i, To: "user@example.com"}, delay)
	case 1:
		_, err = k.refund.EnqueueAfter(ctx, q, id, refundJob{N: i, Cents: 1999}, delay)
	default:
		_, err = k.digest.EnqueueAfter(ctx, q, id, digestJob{N: i, Day: "2025-01-31"}, delay)
	}
	return err
}

// mux returns a Mux of the 3 kinds' handlers, each handing its message to
// got (and with retain setting retainResult first).
func (k jobKinds) mux(got func(time.Time, []*redisq.Message)) *redisq.Mux {
	mux := redisq.NewMux()
	handled := func(m *redisq.Message) error {
		got(time.Now(), []*redisq.Message{m})
		if k.retain {
			return m.SetResult(retainResult)
		}
		return nil
	}
	k.email.Handle(mux, func(_ context.Context, m *redisq.Message, _ emailJob) error { return handled(m) })
	k.refund.Handle(mux, func(_ context.Context, m *redisq.Message, _ refundJob) error { return handled(m) })
	k.digest.Handle(mux, func(_ context.Context, m *redisq.Message, _ digestJob) error { return handled(m) })
	return mux
}

// jobsSteady runs the steady phase as name with the 3 kinds (Retention
// retain, 0: none) and a Worker over their Mux.
func (r *redisRun) jobsSteady(name string, retain time.Duration) (report.Result, error) {
	k := newJobKinds(retain)
	res, err := r.steadyWith(name, k.enqueue, func(ctx context.Context, q *redisq.Queue, got func(time.Time, []*redisq.Message), errs *atomic.Value) func() {
		return startWorkerWith(redisprobe.WithCaller(ctx, 0), q, r.o.consumers, k.mux(got).Serve, errs)
	})
	how := "3 kinds round-robin (JobKind[T].EnqueueAfter, JSON payloads of 20-35 bytes), a Worker over a Mux of their typed handlers"
	if retain > 0 {
		how += fmt.Sprintf("; Retention %v, a %d-byte result each (SetResult)", retain, len(retainResult))
		if err == nil && res.Kept < res.Delivered {
			err = fmt.Errorf("%s: %d items kept completed, want %d", name, res.Kept, res.Delivered)
			res.Note = report.JoinNote(res.Note, err.Error())
		}
		if err == nil {
			err = r.purgeKept(name+"-steady", &res)
		}
	}
	res.Note = report.JoinNote(how, res.Note)
	return res, err
}

func (r *redisRun) workerMuxSteady() (report.Result, error) { return r.jobsSteady("worker-mux", 0) }

func (r *redisRun) workerRetainSteady() (report.Result, error) {
	return r.jobsSteady("worker-retain", retainFor)
}

// purgeKept deletes the completed items of the queue of phase (Purge) and
// records in res the used_memory that freed per kept item.
func (r *redisRun) purgeKept(phase string, res *report.Result) error {
	q, err := r.newQueue(phase)
	if err != nil {
		return err
	}
	defer q.Close()
	m0 := serverMem(r.ctx, r.c)
	n, err := q.Purge(r.ctx, redisq.StateCompleted)
	m1 := serverMem(r.ctx, r.c)
	if err != nil {
		err = fmt.Errorf("purging the completed items: %w", err)
		res.Note = report.JoinNote(res.Note, err.Error())
		return err
	}
	if n > 0 && m0 >= 0 && m1 >= 0 {
		res.KeptBytesPerItem = float64(m0-m1) / float64(n)
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("purging the %d completed items freed %s B of used_memory: %.0f B per kept item",
			n, report.Group(m0-m1), res.KeptBytesPerItem))
	}
	return nil
}
