package redisq

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file holds the occurrence policies of recurring registrations:
// what becomes of an occurrence that would start while an earlier one
// still runs (Overlap), or too late (CatchUpWindow). The claim applies
// them (lua/include/occ_read.lua, occ_skip.lua), atomically with the lease, so they
// hold across any number of consumers.

// OverlapPolicy says what becomes of an occurrence of a recurring
// registration that comes due while an earlier occurrence of the same
// registration still runs.
type OverlapPolicy int

const (
	// OverlapAllow, the default: the occurrence runs beside the earlier
	// one.
	OverlapAllow OverlapPolicy = iota
	// OverlapSkip: the occurrence is skipped (deleted unstarted, counted in
	// Registration.Skipped) if, when a consumer claims it, another
	// occurrence of the registration is leased and its lease is live.
	OverlapSkip
)

// String returns "allow" or "skip".
func (p OverlapPolicy) String() string {
	switch p {
	case OverlapAllow:
		return "allow"
	case OverlapSkip:
		return "skip"
	}
	return fmt.Sprintf("OverlapPolicy(%d)", int(p))
}

// SkipReason says why an occurrence was skipped (Registration.LastSkipReason).
type SkipReason string

const (
	// SkipOverlap: an earlier occurrence was running (OverlapSkip).
	SkipOverlap SkipReason = "overlap"
	// SkipLate: it would have started more than its CatchUpWindow late.
	SkipLate SkipReason = "late"
)

// Overlap sets what becomes of an occurrence that comes due while another
// occurrence of the registration still runs: with OverlapSkip, a consumer
// that claims it while another one is leased (any attempt, its lease live:
// a consumer that died holding it stops counting when the lease expires)
// deletes it unstarted instead, and the registration counts it
// (Registration.Skipped). The check is made at the occurrence's first
// claim, in the claim's script, so it is exact whatever the number of
// consumers; a retry of an occurrence is not skipped, and an occurrence
// that waits for its retry is not running. An occurrence of the policy
// counts as running whoever runs it; an extra run (RunNow), a backfilled
// occurrence (Backfill), or an occurrence an operator moved (RunNow,
// Reschedule, Schedule, a requeue of a dead one) is not subject to it and
// does not count. A change of the policy (Register) applies to the
// occurrences enqueued after it. It panics on a policy it does not know.
func Overlap(p OverlapPolicy) RegisterOption {
	if p != OverlapAllow && p != OverlapSkip {
		panic(fmt.Sprintf("redisq: Overlap(%d): not a policy", int(p)))
	}
	return func(c *registerConfig) { c.overlap = p }
}

// CatchUpWindow makes an occurrence run only if it starts within d of
// when it became due: a consumer that claims it later (the consumers were
// down, or busy with a backlog) deletes it unstarted, and the registration
// counts it (Registration.Skipped, SkipLate). When it became due is its
// score in the schedule: the occurrence (with its Jitter), or the slot or
// place a rate or concurrency limit gave it. The check is made at the
// first claim, like Overlap's; retries are not skipped, and an occurrence
// released unstarted (a Worker stopping) is checked again when it is
// claimed again.
//
// It also bounds the catch-up of the keepers: when they were all down, the
// first one back enqueues the missed occurrences of the last d only
// (oldest first, at most CatchUp's bound, MaxCatchUp when CatchUp is not
// given), then the first after now. It panics if d is negative; 0 is the
// default, no window.
func CatchUpWindow(d time.Duration) RegisterOption {
	if d < 0 {
		panic(fmt.Sprintf("redisq: CatchUpWindow with a negative window %v", d))
	}
	return func(c *registerConfig) { c.window = d }
}

// occPolicy is the stored occurrence policy (the registration's field op,
// copied onto its occurrences): "O,W", O "1" under OverlapSkip, W the
// catch-up window in ms or empty. "" when neither is set.
type occPolicy struct {
	overlap OverlapPolicy
	window  time.Duration
}

func (p occPolicy) text() string {
	if p.overlap == OverlapAllow && p.window <= 0 {
		return ""
	}
	o, w := "0", ""
	if p.overlap == OverlapSkip {
		o = "1"
	}
	if p.window > 0 {
		ms := p.window / time.Millisecond // rounded up, without overflow
		if p.window%time.Millisecond != 0 {
			ms++
		}
		w = strconv.FormatInt(int64(ms), 10)
	}
	return o + "," + w
}

// parseOccPolicy reads a stored policy; what it cannot read is no policy.
func parseOccPolicy(s string) occPolicy {
	o, w, ok := strings.Cut(s, ",")
	if !ok {
		return occPolicy{}
	}
	var p occPolicy
	if o == "1" {
		p.overlap = OverlapSkip
	}
	if ms, err := strconv.ParseInt(w, 10, 64); err == nil && ms > 0 {
		p.window = time.Duration(ms) * time.Millisecond
	}
	return p
}
