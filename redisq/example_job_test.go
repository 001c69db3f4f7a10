package redisq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

type Refund struct {
	Order int64 `json:"order"`
}

// A kind of job shared by producers and handlers: typed payloads, options
// per job, and a result kept after completion.
func ExampleJobKind() {
	q, done := exampleQueue("orders")
	defer done()
	ctx := context.Background()
	refund := redisq.JobKind[Refund]{Name: "refund",
		Defaults: []redisq.JobOption{redisq.MaxAttempts(5), redisq.Retention(time.Hour)}}

	if _, err := refund.EnqueueAfter(ctx, q, "refund:42", Refund{Order: 42}, 0); err != nil {
		panic(err)
	}

	mux := redisq.NewMux()
	handled := make(chan struct{})
	refund.Handle(mux, func(ctx context.Context, m *redisq.Message, r Refund) error {
		defer close(handled)
		return m.SetResult(fmt.Appendf(nil, "refunded order %d", r.Order))
	})
	w := redisq.NewWorker(q, mux.Serve, redisq.WorkerOptions{Concurrency: 2})
	ran := make(chan error)
	go func() { ran <- w.Run(ctx) }()
	<-handled
	_ = w.Shutdown(ctx) // the ack is settled before Shutdown returns
	<-ran

	it, _ := q.Get(ctx, "refund:42")
	fmt.Println(it.State, it.Kind, it.MaxAttempts, string(it.Result))
	// Output:
	// completed refund 5 refunded order 42
}
