package redisq_test

import (
	"context"
	"errors"
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

// A uniqueness window: at most one reminder per order in any ten minutes,
// including after the first one ran.
func ExampleUnique() {
	q, done := exampleQueue("reminders")
	defer done()
	ctx := context.Background()
	remind := func(reqID string) error {
		_, err := q.Add(ctx, redisq.EnqueueItem{ID: "remind:" + reqID, After: time.Minute,
			Job: redisq.Job{UniqueKey: "remind:order:42", UniqueFor: 10 * time.Minute}})
		return err
	}
	fmt.Println(remind("r1"))
	fmt.Println(remind("r2"), errors.Is(remind("r3"), redisq.ErrDuplicate))
	w, _ := q.UniqueWindow(ctx, "remind:order:42")
	fmt.Println(w.ID)
	// Output:
	// <nil>
	// redisq: duplicate id: unique key held true
	// remind:r1
}

// Debounce: of a burst of enqueues of one key, the last one wins; it runs
// once, the window after the burst.
func ExampleDebounce() {
	q, done := exampleQueue("search")
	defer done()
	ctx := context.Background()
	for _, change := range []string{"c1", "c2", "c3"} {
		_, err := q.Add(ctx, redisq.EnqueueItem{ID: "reindex:" + change, Payload: []byte(change), After: 30 * time.Second,
			Job: redisq.Job{UniqueKey: "reindex:tenant:7", UniqueFor: 30 * time.Second, Debounce: true}})
		if err != nil {
			panic(err)
		}
	}
	st, _ := q.Stats(ctx)
	it, _ := q.Get(ctx, "reindex:c3")
	fmt.Println(st.Scheduled, string(it.Payload))
	// Output:
	// 1 c3
}

// SetRateLimit: at most N claims of a limit key's items in any Per, across
// every process; an item over the limit waits in Redis for its slot.
func ExampleQueue_SetRateLimit() {
	q, done := exampleQueue("mail")
	defer done()
	ctx := context.Background()
	if err := q.SetRateLimit(ctx, "smtp", redisq.RateLimit{N: 2, Per: time.Hour}); err != nil {
		panic(err)
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		// Due a minute ago: all are due at the claim.
		if _, err := q.Add(ctx, redisq.EnqueueItem{ID: id, At: time.Now().Add(-time.Minute), Job: redisq.Job{LimitKey: "smtp"}}); err != nil {
			panic(err)
		}
	}
	ms, err := q.TakeBatch(ctx, 10)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(ms), ms[0].ID, ms[1].ID)
	it, _ := q.Get(ctx, "m3")
	fmt.Println(it.State, it.RateSlot.Sub(ms[0].ClaimedAt).Round(time.Minute))
	st, _ := q.RateLimitState(ctx, "smtp")
	fmt.Println(st.Limit, st.Used, st.Waiting)
	// Output:
	// 2 m1 m2
	// scheduled 1h0m0s
	// 2 per 1h0m0s 2 1
}

// At most one payment of an account runs at once, across every process:
// the second waits until the first is acked.
func ExampleQueue_SetConcurrencyLimit() {
	q, done := exampleQueue("payments")
	defer done()
	ctx := context.Background()
	if err := q.SetConcurrencyLimit(ctx, "acct:42", 1); err != nil {
		panic(err)
	}
	for _, id := range []string{"pay:1", "pay:2"} {
		// Due a minute ago: both are due at the claim.
		if _, err := q.Add(ctx, redisq.EnqueueItem{ID: id, At: time.Now().Add(-time.Minute), Job: redisq.Job{LimitKey: "acct:42"}}); err != nil {
			panic(err)
		}
	}
	ms, err := q.TakeBatch(ctx, 10)
	if err != nil {
		panic(err)
	}
	it, _ := q.Get(ctx, "pay:2")
	fmt.Println(len(ms), ms[0].ID, it.WaitsForPlace)
	if err := ms[0].Ack(ctx); err != nil {
		panic(err)
	}
	m, err := q.Take(ctx) // pay:2 is due now
	if err != nil {
		panic(err)
	}
	fmt.Println(m.ID)
	// Output:
	// 1 pay:1 true
	// pay:2
}
