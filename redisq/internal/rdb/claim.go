package rdb

import (
	"context"
	"errors"
	"fmt"
)

var (
	scriptClaim    = newScript("claim", kSched, kLease, kDead, kWake, kStats, kSeq, kTimer, kLate)
	scriptAckClaim = newScript("ack_claim", kSched, kLease, kDead, kWake, kStats, kSeq, kTimer, kLate).acked()
	// The same keys, then each ack's item and tombstone.
	scriptAckManyClaim = newScript("ack_many_claim", kSched, kLease, kDead, kWake, kStats, kSeq, kTimer, kLate).acked()
)

// ClaimArgs are the arguments of a claim (lua/claim.lua), of an ack and a
// claim in one script (lua/ack_claim.lua) when AckID is set, or of several
// acks and a claim (lua/ack_many_claim.lua) when Acks is.
type ClaimArgs struct {
	N            int   // items to lease, at most ScriptBatch (0: only reclaim expired leases)
	Visibility   int64 // lease length, µs
	MaxAttempts  int   // 0: no limit
	BackoffBase  int64 // µs
	BackoffMax   int64 // µs
	ReclaimBatch int   // expired leases to return, at most ScriptBatch
	TimerID      string
	// Watch: the caller's Queue rings the wake marker for due work this
	// claim leaves behind unless one of its consumers claims first.
	Watch bool
	// AckID and AckToken: a lease to ack first (AckTake), keeping
	// AckResult if its job retains it.
	AckID, AckToken string
	AckResult       []byte
	// Acks: leases to ack first (at most ScriptBatch), each reported in
	// ClaimReply.Acked; the claim runs whatever they find. Not with AckID.
	Acks []Lease
}

// Claimed is one item a claim leased.
type Claimed struct {
	ID       string
	Payload  []byte
	Attempts int
	Due      int64 // ms
	Token    string
	Deadline int64 // lease deadline, ms
	Job      Job
}

// ClaimReply is what a claim did.
type ClaimReply struct {
	Now int64 // Redis TIME, ms
	// Next is ms until the earliest due item or lease deadline (-1: none,
	// 0: work is waiting now; at most a day).
	Next int64
	// Timed: the caller's Queue now owns the timer and must act at Next.
	Timed bool
	// LeaseLost: the lease to ack first (AckID) was lost; nothing was
	// claimed.
	LeaseLost bool
	Items     []Claimed
	// Acked: for each of ClaimArgs.Acks, whether it was acked (or an ack
	// of it had been: its tombstone); false: its lease was lost.
	Acked []bool
}

// Claim runs one claim, bounded whatever the arguments (see
// lua/claim.lua). A claim that acks (AckID, Acks) returns its reply with an
// error wrapping ErrNotReplicated when the replicas did not confirm it: its
// items are leased to the caller all the same.
func (r *Runner) Claim(ctx context.Context, a ClaimArgs) (ClaimReply, error) {
	s := scriptClaim
	watch := "0"
	if a.Watch {
		watch = "1"
	}
	args := []interface{}{a.N, a.Visibility, a.MaxAttempts, a.BackoffBase, a.BackoffMax, a.ReclaimBatch, a.TimerID, watch}
	var extra []string
	switch {
	case a.AckID != "":
		s, args = scriptAckClaim, append(args, a.AckID, a.AckToken, a.AckResult)
		extra = []string{r.Keys.Item(a.AckID), r.Keys.Tomb(a.AckToken)}
	case len(a.Acks) > ScriptBatch:
		return ClaimReply{}, fmt.Errorf("redisq: claim: %d acks, more than %d", len(a.Acks), ScriptBatch)
	case len(a.Acks) > 0:
		s = scriptAckManyClaim
		for _, l := range a.Acks {
			args = append(args, l.ID, l.Token, l.Result)
			extra = append(extra, r.Keys.Item(l.ID), r.Keys.Tomb(l.Token))
		}
	}
	res, err := r.run(ctx, s, extra, args...)
	if err != nil && (res == nil || !errors.Is(err, ErrNotReplicated)) {
		return ClaimReply{}, err
	}
	// An ErrNotReplicated comes with the script's reply: the acks and the
	// claim were applied on the master, and the items it leased are the
	// caller's, returned with the error.
	c, derr := r.claimReply(a, res)
	if derr != nil {
		return ClaimReply{}, derr
	}
	return c, err
}

// claimReply decodes the reply of a claim run with a.
//
// Output: {now, next, timed, item..., acked...}, each item its id, payload,
// attempts, due, token, lease deadline and the job fields; acked has one 0/1
// per a.Acks; next is -2 when a.AckID's lease was lost.
func (r *Runner) claimReply(a ClaimArgs, res []interface{}) (ClaimReply, error) {
	if len(res) < 3 {
		return ClaimReply{}, errors.New("redisq: claim: malformed reply")
	}
	var acked []bool
	if k := len(a.Acks); k > 0 {
		if len(res) < 3+k {
			return ClaimReply{}, errors.New("redisq: ack many and claim: malformed reply")
		}
		acked = make([]bool, k)
		for i, v := range res[len(res)-k:] {
			acked[i] = toInt(v) == 1
		}
		res = res[:len(res)-k]
	}
	c := ClaimReply{Now: toInt(res[0]), Next: toInt(res[1]), Timed: toInt(res[2]) == 1, Acked: acked}
	if c.Next == -2 {
		return ClaimReply{Now: c.Now, LeaseLost: true}, nil
	}
	const stride = 6 + len(JobFields) // id, payload, attempts, due, token, deadline, the job fields
	for i := 3; i+stride <= len(res); i += stride {
		p, _ := res[i+1].(string)
		id, _ := res[i].(string)
		tok, _ := res[i+4].(string)
		c.Items = append(c.Items, Claimed{
			ID: id, Payload: []byte(p), Attempts: int(toInt(res[i+2])), Due: toInt(res[i+3]),
			Token: tok, Deadline: toInt(res[i+5]), Job: jobOf(res[i+6 : i+stride]),
		})
	}
	return c, nil
}
