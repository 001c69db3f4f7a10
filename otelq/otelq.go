// Package otelq carries an OpenTelemetry trace context from the producer
// of a github.com/dq-go/delayqueue/redisq item to its handler, and traces
// the handling. It is a module of its own, so that redisq does not depend
// on OpenTelemetry.
//
// The model: a producer writes the trace context of its ctx into the
// item's headers (redisq.Job.Headers) with Inject, or with the JobOption
// Header; the item stores them with its payload, for as long as it waits,
// and every delivery carries them (redisq.Message.Headers). On the worker,
// Middleware reads them back and runs the handler under a span of kind
// Consumer that is a child of the producer's span: the handling of the
// item is one more part of the trace of the request that enqueued it, in
// whichever process, and however much later, it runs. Each attempt is a
// span of its own, a sibling of the previous ones.
//
// Which fields are carried is the propagator's choice: by default the
// global one (otel.GetTextMapPropagator), which is a no-op until the
// program sets one, so set it at start-up, on producers and workers alike:
//
//	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
//		propagation.TraceContext{}, propagation.Baggage{}))
//
// or give WithPropagator to Inject, Header and Middleware. With
// propagation.TraceContext the headers are the W3C "traceparent" and
// "tracestate"; with propagation.Baggage, "baggage" too. They count
// towards redisq.MaxHeaderBytes.
//
// The span is named "process " and the item's kind, or its queue's name
// when it has no kind. It has the messaging attributes of the OpenTelemetry
// semantic conventions (messaging.system "redisq", messaging.operation.type
// and .name "process", messaging.destination.name the queue's name,
// messaging.message.id the item's id, messaging.message.body.size the
// payload's length) and three of redisq's: KindKey (when the item has a
// kind), AttemptKey and OutcomeKey (redisq.Outcome of the handler's
// error). A handler that fails (redisq.IsFailure) sets the span's status
// to Error with its error, which is recorded as an exception event (with
// the stack of a panic); a handler that returns nil, or redisq.Snooze
// ("not now", no failure), leaves the status unset. A redisq.RetryAfter,
// with or without a cause, is a failure: its attempt counts.
//
// An item without a trace context in its headers is handled under a span
// whose parent is the span of the handler's ctx, if any (the values of
// the Worker's Run ctx), or a new trace's root otherwise.
package otelq

import (
	"context"
	"errors"
	"maps"

	"github.com/dq-go/delayqueue/redisq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer of Middleware.
const ScopeName = "github.com/dq-go/delayqueue/otelq"

// System is the value of the attribute messaging.system of the spans.
const System = "redisq"

// The attributes of redisq's own on a handler's span.
const (
	KindKey    = attribute.Key("redisq.job.kind")        // the item's Job.Kind, when not ""
	AttemptKey = attribute.Key("redisq.message.attempt") // Message.Attempts: 1 on the first delivery
	OutcomeKey = attribute.Key("redisq.outcome")         // redisq.Outcome of the handler's error
)

// An Option configures Inject, Header or Middleware.
type Option func(*config)

type config struct {
	tp   trace.TracerProvider
	prop propagation.TextMapPropagator
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.prop == nil {
		c.prop = otel.GetTextMapPropagator()
	}
	return c
}

// WithTracerProvider sets the TracerProvider of Middleware's spans
// (default, or when tp is nil: otel.GetTracerProvider()). Inject and
// Header ignore it.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithPropagator sets the propagator that writes and reads the headers
// (default, or when p is nil: otel.GetTextMapPropagator(), which is a
// no-op unless the program set one). Producers and workers must use
// propagators that agree.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.prop = p }
}

// Inject writes the propagator's fields of ctx (its span's W3C
// traceparent and tracestate with propagation.TraceContext, its baggage
// with propagation.Baggage) into headers and returns headers, for
// redisq.EnqueueItem.Job.Headers:
//
//	q.Add(ctx, redisq.EnqueueItem{ID: id, Payload: p,
//		Job: redisq.Job{Kind: "refund", Headers: otelq.Inject(ctx, nil)}})
//
// The propagator's fields already in headers are deleted first, so that
// they describe ctx alone (a Job copied from a Message loses the context
// of the item it came from). When headers is nil and there is something
// to write, Inject allocates a new map; otherwise it writes into headers
// itself, which must not be in use by another goroutine.
func Inject(ctx context.Context, headers map[string]string, opts ...Option) map[string]string {
	c := newConfig(opts)
	for _, f := range c.prop.Fields() {
		delete(headers, f)
	}
	carrier := propagation.MapCarrier(headers)
	if carrier == nil {
		carrier = make(propagation.MapCarrier)
	}
	c.prop.Inject(ctx, carrier)
	if headers == nil && len(carrier) == 0 {
		return nil
	}
	return carrier
}

// Header returns a JobOption that sets the propagator's fields of ctx in
// the item's Job.Headers, as Inject does, for the JobKind calls:
//
//	Refund.EnqueueAfter(ctx, q, id, args, 0, otelq.Header(ctx))
//
// It writes into a copy of the headers set before it, so that a map given
// by redisq.WithJob is never changed.
func Header(ctx context.Context, opts ...Option) redisq.JobOption {
	return func(j *redisq.Job) {
		j.Headers = Inject(ctx, maps.Clone(j.Headers), opts...)
	}
}

// Middleware returns a redisq.Middleware that runs each handler under a
// span of kind Consumer, a child of the span whose context the item's
// headers carry (see the package doc for its name and attributes), and
// gives the handler the span's ctx, with the baggage the headers carry.
func Middleware(opts ...Option) redisq.Middleware {
	c := newConfig(opts)
	tracer := c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	return func(next redisq.Handler) redisq.Handler {
		return func(ctx context.Context, m *redisq.Message) error {
			ctx = c.prop.Extract(ctx, propagation.MapCarrier(m.Headers))
			name := m.Kind
			if name == "" {
				name = m.QueueName()
			}
			attrs := []attribute.KeyValue{
				semconv.MessagingSystemKey.String(System),
				semconv.MessagingOperationTypeProcess,
				semconv.MessagingOperationName("process"),
				semconv.MessagingDestinationName(m.QueueName()),
				semconv.MessagingMessageID(m.ID),
				semconv.MessagingMessageBodySize(len(m.Payload)),
				AttemptKey.Int(m.Attempts),
			}
			if m.Kind != "" {
				attrs = append(attrs, KindKey.String(m.Kind))
			}
			ctx, span := tracer.Start(ctx, "process "+name,
				trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
			defer span.End()
			err := next(ctx, m)
			outcome := redisq.Outcome(err)
			span.SetAttributes(OutcomeKey.String(outcome))
			if redisq.IsFailure(err) {
				var eopts []trace.EventOption
				var pe *redisq.PanicError
				if errors.As(err, &pe) && len(pe.Stack) > 0 {
					eopts = append(eopts, trace.WithAttributes(semconv.ExceptionStacktrace(string(pe.Stack))))
				}
				span.RecordError(err, eopts...)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}
