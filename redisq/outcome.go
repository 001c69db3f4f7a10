package redisq

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// NackOutcome says what a Nack did with the item.
type NackOutcome int

const (
	// NackRetried: the item is scheduled again (NackResult.Due).
	NackRetried NackOutcome = iota + 1
	// NackDeadLettered: the item had max attempts and is now dead.
	NackDeadLettered
	// NackDropped: the item had been cancelled in flight and is deleted.
	NackDropped
)

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

// CancelOutcome says what Cancel did.
type CancelOutcome int

const (
	// CancelRemoved: the item was scheduled or dead and is gone.
	CancelRemoved CancelOutcome = iota + 1
	// CancelMarked: the item is in flight and is now marked: its consumer's
	// Ack, Nack or DeadLetter deletes it, and an expired lease is not
	// retried. The consumer holding it may still act on it.
	CancelMarked
)

func (o CancelOutcome) String() string {
	switch o {
	case CancelRemoved:
		return "removed"
	case CancelMarked:
		return "marked in flight"
	}
	return "CancelOutcome(?)"
}
