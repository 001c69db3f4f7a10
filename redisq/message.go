package redisq

import (
	"context"
	"fmt"
	"slices"
	"time"

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

	token string
}

// Ack deletes the item: it will not be delivered again. It blocks for one
// round trip. It returns nil on success, ErrLeaseLost when the lease has
// expired by the Redis clock or another consumer holds the item now (nothing
// changes: the item is or will be redelivered), or a Redis/context error (the
// ack may or may not have been applied). An Ack that was applied but whose
// reply was lost, and is run again within 30 s (as go-redis does itself after
// a read timeout, or a retry of yours), returns nil: the applied ack is
// remembered by its lease token.
func (m *Message) Ack(ctx context.Context) error {
	ok, err := m.q.db.Ack(ctx, m.lease())
	if err != nil {
		return err
	}
	if !ok {
		return ErrLeaseLost
	}
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
	dl, ok, err := m.q.db.Extend(ctx, m.lease(), delayUS(d))
	if err != nil {
		return err
	}
	if !ok {
		return ErrLeaseLost
	}
	m.Deadline = msTime(dl)
	return nil
}

// lease names m's lease for the storage layer.
func (m *Message) lease() rdb.Lease { return rdb.Lease{ID: m.ID, Token: m.token} }

// AckMany acknowledges msgs in one pipelined round trip: one script per 200
// messages, which reads Redis TIME and updates the counters once.
// It returns one error per message, each with Ack's meaning; all nil on full
// success. A message listed twice is acked once. A message taken from
// another queue (another name) is not acked: its error says so. A nil
// element gets an error of its own and the others are acked.
func (q *Queue) AckMany(ctx context.Context, msgs []*Message) []error {
	errs := make([]error, len(msgs))
	if slices.Contains(msgs, nil) {
		var rest []*Message
		var at []int
		for i, m := range msgs {
			if m == nil {
				errs[i] = fmt.Errorf("redisq: AckMany: message %d is nil", i)
				continue
			}
			rest, at = append(rest, m), append(at, i)
		}
		for j, err := range q.AckMany(ctx, rest) {
			errs[at[j]] = err
		}
		return errs
	}
	if len(msgs) == 0 {
		return errs
	}
	ls := make([]rdb.Lease, len(msgs))
	for i, m := range msgs {
		ls[i] = rdb.Lease{ID: m.ID, Token: m.token, Foreign: m.q.db.Keys.Items != q.db.Keys.Items}
	}
	for i, a := range q.db.AckMany(ctx, ls) {
		switch {
		case a.Err != nil:
			errs[i] = a.Err
		case ls[i].Foreign:
			errs[i] = fmt.Errorf("redisq: AckMany: message %q is from queue %q, not %q", msgs[i].ID, msgs[i].q.name, q.name)
		case !a.OK:
			errs[i] = ErrLeaseLost
		}
	}
	return errs
}
