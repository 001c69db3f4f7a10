package redisq

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Middleware wraps a Handler, for what every message's handling shares:
// logging, metrics, tracing. It returns a Handler that calls next (or does
// not). See WorkerOptions.Middleware for the order; dqprom.WorkerMetrics
// provides Prometheus metrics.
type Middleware func(next Handler) Handler

// Logging returns a Middleware that logs one record per handled message
// to l (slog.Default() if nil), with the handler's ctx: at Info
// ("redisq: handled") when the handler returned nil, at Warn ("redisq:
// handler failed") with its error otherwise (a panic as "panic: ..."; the
// worker logs its stack). Each record has the message's queue, id and
// attempt, the outcome (ok, error, skip_retry, retry_after, panic) and the
// handler's duration.
func Logging(l *slog.Logger) Middleware {
	if l == nil {
		l = slog.Default()
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			start := time.Now()
			err := next(ctx, m)
			attrs := []slog.Attr{
				slog.String("queue", m.QueueName()),
				slog.String("id", m.ID),
				slog.Int("attempt", m.Attempts),
				slog.String("outcome", Outcome(err)),
				slog.Duration("duration", time.Since(start)),
			}
			if err == nil {
				l.LogAttrs(ctx, slog.LevelInfo, "redisq: handled", attrs...)
			} else {
				l.LogAttrs(ctx, slog.LevelWarn, "redisq: handler failed", append(attrs, slog.String("err", err.Error()))...)
			}
			return err
		}
	}
}

// Outcome names what a handler's error makes a Worker do, for logs and
// metrics: "ok" (nil: ack), "panic" (a *PanicError), "skip_retry" (a
// *SkipRetryError: dead-letter), "retry_after" (a *RetryAfterError: nack
// after its delay) or "error" (nack with the backoff).
func Outcome(err error) string {
	var pe *PanicError
	var skip *SkipRetryError
	var later *RetryAfterError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &pe):
		return "panic"
	case errors.As(err, &skip):
		return "skip_retry"
	case errors.As(err, &later):
		return "retry_after"
	}
	return "error"
}

// QueueName returns the name of the queue the message was taken from.
func (m *Message) QueueName() string { return m.q.name }

// LogValue makes a Message log as a group of its queue, id and attempt
// (slog.LogValuer): slog.Any("msg", m) in a handler.
func (m *Message) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("queue", m.q.name),
		slog.String("id", m.ID),
		slog.Int("attempt", m.Attempts),
	)
}
