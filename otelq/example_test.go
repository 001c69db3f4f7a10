package otelq_test

import (
	"context"
	"time"

	"github.com/dq-go/delayqueue/otelq"
	"github.com/dq-go/delayqueue/redisq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

type RefundArgs struct{ Order int }

var Refund = redisq.JobKind[RefundArgs]{Name: "refund"}

// A producer carries the trace context of its request in the item's
// headers, and the worker handles the item under a span that continues
// that trace. Both set the global propagator at start-up, since
// OpenTelemetry's default one carries nothing.
func Example() {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
		propagation.TraceContext{}, propagation.Baggage{}))
	var q *redisq.Queue // from redisq.New
	ctx := context.Background()

	// The producer, in a request whose ctx has a span.
	_, _ = Refund.EnqueueAfter(ctx, q, "refund:42", RefundArgs{Order: 42}, time.Minute, otelq.Header(ctx))
	// Or, without a JobKind:
	_, _ = q.Add(ctx, redisq.EnqueueItem{ID: "digest:7", After: time.Hour,
		Job: redisq.Job{Kind: "digest", Headers: otelq.Inject(ctx, nil)}})

	// The worker: each handler runs under a span "process refund", a
	// child of the producer's span, and its ctx carries that span.
	mux := redisq.NewMux()
	Refund.Handle(mux, func(ctx context.Context, m *redisq.Message, a RefundArgs) error {
		return nil
	})
	w := redisq.NewWorker(q, mux.Serve, redisq.WorkerOptions{
		Middleware: []redisq.Middleware{otelq.Middleware()},
	})
	_ = w.Run(ctx)
}
