package rdb

import (
	"context"
	"errors"
)

var (
	scriptAck          = newScript("ack", kLease, kStats).acked()
	scriptAckMany      = newScript("ack_many", kLease, kStats).acked()
	scriptNack         = newScript("nack", kSched, kLease, kDead, kWake, kStats, kSeq).withRID().acked()
	scriptExtend       = newScript("extend", kLease, kTimer, kWake).acked()
	scriptDeadLetter   = newScript("dead_letter", kLease, kDead, kStats, kSeq).withRID().acked()
	scriptReleaseLease = newScript("release_lease", kSched, kLease, kWake, kStats, kSeq).withRID().acked()
)

// Lease names one leased delivery: its item and its token.
type Lease struct {
	ID, Token string
	// Foreign: the lease is of another queue; AckMany answers lost for it
	// without touching this queue's item of the same id.
	Foreign bool
	// Result is kept with the item by an ack if its job retains it.
	Result []byte
}

// Ack acks one lease (lua/ack.lua): false when it is lost (expired or
// superseded; an ack of it already applied reports true: its tombstone).
func (r *Runner) Ack(ctx context.Context, l Lease) (bool, error) {
	res, err := r.run(ctx, scriptAck, []string{r.Keys.Item(l.ID), r.Keys.Tomb(l.Token)}, l.ID, l.Token, l.Result)
	if err != nil {
		return false, err
	}
	return toInt(res[0]) == 1, nil
}

// Acked is what AckMany did with one lease: acked, or Err.
type Acked struct {
	OK  bool
	Err error
}

// AckMany acks leases in order, one ack-many script per chunk (ChunkEnds
// by id, token and result), pipelined (see runChunks).
func (r *Runner) AckMany(ctx context.Context, ls []Lease) []Acked {
	ends := ChunkEnds(len(ls), func(i int) int { return len(ls[i].ID) + len(ls[i].Token) + len(ls[i].Result) })
	chunks := make([]chunk, len(ends))
	for c, hi := range ends {
		part := ls[ChunkStart(ends, c):hi]
		ch := chunk{make([]string, 0, 2*len(part)), make([]interface{}, 0, 3*len(part))}
		for _, l := range part {
			// An empty token owns no lease: the script answers 0.
			tok := l.Token
			if l.Foreign {
				tok = ""
			}
			ch.keys = append(ch.keys, r.Keys.Item(l.ID), r.Keys.Tomb(tok))
			ch.args = append(ch.args, l.ID, tok, l.Result)
		}
		chunks[c] = ch
	}
	out := make([]Acked, len(ls))
	for c, rep := range r.runChunks(ctx, scriptAckMany, chunks) {
		lo, hi := ChunkStart(ends, c), ends[c]
		err := rep.err
		if err == nil && len(rep.res) != hi-lo {
			err = errors.New("redisq: ack many: malformed reply")
		}
		for i := lo; i < hi; i++ {
			if err != nil {
				out[i].Err = err
			} else {
				out[i].OK = toInt(rep.res[i-lo]) == 1
			}
		}
	}
	return out
}

// NackArgs: a lease to give back (lua/nack.lua).
type NackArgs struct {
	Lease
	Delay       int64 // µs; -1: the backoff policy
	MaxAttempts int
	BackoffBase int64 // µs
	BackoffMax  int64 // µs
	Reason      string
}

// Settled is what a nack, dead letter or release of a lease did.
type Settled int

const (
	SettledLost    Settled = iota // the lease was lost; nothing changed
	SettledRetried                // back in the schedule (Due)
	SettledDead                   // dead-lettered
	SettledDropped                // deleted: it was cancelled in flight
)

// Nack gives a lease back for redelivery, or dead-letters it at max
// attempts; due is the redelivery's due time (ms) when retried.
func (r *Runner) Nack(ctx context.Context, a NackArgs) (s Settled, due int64, err error) {
	res, err := r.runOnce(ctx, scriptNack, []string{r.Keys.Item(a.ID)}, a.ID, a.Token, a.Delay, a.MaxAttempts,
		a.BackoffBase, a.BackoffMax, a.Reason)
	if err != nil {
		return 0, 0, err
	}
	return settled(res), dueOf(res), nil
}

// DeadLetter dead-letters a lease with reason (lua/dead_letter.lua).
func (r *Runner) DeadLetter(ctx context.Context, l Lease, reason string) (Settled, error) {
	res, err := r.runOnce(ctx, scriptDeadLetter, []string{r.Keys.Item(l.ID)}, l.ID, l.Token, reason)
	if err != nil {
		return 0, err
	}
	return settled(res), nil
}

// ReleaseLease hands a lease back uncounted (lua/release_lease.lua).
func (r *Runner) ReleaseLease(ctx context.Context, l Lease) (Settled, error) {
	res, err := r.runOnce(ctx, scriptReleaseLease, []string{r.Keys.Item(l.ID)}, l.ID, l.Token, -1)
	if err != nil {
		return 0, err
	}
	return settled(res), nil
}

// Snooze hands a lease back uncounted, due us µs after TIME, and takes its
// claim out of its rate limit's log (lua/release_lease.lua); due is the
// new due time (ms) when it is back in sched.
func (r *Runner) Snooze(ctx context.Context, l Lease, us int64) (s Settled, due int64, err error) {
	res, err := r.runOnce(ctx, scriptReleaseLease, []string{r.Keys.Item(l.ID)}, l.ID, l.Token, max(us, 0))
	if err != nil {
		return 0, 0, err
	}
	return settled(res), dueOf(res), nil
}

// settled reads the outcome code of nack, dead letter and release: 0 lost,
// 1 retried (with the due time), 2 dead, 3 dropped.
func settled(res []interface{}) Settled {
	switch toInt(res[0]) {
	case 1:
		return SettledRetried
	case 2:
		return SettledDead
	case 3:
		return SettledDropped
	}
	return SettledLost
}

func dueOf(res []interface{}) int64 {
	if len(res) > 1 {
		return ToMS(res[1])
	}
	return 0
}

// Extend sets a lease's deadline to TIME + us (lua/extend.lua): the new
// deadline (ms), or ok false when the lease is lost.
func (r *Runner) Extend(ctx context.Context, l Lease, us int64) (deadline int64, ok bool, err error) {
	res, err := r.run(ctx, scriptExtend, []string{r.Keys.Item(l.ID)}, l.ID, l.Token, us)
	if err != nil {
		return 0, false, err
	}
	if toInt(res[0]) == 0 {
		return 0, false, nil
	}
	return toInt(res[1]), true, nil
}
