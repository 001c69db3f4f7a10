package otelq_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/otelq"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("OTELQ_HELPER"); mode != "" {
		os.Exit(runHelper(mode))
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: github.com/dq-go/delayqueue/otelq tests need redis-server on PATH: apt-get install -y redis-server")
		os.Exit(1)
	}
	goleak.VerifyTestMain(m)
}

// failKind is the kind of the item the helper enqueues with Header, whose
// handler fails.
var failKind = redisq.JobKind[string]{Name: "fail"}

// runHelper is the producer side of TestTraceContextCrossesProcesses, in a
// process of its own with a TracerProvider of its own and the global
// propagator (the default of Inject and Header): under one span per item,
// it enqueues "greet:1" with Inject (EnqueueItem.Job.Headers, next to a
// header of the caller's, with baggage) and "fail:1" with Header
// (JobKind.Enqueue), and prints each item's id with its span's trace id
// and span id.
func runHelper(mode string) int {
	if mode != "produce" {
		fmt.Println("ERR unknown mode", mode)
		return 3
	}
	ctx := context.Background()
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(ctx) }()
	tracer := tp.Tracer("otelq-test-producer")
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("OTELQ_ADDR")})
	defer c.Close()
	q, err := redisq.New(ctx, c, os.Getenv("OTELQ_QUEUE"))
	if err != nil {
		fmt.Println("ERR", err)
		return 2
	}
	defer q.Close()

	member, _ := baggage.NewMember("tenant", "acme")
	bag, _ := baggage.New(member)
	sctx, span := tracer.Start(baggage.ContextWithBaggage(ctx, bag), "produce greet")
	_, err = q.Add(sctx, redisq.EnqueueItem{ID: "greet:1", Payload: []byte("hello"),
		Job: redisq.Job{Kind: "greet", Headers: otelq.Inject(sctx, map[string]string{"app": "test"})}})
	span.End()
	if err != nil {
		fmt.Println("ERR", err)
		return 2
	}
	fmt.Println("ITEM greet:1", span.SpanContext().TraceID(), span.SpanContext().SpanID())

	sctx, span = tracer.Start(ctx, "produce fail")
	err = failKind.Enqueue(sctx, q, "fail:1", "x", time.Time{}, otelq.Header(sctx),
		redisq.MaxAttempts(2), redisq.Backoff(10*time.Millisecond, 10*time.Millisecond))
	span.End()
	if err != nil {
		fmt.Println("ERR", err)
		return 2
	}
	fmt.Println("ITEM fail:1", span.SpanContext().TraceID(), span.SpanContext().SpanID())
	return 0
}

// produce runs the helper against the redis-server at addr and returns
// each item's "traceid spanid".
func produce(t *testing.T, addr, queue string) map[string][2]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "OTELQ_HELPER=produce", "OTELQ_ADDR="+addr, "OTELQ_QUEUE="+queue)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.Bytes())
	}
	items := make(map[string][2]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "ITEM" {
			items[f[1]] = [2]string{f[2], f[3]}
		}
	}
	if len(items) != 2 {
		t.Fatalf("helper printed %d items, want 2:\n%s\nstderr:\n%s", len(items), out, stderr.Bytes())
	}
	return items
}

// newQueue returns a client and a queue on addr, closed at cleanup.
func newQueue(t *testing.T, addr, name string) *redisq.Queue {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	q, err := redisq.New(context.Background(), c, name, redisq.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// runWorker runs a Worker of h with mw on q until the test's cleanup.
func runWorker(t *testing.T, q *redisq.Queue, h redisq.Handler, mw redisq.Middleware) {
	t.Helper()
	w := redisq.NewWorker(q, h, redisq.WorkerOptions{Concurrency: 2, Heartbeat: -1, Middleware: []redisq.Middleware{mw}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Worker.Run: %v", err)
		}
	})
}

// newExporter returns an in-memory exporter and a TracerProvider that
// exports every span to it as it ends.
func newExporter(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return exp, tp
}

// waitSpans waits until exp holds n spans (10s at most) and returns them.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, n int) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := exp.GetSpans()
		if len(spans) >= n {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans exported within 10s, want %d: %v", len(spans), n, spans)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// setGlobals sets the global TracerProvider and propagator for the test,
// and noops at its end.
func setGlobals(t *testing.T, tp *sdktrace.TracerProvider, p propagation.TextMapPropagator) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(p)
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
}
