package redisq

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// Message is one leased delivery of an item. Its lease ends at Deadline by
// the Redis clock unless extended; settle it with exactly one of Ack or Nack.
// A Message may be used from any goroutine.
type Message struct {
	q *Queue

	ID        string
	Payload   []byte
	Attempts  int       // deliveries so far, including this one (1 on first delivery)
	Due       time.Time // due time (Redis clock)
	ClaimedAt time.Time // Redis TIME when this lease was granted; never before Due
	Deadline  time.Time // lease deadline (Redis clock); updated by Extend

	// Job is the item's kind, headers and options, as enqueued.
	Job

	token  string
	result []byte // SetResult's, kept by the ack if the job retains the item
	// acked: an ack of this lease was applied and confirmed (by Ack, or by
	// the claim of an AckTake that carried it): Ack returns nil at once.
	acked atomic.Bool
}

// MaxResultBytes bounds what SetResult keeps.
const MaxResultBytes = 1 << 20

// SetResult sets the result that the Ack of m keeps with the item when
// its Job has a Retention (Item.Result while it is completed); without
// one the ack deletes the item and the result with it. A handler calls it
// before it returns (the Worker acks after), and a consumer before Ack,
// AckMany or AckTake: it is not safe to call concurrently with them. It
// copies b, and returns an error, keeping nothing, when b is over
// MaxResultBytes.
func (m *Message) SetResult(b []byte) error {
	if len(b) > MaxResultBytes {
		return fmt.Errorf("redisq: a result of %d bytes, over MaxResultBytes (%d)", len(b), MaxResultBytes)
	}
	m.result = append([]byte(nil), b...)
	return nil
}

// Ack deletes the item: it will not be delivered again. It blocks for one
// round trip. It returns nil on success, ErrLeaseLost when the lease has
// expired by the Redis clock or another consumer holds the item now (nothing
// changes: the item is or will be redelivered), or a Redis/context error (the
// ack may or may not have been applied). An Ack that was applied but whose
// reply was lost, and is run again within 30 s (as go-redis does itself after
// a read timeout, or a retry of yours), returns nil: the applied ack is
// remembered by its lease token. An Ack of a message whose ack this Message
// saw confirmed (an earlier Ack, or an AckTake that acked it before it
// failed) returns nil at once.
func (m *Message) Ack(ctx context.Context) error {
	if m.acked.Load() {
		return nil
	}
	l := m.lease()
	l.Result = m.result
	ok, err := m.q.db.Ack(ctx, l)
	if err != nil {
		return err
	}
	if !ok {
		return ErrLeaseLost
	}
	m.acked.Store(true)
	return nil
}

// Nack gives the item back for redelivery after the queue's backoff for this
// attempt, or moves it to the dead set when it has had max attempts. An item
// cancelled while in flight is deleted instead. Blocking and errors as Ack;
// like an Ack, a Nack (NackAfter, NackWith, DeadLetter) whose reply was lost
// and that go-redis runs again reports what the first run did: each call
// carries a request id, whose reply stays in the item hash (or, when the
// item was deleted, in a key that expires after 30 s).
// NackWith also tells which of these happened.
func (m *Message) Nack(ctx context.Context) error {
	_, err := m.nack(ctx, -1, "")
	return err
}

// NackAfter is Nack with an explicit redelivery delay instead of the backoff
// policy: the item is due at the first whole millisecond at or after Redis
// TIME + delay, as with EnqueueAfter. The max-attempts rule still applies.
func (m *Message) NackAfter(ctx context.Context, delay time.Duration) error {
	_, err := m.nack(ctx, delayUS(delay), "")
	return err
}

// nack runs the nack script; us < 0 applies the backoff policy.
func (m *Message) nack(ctx context.Context, us int64, reason string) (NackResult, error) {
	o := m.q.opt
	s, due, err := m.q.db.Nack(ctx, rdb.NackArgs{Lease: m.lease(), Delay: us, MaxAttempts: o.maxAttempts,
		BackoffBase: delayUS(o.backoffBase), BackoffMax: delayUS(o.backoffMax), Reason: reason})
	if err != nil {
		return NackResult{}, err
	}
	switch s {
	case rdb.SettledRetried:
		return NackResult{Outcome: NackRetried, Due: msTime(due)}, nil
	case rdb.SettledDead:
		return NackResult{Outcome: NackDeadLettered}, nil
	case rdb.SettledDropped:
		return NackResult{Outcome: NackDropped}, nil
	}
	return NackResult{}, ErrLeaseLost
}

// Extend sets the lease deadline to Redis TIME + d rounded up to the
// millisecond (d >= 1ms; smaller values are raised to 1ms) and updates
// m.Deadline. It blocks for one round trip and
// returns nil, ErrLeaseLost (the lease had already expired or moved on; nothing
// changes), or a Redis/context error. Extend is not safe to call concurrently
// with itself on the same Message.
func (m *Message) Extend(ctx context.Context, d time.Duration) error {
	if d < time.Millisecond {
		d = time.Millisecond
	}
	dl, err := m.extend(ctx, d)
	if err != nil {
		return err
	}
	m.Deadline = dl
	return nil
}

// extend sets the lease deadline to Redis TIME + d and returns it, or
// ErrLeaseLost; m.Deadline is left as it is (a Worker's extensions keep the
// claim's).
func (m *Message) extend(ctx context.Context, d time.Duration) (time.Time, error) {
	dl, ok, err := m.q.db.Extend(ctx, m.lease(), delayUS(d))
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		return time.Time{}, ErrLeaseLost
	}
	return msTime(dl), nil
}

// lease names m's lease for the storage layer.
func (m *Message) lease() rdb.Lease { return rdb.Lease{ID: m.ID, Token: m.token} }

// Release hands the message back without counting this delivery: the item
// goes back to the schedule at the due time it had, so it is due at once
// (ahead of the items due after it), with Attempts as it was before this
// lease, and a blocked consumer in any process is woken for it. It is for
// work a consumer took but will not do, such as a worker shutting down:
// another consumer gets the item within a round trip instead of after the
// visibility timeout, and it does not move the item towards the dead set.
// Release counts neither as a Nack nor as an expiry in Stats (the next
// claim counts as one more delivery, and its lateness includes the time
// the item was held). An item cancelled in flight is deleted instead. It
// blocks for one round trip, O(log n), and returns nil, ErrLeaseLost (the
// lease had expired or moved on; nothing changes), or a Redis/context error
// (the release may or may not have been applied). Like a Nack, a Release
// whose reply was lost and that go-redis runs again reports what the first
// run did. Release works after Close.
func (m *Message) Release(ctx context.Context) error {
	s, err := m.q.db.ReleaseLease(ctx, m.lease())
	if err != nil {
		return err
	}
	if s == rdb.SettledLost {
		return ErrLeaseLost
	}
	return nil
}

// Snooze hands the message back without counting this delivery, due d
// after Redis TIME (d < 0 means 0): "not now", not a failure (River's
// JobSnooze). Attempts stays as it was before this lease, its Job is
// unchanged, Stats counts it as Snoozed (not Nacked), a concurrency place
// it held is freed, and its claim is taken out of its limit key's rate
// log, so it does not use the key's rate budget. It returns the new due
// time, ErrLeaseLost (nothing changed), or a Redis/context error (it may
// or may not have been applied; run again after a lost reply, it reports
// what the first run did). An item cancelled in flight is deleted
// instead, and the due time is zero. A Worker's handler returns
// Snooze(d) instead of calling it. One round trip, O(log n).
func (m *Message) Snooze(ctx context.Context, d time.Duration) (time.Time, error) {
	s, due, err := m.q.db.Snooze(ctx, m.lease(), delayUS(max(d, 0)))
	switch {
	case err != nil:
		return time.Time{}, err
	case s == rdb.SettledLost:
		return time.Time{}, ErrLeaseLost
	case s == rdb.SettledDropped:
		return time.Time{}, nil
	}
	return msTime(due), nil
}

// NackOutcome says what a Nack did with the item.
type NackOutcome int

func (o NackOutcome) String() string {
	switch o {
	case NackRetried:
		return "retried"
	case NackDeadLettered:
		return "dead-lettered"
	case NackDropped:
		return "dropped"
	}
	return "NackOutcome(?)"
}

// NackResult is what NackWith did.
type NackResult struct {
	Outcome NackOutcome
	Due     time.Time // the redelivery due time (Redis clock) when retried
}

// NackOption configures NackWith.
type NackOption func(*nackOptions)

type nackOptions struct {
	delayUS int64 // -1: the queue's backoff policy
	reason  string
}

// NackDelay redelivers after d from Redis TIME instead of the backoff policy
// (as NackAfter; d < 0 means 0).
func NackDelay(d time.Duration) NackOption {
	return func(o *nackOptions) { o.delayUS = delayUS(d) }
}

// NackReason records reason as the cause of death ("max attempts: " +
// reason) if this Nack dead-letters the item. The reason is truncated so
// that the whole cause stored is at most MaxReasonLen bytes.
func NackReason(reason string) NackOption {
	return func(o *nackOptions) { o.reason = reason }
}

// MaxReasonLen is the longest cause of death stored (Item.DeadReason), in
// bytes: a DeadLetter reason is truncated to it, a NackReason to it less
// the "max attempts: " before it. Truncation does not split a UTF-8
// character.
const MaxReasonLen = 1024

// nackReasonPrefix goes before a NackReason in the cause of death (the nack
// script adds it).
const nackReasonPrefix = "max attempts: "

// truncReason truncates r to at most n bytes, backing off to the start of
// a UTF-8 character that the cut would split.
func truncReason(r string, n int) string {
	if len(r) <= n {
		return r
	}
	cut := n
	for cut > n-utf8.UTFMax && cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	if !utf8.RuneStart(r[cut]) {
		cut = n // not UTF-8 there: bytes are bytes
	}
	return r[:cut]
}

// NackWith is Nack (or NackAfter, with NackDelay) that reports what happened:
// the item was retried (and when it is due), dead-lettered (it had max
// attempts), or dropped (it was cancelled in flight). Blocking and errors as
// Ack; on an error the result is zero.
func (m *Message) NackWith(ctx context.Context, opts ...NackOption) (NackResult, error) {
	o := nackOptions{delayUS: -1}
	for _, f := range opts {
		f(&o)
	}
	return m.nack(ctx, o.delayUS, truncReason(o.reason, MaxReasonLen-len(nackReasonPrefix)))
}

// DeadLetter moves the item to the dead set now, whatever its attempts,
// recording reason (truncated to MaxReasonLen bytes; "" records
// "dead-lettered by consumer") as the cause of death: use it for messages
// that no retry can fix. An item cancelled in flight is deleted instead
// (NackDropped). It returns NackDeadLettered or NackDropped; blocking and
// errors as Ack.
func (m *Message) DeadLetter(ctx context.Context, reason string) (NackOutcome, error) {
	if reason == "" {
		reason = "dead-lettered by consumer"
	}
	s, err := m.q.db.DeadLetter(ctx, m.lease(), truncReason(reason, MaxReasonLen))
	if err != nil {
		return 0, err
	}
	switch s {
	case rdb.SettledDead:
		return NackDeadLettered, nil
	case rdb.SettledDropped:
		return NackDropped, nil
	}
	return 0, ErrLeaseLost
}

// AttemptLimit returns how many deliveries the message's item gets before
// a failure dead-letters it: its Job's MaxAttempts when set, else its
// queue's WithMaxAttempts (DefaultMaxAttempts unless set), and
// NoAttemptLimit when there is none. asynq's GetMaxRetry is
// AttemptLimit() - 1.
func (m *Message) AttemptLimit() int {
	n := m.MaxAttempts
	if n == 0 {
		n = m.q.opt.maxAttempts // the scripts' default: 0 is none
		if n == 0 {
			n = NoAttemptLimit
		}
	}
	return max(n, NoAttemptLimit)
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

const (
	// NackRetried: the item is scheduled again (NackResult.Due).
	NackRetried NackOutcome = iota + 1
	// NackDeadLettered: the item had max attempts and is now dead.
	NackDeadLettered
	// NackDropped: the item had been cancelled in flight and is deleted.
	NackDropped
)
