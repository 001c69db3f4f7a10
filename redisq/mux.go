package redisq

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Mux is a Handler that routes each message to the handler of its Kind,
// as http.ServeMux routes a request by its path: give its Serve method to
// NewWorker. A message of a kind with no handler goes to the NotFound
// handler, by default DefaultNotFound. The zero value is an empty Mux
// ready to use; a Mux is safe for concurrent use, and handlers may be
// added while a Worker runs it.
type Mux struct {
	mu       sync.RWMutex
	handlers map[string]Handler // guarded by mu
	notFound Handler            // guarded by mu; nil: DefaultNotFound
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{} }

// Handle registers h for the messages of kind. It panics on a nil h or a
// kind that already has a handler.
func (mx *Mux) Handle(kind string, h Handler) {
	if h == nil {
		panic("redisq: Mux.Handle with a nil Handler")
	}
	mx.mu.Lock()
	defer mx.mu.Unlock()
	if _, dup := mx.handlers[kind]; dup {
		panic(fmt.Sprintf("redisq: Mux.Handle: kind %q has a handler already", kind))
	}
	if mx.handlers == nil {
		mx.handlers = make(map[string]Handler)
	}
	mx.handlers[kind] = h
}

// HandleFunc registers fn for the messages of kind, as Handle does: the
// habit of net/http and asynq (Handle takes a func as it is, a Handler
// being one).
func (mx *Mux) HandleFunc(kind string, fn func(ctx context.Context, m *Message) error) {
	mx.Handle(kind, fn)
}

// NotFound sets the handler of the messages whose kind has none (nil:
// DefaultNotFound again). Give SkipRetry's handler to dead-letter them at
// once instead:
//
//	mux.NotFound(func(ctx context.Context, m *redisq.Message) error {
//		return redisq.SkipRetry(&redisq.UnknownKindError{Kind: m.Kind})
//	})
func (mx *Mux) NotFound(h Handler) {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	mx.notFound = h
}

// Kinds returns the kinds that have a handler, sorted.
func (mx *Mux) Kinds() []string {
	mx.mu.RLock()
	defer mx.mu.RUnlock()
	ks := make([]string, 0, len(mx.handlers))
	for k := range mx.handlers {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Serve runs the handler of m's kind: it is the Mux as a Handler.
func (mx *Mux) Serve(ctx context.Context, m *Message) error {
	mx.mu.RLock()
	h, ok := mx.handlers[m.Kind]
	if !ok {
		h = mx.notFound
	}
	mx.mu.RUnlock()
	if h == nil {
		h = DefaultNotFound
	}
	return h(ctx, m)
}

// UnknownKindError is the error of a message whose kind has no handler in
// a Mux. A Worker logs it at Warn with the kind.
type UnknownKindError struct {
	Kind string
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("redisq: no handler for kind %q", e.Kind)
}

// DefaultNotFound is the handler of a Mux for a kind it has none for: it
// returns an *UnknownKindError, so the message is retried after the
// queue's (or its Job's) backoff and dead-lettered at max attempts with
// that reason. A retry rather than a dead letter at once, because the
// usual cause is a rolling deploy, where a new producer enqueues a kind
// before every worker runs the code that handles it: a worker that knows
// it will take it on a later attempt. Dead ones are requeued together
// once the deploy is done (RequeueDeadByReason, or dqctl).
func DefaultNotFound(_ context.Context, m *Message) error {
	return &UnknownKindError{Kind: m.Kind}
}

// Codec encodes the payloads of a JobKind.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the Codec of encoding/json, JobKind's default.
var JSON Codec = jsonCodec{}

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// JobKind is a kind of job whose payload is a T: one value, shared by
// producers and handlers, that names the kind, encodes and decodes its
// payload and sets its default options. The zero Codec is JSON.
//
//	var Refund = redisq.JobKind[RefundArgs]{Name: "refund", Defaults: []redisq.JobOption{redisq.MaxAttempts(5)}}
//
//	Refund.EnqueueAfter(ctx, q, "refund:42", RefundArgs{Order: 42}, 0)
//	Refund.Handle(mux, func(ctx context.Context, m *redisq.Message, a RefundArgs) error { ... })
type JobKind[T any] struct {
	Name  string
	Codec Codec // nil: JSON
	// Defaults are applied to each item of this kind before the options
	// of the call.
	Defaults []JobOption
}

func (k JobKind[T]) codec() Codec {
	if k.Codec == nil {
		return JSON
	}
	return k.Codec
}

// Item returns the EnqueueItem of v under id, due now unless the caller
// sets At or After, for Add, EnqueueMany and ScheduleItem: its payload is
// v encoded, its Job the kind with the defaults and opts.
func (k JobKind[T]) Item(id string, v T, opts ...JobOption) (EnqueueItem, error) {
	b, err := k.codec().Marshal(v)
	if err != nil {
		return EnqueueItem{}, fmt.Errorf("redisq: encoding a payload of kind %q: %w", k.Name, err)
	}
	j := jobOf(append(slices.Clip(k.Defaults), opts...))
	j.Kind = k.Name
	return EnqueueItem{ID: id, Payload: b, Job: j}, nil
}

// Enqueue is p.Add of v under id, due at at (see Queue.Enqueue).
func (k JobKind[T]) Enqueue(ctx context.Context, p Producer, id string, v T, at time.Time, opts ...JobOption) error {
	it, err := k.Item(id, v, opts...)
	if err != nil {
		return err
	}
	if at.IsZero() { // the zero Time is a time long past: due now, as Enqueue has it
		at = time.Unix(0, 0)
	}
	it.At = at
	_, err = p.Add(ctx, it)
	return err
}

// EnqueueAfter is p.Add of v under id, due delay after Redis TIME (see
// Queue.EnqueueAfter).
func (k JobKind[T]) EnqueueAfter(ctx context.Context, p Producer, id string, v T, delay time.Duration, opts ...JobOption) (time.Time, error) {
	it, err := k.Item(id, v, opts...)
	if err != nil {
		return time.Time{}, err
	}
	it.After = delay
	return p.Add(ctx, it)
}

// Decode decodes m's payload as a T. An error says which kind and type
// failed; wrapped in SkipRetry by Handle.
func (k JobKind[T]) Decode(m *Message) (T, error) {
	var v T
	if err := k.codec().Unmarshal(m.Payload, &v); err != nil {
		return v, fmt.Errorf("redisq: the payload of %q (kind %q) does not decode as %T: %w", m.ID, m.Kind, v, err)
	}
	return v, nil
}

// Handle registers fn in mux for this kind: each message's payload is
// decoded as a T first, and one that does not decode is dead-lettered at
// once (SkipRetry) with a reason that says so, since no retry can fix it.
// From then on, Queue.Register in this process warns of a recurring
// registration of this kind whose payload does not decode as a T (use
// k.Register, which encodes a T).
func (k JobKind[T]) Handle(mux *Mux, fn func(ctx context.Context, m *Message, v T) error) {
	if fn == nil {
		panic("redisq: JobKind.Handle with a nil func")
	}
	var zero T
	noteTyped(k.Name, kindDecoder{typ: fmt.Sprintf("%T", zero), decode: func(b []byte) error {
		var v T
		return k.codec().Unmarshal(b, &v)
	}})
	mux.Handle(k.Name, func(ctx context.Context, m *Message) error {
		v, err := k.Decode(m)
		if err != nil {
			return SkipRetry(err)
		}
		return fn(ctx, m, v)
	})
}

// HandleJSON is shorthand for JobKind[T]{Name: kind}.Handle(mux, fn).
func HandleJSON[T any](mux *Mux, kind string, fn func(ctx context.Context, m *Message, v T) error) {
	JobKind[T]{Name: kind}.Handle(mux, fn)
}
