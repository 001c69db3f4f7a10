package redisq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// Handler handles one message for a Worker. It returns nil when the work is
// done (the worker acks the message), Snooze(d) when it is not time yet
// (the message comes back d later, no attempt counted, not a failure), or
// an error: the worker then Nacks it with the queue's backoff and the
// error's text as the reason, unless the error wraps a SkipRetryError
// (dead-lettered at once) or a RetryAfterError (redelivered after its
// delay). A panic is recovered and treated as an
// error (see PanicError). ctx carries the message (MessageFromContext) and
// is cancelled when the message's lease is lost (the cause wraps
// ErrLeaseLost) or when a Shutdown runs out of time (ErrWorkerStopped);
// either way the worker drops the handler's result. The handler must not
// settle the message itself (Ack, Nack, Release): the worker does.
type Handler func(ctx context.Context, m *Message) error

// SkipRetryError is a handler error that no retry can fix: the worker
// dead-letters the message at once, with the handler's error text as the
// reason. Make one with SkipRetry; find one with errors.As.
type SkipRetryError struct {
	Err error // the cause; may be nil
}

// SkipRetry wraps err so that the worker dead-letters the message at once
// instead of retrying it. The dead item's reason is the text of the error
// the handler returns (which may wrap this one further); a nil err is
// allowed ("redisq: skip retry").
func SkipRetry(err error) error { return &SkipRetryError{Err: err} }

func (e *SkipRetryError) Error() string {
	if e.Err == nil {
		return "redisq: skip retry"
	}
	return e.Err.Error()
}

func (e *SkipRetryError) Unwrap() error { return e.Err }

// RetryAfterError is a handler error that asks for a redelivery after
// Delay instead of the queue's backoff (Message.NackAfter); the attempt
// counts, so max attempts still dead-letters the message. Make one with
// RetryAfter; find one with errors.As.
type RetryAfterError struct {
	Err   error // the cause; may be nil
	Delay time.Duration
}

// RetryAfter wraps err so that the worker redelivers the message d after
// Redis TIME (d < 0 means 0) instead of after the backoff, with the error's
// text as the Nack reason. It is a failure: the attempt counts (max
// attempts dead-letters the message), the Nack is counted and logged, and
// the run is an error for metrics and traces. For "not now" without a
// failure, return Snooze(d). A nil err is allowed ("redisq: retry after
// d"). SkipRetry wins when an error wraps both.
func RetryAfter(err error, d time.Duration) error {
	return &RetryAfterError{Err: err, Delay: max(d, 0)}
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return "redisq: retry after " + e.Delay.String()
	}
	return e.Err.Error()
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// SnoozeError is a handler's "not now": the worker hands the message back
// due Delay after Redis TIME (Message.Snooze), with no attempt counted. It
// is not a failure: not a Nack in Stats (Snoozed counts it), logged at
// Info by Logging, not an error for dqprom's metrics or otelq's spans, and
// its claim is taken out of its limit key's rate log, so a snoozed run
// does not use the key's rate budget. Make one with Snooze; find one with
// errors.As.
type SnoozeError struct {
	Delay time.Duration
}

// Snooze returns the error that makes a Worker snooze the message for d (d
// < 0 means 0), River's JobSnooze: it comes back d after Redis TIME,
// Attempts as it was before this run, its Job unchanged, so max attempts
// never dead-letters a job for snoozing (a job that snoozes for ever runs
// for ever: bound it with NotAfter). Unlike RetryAfter it is no failure.
// A SkipRetry or RetryAfter that also wraps it wins.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: max(d, 0)} }

func (e *SnoozeError) Error() string { return "redisq: snooze " + e.Delay.String() }

// PanicError is the error a Worker makes of a handler's panic: middleware
// sees it as the handler's error, the worker logs it with its stack, and
// the message is Nacked with the reason "panic: " and the value.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the panicking goroutine's stack (runtime/debug.Stack)
}

func (e *PanicError) Error() string { return fmt.Sprint("panic: ", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

type messageKey struct{}

// MessageFromContext returns the message a Worker's handler is running for,
// from the handler's ctx (or one derived from it).
func MessageFromContext(ctx context.Context) (*Message, bool) {
	m, ok := ctx.Value(messageKey{}).(*Message)
	return m, ok
}

// recoverPanics turns a panic of h into a *PanicError returned by h, so
// that middleware sees it as the handler's error.
func recoverPanics(h Handler) Handler {
	return func(ctx context.Context, m *Message) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		return h(ctx, m)
	}
}

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
// handler's duration. A Snooze is logged at Info ("redisq: snoozed"),
// with its delay.
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
			var snooze *SnoozeError
			switch {
			case err == nil:
				l.LogAttrs(ctx, slog.LevelInfo, "redisq: handled", attrs...)
			case Outcome(err) == "snooze" && errors.As(err, &snooze):
				l.LogAttrs(ctx, slog.LevelInfo, "redisq: snoozed", append(attrs, slog.Duration("delay", snooze.Delay))...)
			default:
				l.LogAttrs(ctx, slog.LevelWarn, "redisq: handler failed", append(attrs, slog.String("err", err.Error()))...)
			}
			return err
		}
	}
}

// Outcome names what a handler's error makes a Worker do, for logs and
// metrics: "ok" (nil: ack), "panic" (a *PanicError), "skip_retry" (a
// *SkipRetryError: dead-letter), "retry_after" (a *RetryAfterError: nack
// after its delay), "snooze" (a *SnoozeError: back later, no attempt
// counted) or "error" (nack with the backoff). Every outcome but "ok" and
// "snooze" is a failure (see IsFailure).
func Outcome(err error) string {
	var pe *PanicError
	var skip *SkipRetryError
	var later *RetryAfterError
	var snooze *SnoozeError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &pe):
		return "panic"
	case errors.As(err, &skip):
		return "skip_retry"
	case errors.As(err, &later):
		return "retry_after"
	case errors.As(err, &snooze):
		return "snooze"
	}
	return "error"
}

// IsFailure reports whether a handler's error is a failure, for metrics,
// traces and error rates: any error but a Snooze (asynq's IsFailure).
func IsFailure(err error) bool { return err != nil && Outcome(err) != "snooze" }
