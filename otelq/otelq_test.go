package otelq_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/otelq"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// attrs returns a span's attributes by key, as strings.
func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := make(map[attribute.Key]string)
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// checkAttrs fails t unless s has each of want's attributes with its
// value ("" in want: the attribute must be absent).
func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == "" && ok:
			t.Errorf("span %q: attribute %s = %q, want none", s.Name, k, g)
		case v != "" && g != v:
			t.Errorf("span %q: attribute %s = %q (present: %v), want %q", s.Name, k, g, ok, v)
		}
	}
}

// TestTraceContextCrossesProcesses enqueues two items in another process,
// each under a span of that process's TracerProvider, one with Inject and
// one with Header, and handles them here: each handler span is a child of
// its item's producer span (same trace, that span as remote parent), has
// the messaging attributes, hands the handler its ctx and the baggage; a
// failing handler's spans (one per attempt) have an Error status.
func TestTraceContextCrossesProcesses(t *testing.T) {
	s := redistest.New(t)
	items := produce(t, s.Addr, "traced")

	// The global provider and propagator are the wrong ones: the options
	// must win.
	globalExp, globalTP := newExporter(t)
	setGlobals(t, globalTP, propagation.NewCompositeTextMapPropagator())
	exp, tp := newExporter(t)
	mw := otelq.Middleware(otelq.WithTracerProvider(tp),
		otelq.WithPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))

	type seen struct {
		sc      trace.SpanContext
		tenant  string
		app     string
		message bool
	}
	var mu sync.Mutex
	handled := make(map[string][]seen)
	record := func(ctx context.Context, m *redisq.Message) {
		_, fromCtx := redisq.MessageFromContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		handled[m.ID] = append(handled[m.ID], seen{trace.SpanContextFromContext(ctx),
			baggage.FromContext(ctx).Member("tenant").Value(), m.Headers["app"], fromCtx})
	}
	mux := redisq.NewMux()
	mux.Handle("greet", func(ctx context.Context, m *redisq.Message) error {
		record(ctx, m)
		return nil
	})
	failKind.Handle(mux, func(ctx context.Context, m *redisq.Message, _ string) error {
		record(ctx, m)
		return errors.New("boom")
	})
	runWorker(t, newQueue(t, s.Addr, "traced"), mux.Serve, mw)

	spans := waitSpans(t, exp, 3) // greet, and fail twice (MaxAttempts 2)
	time.Sleep(50 * time.Millisecond)
	if spans = exp.GetSpans(); len(spans) != 3 {
		t.Fatalf("%d spans, want 3: %v", len(spans), spans)
	}
	if n := len(globalExp.GetSpans()); n != 0 {
		t.Errorf("%d spans in the global TracerProvider, want 0 (WithTracerProvider)", n)
	}

	mu.Lock()
	defer mu.Unlock()
	fails := 0
	for _, sp := range spans {
		id := attrs(sp)["messaging.message.id"]
		producer, ok := items[id]
		if !ok {
			t.Fatalf("span %q of message %q: no such item", sp.Name, id)
		}
		if got := sp.SpanContext.TraceID().String(); got != producer[0] {
			t.Errorf("span %q: trace id %s, want the producer's %s", sp.Name, got, producer[0])
		}
		if got := sp.Parent.SpanID().String(); got != producer[1] || !sp.Parent.IsRemote() {
			t.Errorf("span %q: parent %s (remote: %v), want the producer's span %s, remote", sp.Name, got, sp.Parent.IsRemote(), producer[1])
		}
		if sp.SpanKind != trace.SpanKindConsumer {
			t.Errorf("span %q: kind %v, want consumer", sp.Name, sp.SpanKind)
		}
		if sp.InstrumentationScope.Name != otelq.ScopeName {
			t.Errorf("span %q: scope %q, want %q", sp.Name, sp.InstrumentationScope.Name, otelq.ScopeName)
		}
		common := map[attribute.Key]string{
			"messaging.system":           "redisq",
			"messaging.operation.type":   "process",
			"messaging.operation.name":   "process",
			"messaging.destination.name": "traced",
		}
		switch id {
		case "greet:1":
			if sp.Name != "process greet" {
				t.Errorf("span name %q, want %q", sp.Name, "process greet")
			}
			checkAttrs(t, sp, common)
			checkAttrs(t, sp, map[attribute.Key]string{
				"messaging.message.body.size": "5",
				otelq.KindKey:                 "greet",
				otelq.AttemptKey:              "1",
				otelq.OutcomeKey:              "ok",
			})
			if sp.Status.Code != codes.Unset || len(sp.Events) != 0 {
				t.Errorf("span %q: status %v, events %v; want unset, none", sp.Name, sp.Status, sp.Events)
			}
			h := handled[id]
			if len(h) != 1 {
				t.Fatalf("greet:1 handled %d times, want 1", len(h))
			}
			if !h[0].sc.Equal(sp.SpanContext) {
				t.Errorf("the handler's ctx has span %v, want the middleware's %v", h[0].sc, sp.SpanContext)
			}
			if h[0].tenant != "acme" || h[0].app != "test" || !h[0].message {
				t.Errorf("the handler saw baggage tenant %q, header app %q, message in ctx %v; want acme, test, true", h[0].tenant, h[0].app, h[0].message)
			}
		case "fail:1":
			fails++
			if sp.Name != "process fail" {
				t.Errorf("span name %q, want %q", sp.Name, "process fail")
			}
			checkAttrs(t, sp, common)
			checkAttrs(t, sp, map[attribute.Key]string{
				otelq.KindKey:    "fail",
				otelq.OutcomeKey: "error",
			})
			if sp.Status.Code != codes.Error || sp.Status.Description != "boom" {
				t.Errorf("span %q: status %v, want Error \"boom\"", sp.Name, sp.Status)
			}
			if len(sp.Events) != 1 || sp.Events[0].Name != "exception" {
				t.Errorf("span %q: events %v, want one exception", sp.Name, sp.Events)
			}
		}
	}
	if fails != 2 {
		t.Errorf("%d spans of fail:1, want 2", fails)
	}
	var attempts []string
	for _, sp := range spans {
		if attrs(sp)["messaging.message.id"] == "fail:1" {
			attempts = append(attempts, attrs(sp)[otelq.AttemptKey])
		}
	}
	if strings.Join(attempts, ",") != "1,2" {
		t.Errorf("the attempts of fail:1's spans: %v, want 1,2", attempts)
	}
	if h := handled["fail:1"]; len(h) != 2 {
		t.Errorf("fail:1 handled %d times, want 2", len(h))
	}
	for i, h := range handled["fail:1"] {
		if h.sc.TraceID().String() != items["fail:1"][0] {
			t.Errorf("fail:1's handler %d ran under trace %s, want %s", i, h.sc.TraceID(), items["fail:1"][0])
		}
	}
}

// TestOutcomes handles one item of each outcome, with Middleware's
// defaults (the global provider and propagator): the outcome attribute,
// the status (unset for nil and for a Snooze), the exception
// event (with the stack of a panic), and a root span for an item without
// headers or kind, named after its queue.
func TestOutcomes(t *testing.T) {
	s := redistest.New(t)
	exp, tp := newExporter(t)
	setGlobals(t, tp, propagation.TraceContext{})
	q := newQueue(t, s.Addr, "outcomes")
	producer := tp.Tracer("producer")
	ctx, span := producer.Start(context.Background(), "produce")
	cases := []struct {
		kind, outcome string
		err           error
		status        codes.Code
	}{
		{"ok", "ok", nil, codes.Unset},
		{"error", "error", errors.New("failed"), codes.Error},
		{"skip", "skip_retry", redisq.SkipRetry(errors.New("bad input")), codes.Error},
		{"later", "retry_after", redisq.RetryAfter(nil, time.Hour), codes.Error},
		{"snooze", "snooze", redisq.Snooze(time.Hour), codes.Unset},
		{"busy", "retry_after", redisq.RetryAfter(errors.New("busy"), time.Hour), codes.Error},
		{"skiplater", "skip_retry", redisq.SkipRetry(redisq.RetryAfter(nil, time.Hour)), codes.Error},
		{"panic", "panic", nil, codes.Error},
	}
	mux := redisq.NewMux()
	for _, c := range cases {
		mux.Handle(c.kind, func(ctx context.Context, m *redisq.Message) error {
			if c.kind == "panic" {
				panic("kaboom")
			}
			return c.err
		})
		if _, err := q.Add(ctx, redisq.EnqueueItem{ID: c.kind, Job: redisq.Job{Kind: c.kind, MaxAttempts: 1,
			Headers: otelq.Inject(ctx, nil)}}); err != nil {
			t.Fatal(err)
		}
	}
	span.End()
	mux.NotFound(func(ctx context.Context, m *redisq.Message) error { return nil })
	if _, err := q.Add(context.Background(), redisq.EnqueueItem{ID: "bare"}); err != nil {
		t.Fatal(err)
	}
	runWorker(t, q, mux.Serve, otelq.Middleware())

	spans := waitSpans(t, exp, 1+len(cases)+1) // produce, the cases, bare
	byID := make(map[string]tracetest.SpanStub)
	for _, sp := range spans {
		if sp.Name != "produce" {
			byID[attrs(sp)["messaging.message.id"]] = sp
		}
	}
	for _, c := range cases {
		sp, ok := byID[c.kind]
		if !ok {
			t.Errorf("no span for %s", c.kind)
			continue
		}
		if sp.Parent.SpanID() != span.SpanContext().SpanID() {
			t.Errorf("%s: parent %v, want the producer's span %v", c.kind, sp.Parent.SpanID(), span.SpanContext().SpanID())
		}
		checkAttrs(t, sp, map[attribute.Key]string{otelq.OutcomeKey: c.outcome, otelq.KindKey: c.kind})
		if sp.Status.Code != c.status {
			t.Errorf("%s: status %v, want %v", c.kind, sp.Status, c.status)
		}
		if want := c.status == codes.Error; (len(sp.Events) == 1 && sp.Events[0].Name == "exception") != want || len(sp.Events) > 1 {
			t.Errorf("%s: events %v, want an exception: %v", c.kind, sp.Events, want)
		}
		if c.status == codes.Error && sp.Status.Description != fmt.Sprint(errOf(c.err, c.kind)) {
			t.Errorf("%s: status description %q, want %q", c.kind, sp.Status.Description, errOf(c.err, c.kind))
		}
		if c.kind == "panic" {
			stack := ""
			for _, kv := range sp.Events[0].Attributes {
				if kv.Key == "exception.stacktrace" {
					stack = kv.Value.AsString()
				}
			}
			if !strings.Contains(stack, "TestOutcomes") {
				t.Errorf("panic: exception.stacktrace %q, want the handler's stack", stack)
			}
		}
	}
	bare := byID["bare"]
	if bare.Name != "process outcomes" || bare.Parent.IsValid() {
		t.Errorf("bare: span %q with parent %v, want %q, a root", bare.Name, bare.Parent, "process outcomes")
	}
	checkAttrs(t, bare, map[attribute.Key]string{otelq.KindKey: "", otelq.OutcomeKey: "ok",
		"messaging.message.body.size": "0", "messaging.destination.name": "outcomes"})
}

// errOf is the error a Worker's middleware sees for a case.
func errOf(err error, kind string) string {
	if kind == "panic" {
		return "panic: kaboom"
	}
	return err.Error()
}

func spanCtx(t *testing.T, state string) context.Context {
	t.Helper()
	ts, err := trace.ParseTraceState(state)
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	return trace.ContextWithSpanContext(context.Background(), sc)
}

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestInject(t *testing.T) {
	tc := otelq.WithPropagator(propagation.TraceContext{})
	if h := otelq.Inject(context.Background(), nil, tc); h != nil {
		t.Errorf("Inject of a ctx without a span into nil = %v, want nil", h)
	}
	if h := otelq.Inject(spanCtx(t, ""), nil); h != nil {
		t.Errorf("Inject with the no-op default propagator = %v, want nil", h)
	}
	h := otelq.Inject(spanCtx(t, "vendor=1"), nil, tc)
	if want := map[string]string{"traceparent": traceparent, "tracestate": "vendor=1"}; !maps.Equal(h, want) {
		t.Errorf("Inject into nil = %v, want %v", h, want)
	}

	// Into a map that has headers of the caller's and the fields of another
	// context: those are replaced, even a tracestate ctx has none of.
	old := map[string]string{"tenant": "acme", "traceparent": "00-11111111111111111111111111111111-2222222222222222-01", "tracestate": "old=1"}
	h = otelq.Inject(spanCtx(t, ""), old, tc)
	if want := map[string]string{"tenant": "acme", "traceparent": traceparent}; !maps.Equal(h, want) || !maps.Equal(old, want) {
		t.Errorf("Inject into %v = %v, want %v in the same map", old, h, want)
	}
}

func TestHeader(t *testing.T) {
	tc := otelq.WithPropagator(propagation.TraceContext{})
	shared := map[string]string{"tenant": "acme"}
	it, err := failKind.Item("x", "v", redisq.WithJob(redisq.Job{Headers: shared}), otelq.Header(spanCtx(t, ""), tc))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"tenant": "acme", "traceparent": traceparent}; !maps.Equal(it.Job.Headers, want) {
		t.Errorf("Header: headers %v, want %v", it.Job.Headers, want)
	}
	if len(shared) != 1 {
		t.Errorf("Header changed the map given to WithJob: %v", shared)
	}
	it, err = failKind.Item("x", "v", otelq.Header(context.Background(), tc))
	if err != nil {
		t.Fatal(err)
	}
	if it.Job.Headers != nil {
		t.Errorf("Header of a ctx without a span: headers %v, want nil", it.Job.Headers)
	}
}
