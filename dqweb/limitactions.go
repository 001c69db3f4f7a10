package dqweb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// The limit actions set, change or remove one key's limit: op rate-limit
// with the field rate ("N/PER", as 100/1m, or none) and op
// concurrency-limit with the field concurrency (K, or 0 or none), the key
// in the field key (typed) or keyx (hex-encoded, which wins; either may
// be empty: the items without a limit key); or the rate limit of the
// whole queue (redisq Queue.SetQueueRateLimit): op queue-rate-limit with
// the field rate and no key. They go through the same
// checks, confirmation and result page as every action; the forms where
// the limit is typed have no confirmed field, so the confirmation page
// asks with the limit as parsed and the key's limit now (one round trip,
// as the result's report).

// The form fields of the limits.
const (
	rateField = "rate"
	concField = "concurrency"
)

// The op that sets the queue's own rate limit, which has no limit key.
const queueRateOp = "queue-rate-limit"

// IsLimit reports whether a sets a limit (for the confirmation page).
func (a action) IsLimit() bool { return ops[a.Op].limit }

// HasKey reports whether a sets a limit key's limit, not the queue's own
// (for the confirmation page: only a key's has the field keyx).
func (a action) HasKey() bool { return ops[a.Op].limit && a.Op != queueRateOp }

// limitField is the form field that carries the limit a sets.
func (a action) limitField() hidden {
	if a.Op == "concurrency-limit" {
		return hidden{concField, strconv.Itoa(a.K)}
	}
	return hidden{rateField, rateValue(a.Rate)}
}

// LimitField is limitField, for the confirmation page.
func (a action) LimitField() hidden { return a.limitField() }

// button is the label of a's button, and whether it is dangerous: removing
// a limit lets every waiting item go at once.
func (a action) button() (string, bool) {
	o := ops[a.Op]
	if o.limit && a.Remove {
		return "Remove", true
	}
	return o.label, o.danger
}

// parseLimitForm reads the key and the limit of a limit action into a,
// and refuses them on any other action (and a key on the queue's own).
func parseLimitForm(r *http.Request, a *action) error {
	_, hasKey := r.PostForm["key"]
	_, hasKeyX := r.PostForm["keyx"]
	_, hasRate := r.PostForm[rateField]
	_, hasConc := r.PostForm[concField]
	if !ops[a.Op].limit {
		if hasKey || hasKeyX || hasRate || hasConc {
			return fmt.Errorf("action %s takes no limit key or limit", a.Op)
		}
		return nil
	}
	switch {
	case a.Op == queueRateOp && (hasKey || hasKeyX):
		return errors.New("action queue-rate-limit limits the whole queue: it takes no limit key (rate-limit limits the items of one key)")
	case a.Op == queueRateOp:
	case !hasKey && !hasKeyX:
		return fmt.Errorf("action %s needs a limit key (field key; empty for the items without one)", a.Op)
	default:
		key, err := formValue(r, "key")
		if err != nil {
			return err
		}
		if len(key) > redisq.MaxLimitKeyLen {
			return fmt.Errorf("limit key %s is too long (%d bytes; at most %d)", quoted(key), len(key), redisq.MaxLimitKeyLen)
		}
		a.Key = key
	}
	var err error
	if a.Op != "concurrency-limit" {
		if hasConc {
			return fmt.Errorf("action %s takes a rate (field rate), not a concurrency", a.Op)
		}
		a.Rate, err = parseRate(r.PostFormValue(rateField))
		a.Remove = a.Rate.N == 0
		return err
	}
	if hasRate {
		return errors.New("action concurrency-limit takes a concurrency (field concurrency), not a rate")
	}
	a.K, err = parseConcurrency(r.PostFormValue(concField))
	a.Remove = a.K == 0
	return err
}

// parseRate reads "N/PER" (as dqctl rate-limit does: "100/1m") or "none".
func parseRate(s string) (redisq.RateLimit, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return redisq.RateLimit{}, nil
	}
	ns, ps, ok := strings.Cut(s, "/")
	if !ok {
		return redisq.RateLimit{}, fmt.Errorf("bad rate %s: want N/PER, as 100/1m (100 starts a minute) or 5/1s, or none to remove the limit", quoted(s))
	}
	n, err := strconv.Atoi(strings.TrimSpace(ns))
	if err != nil || n < 1 || n > redisq.MaxRateN {
		return redisq.RateLimit{}, fmt.Errorf("bad rate %s: N must be a whole number from 1 to %s", quoted(s), num(redisq.MaxRateN))
	}
	per, err := time.ParseDuration(strings.TrimSpace(ps))
	switch {
	case err != nil:
		return redisq.RateLimit{}, fmt.Errorf("bad rate %s: PER must be a duration, as 1s, 1m or 1h30m", quoted(s))
	case per <= 0 || per > redisq.MaxRatePer:
		return redisq.RateLimit{}, fmt.Errorf("bad rate %s: PER must be more than 0 and at most %s", quoted(s), short(redisq.MaxRatePer))
	case per%time.Microsecond != 0:
		return redisq.RateLimit{}, fmt.Errorf("bad rate %s: PER is counted in whole microseconds", quoted(s))
	}
	return redisq.RateLimit{N: n, Per: per}, nil
}

// parseConcurrency reads K, or 0 or none (no limit).
func parseConcurrency(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return 0, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 || k > redisq.MaxConcurrency {
		return 0, fmt.Errorf("bad concurrency %s: want K, a whole number from 1 to %s, or 0 (or none) to remove the limit", quoted(s), num(redisq.MaxConcurrency))
	}
	return k, nil
}

// readLimit reads the limit now (the key's, or the queue's own), for a's
// question.
func readLimit(ctx context.Context, q *redisq.Queue, a *action) (err error) {
	switch a.Op {
	case queueRateOp:
		a.WasRate, err = q.QueueRateLimit(ctx)
	case "rate-limit":
		a.WasRate, err = q.RateLimitState(ctx, a.Key)
	default:
		a.WasConc, err = q.ConcurrencyLimitState(ctx, a.Key)
	}
	return err
}

// waitingFor is "; its 3 items waiting for a slot go at once" (many
// says what they do; one, what one does), or "" when none waits.
func waitingFor(n int, what, one, many string) string {
	switch n {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; its item waiting for %s %s", what, one)
	}
	return fmt.Sprintf("; its %s waiting for %s %s", count(int64(n), "item"), what, many)
}

// What the items waiting under a limit do when it changes.
const (
	goOne, goMany         = "goes at once", "go at once"
	letGoOne, letGoMany   = "was let go", "were let go"
	waitOne, waitMany     = "is let go, and waits again only if it must", "are let go, and wait again only if they must"
	waitedOne, waitedMany = "was let go, and waits again only if it must", "were let go, and wait again only if they must"
)

// limitQuestion is what a limit action asks, given the limit now.
func (a action) limitQuestion() string {
	subj, q := limitSubject(a.Key), quoted(a.Queue)
	if a.Op == queueRateOp {
		return a.queueRateQuestion()
	}
	if a.Op == "rate-limit" {
		was, l := a.WasRate, a.Rate
		switch {
		case a.Remove && was.Limit.N == 0:
			return fmt.Sprintf("Remove the rate limit of %s of queue %s? It has none now: nothing would change.", subj, q)
		case a.Remove:
			return fmt.Sprintf("Remove the rate limit of %s of queue %s (%s)? Its items are claimed as soon as they are due, however many%s.",
				subj, q, rateText(was.Limit), waitingFor(was.Waiting, "a slot", goOne, goMany))
		case was.Limit.N == 0:
			return fmt.Sprintf("Limit %s of queue %s to %s? At most %s of its items are claimed in any %s, across every process; one due while the window is full waits in the queue for a slot.",
				subj, q, rateText(l), num(int64(l.N)), short(l.Per))
		}
		return fmt.Sprintf("Change the rate limit of %s of queue %s from %s to %s? At most %s of its items are claimed in any %s from now on%s.",
			subj, q, rateText(was.Limit), rateText(l), num(int64(l.N)), short(l.Per), waitingFor(was.Waiting, "a slot", waitOne, waitMany))
	}
	was, k := a.WasConc, a.K
	switch {
	case a.Remove && was.Limit == 0:
		return fmt.Sprintf("Remove the concurrency limit of %s of queue %s? It has none now: nothing would change.", subj, q)
	case a.Remove:
		return fmt.Sprintf("Remove the concurrency limit of %s of queue %s (%s at once, %s leased now)? Its items are leased as soon as they are due, however many run%s.",
			subj, q, num(int64(was.Limit)), num(int64(was.Leased)), waitingFor(was.Waiting, "a place", goOne, goMany))
	case was.Limit == 0:
		return fmt.Sprintf("Limit %s of queue %s to %s leased at once? Across every process, at most %s of its items are leased at once; one due while every place is taken waits in the queue until one frees (items leased now hold no place).",
			subj, q, num(int64(k)), num(int64(k)))
	}
	return fmt.Sprintf("Change the concurrency limit of %s of queue %s from %s to %s (%s leased now, %s waiting)? Raising it lets as many waiting items go as there are new places; lowering it leases none of its items until fewer than %s are leased.",
		subj, q, num(int64(was.Limit)), num(int64(k)), num(int64(was.Leased)), num(int64(was.Waiting)), num(int64(k)))
}

// doLimit sets the limit of a and reports it, with the limit it replaced
// (read first: one round trip more).
func (h *handler) doLimit(ctx context.Context, q *redisq.Queue, a action) (int, string) {
	subj, qn := limitSubject(a.Key), quoted(a.Queue)
	err := readLimit(ctx, q, &a)
	switch {
	case err != nil:
	case a.Op == queueRateOp:
		err = q.SetQueueRateLimit(ctx, a.Rate)
	case a.Op == "rate-limit":
		err = q.SetRateLimit(ctx, a.Key, a.Rate)
	default:
		err = q.SetConcurrencyLimit(ctx, a.Key, a.K)
	}
	if err != nil {
		status, msg := h.actionStatus(err)
		return status, "Failed: " + msg
	}
	if a.Op == queueRateOp {
		return http.StatusOK, a.queueRateDone()
	}
	if a.Op == "rate-limit" {
		was, l := a.WasRate.Limit, a.Rate
		switch {
		case a.Remove && was.N == 0:
			return http.StatusOK, fmt.Sprintf("No rate limit on %s of queue %s to remove; nothing changed.", subj, qn)
		case a.Remove:
			return http.StatusOK, fmt.Sprintf("Removed the rate limit of %s of queue %s (it was %s): its items are claimed as soon as they are due%s.",
				subj, qn, rateText(was), waitingFor(a.WasRate.Waiting, "a slot", letGoOne, letGoMany))
		case was == l:
			return http.StatusOK, fmt.Sprintf("The rate limit of %s of queue %s was %s already: set again%s.",
				subj, qn, rateText(l), waitingFor(a.WasRate.Waiting, "a slot", waitedOne, waitedMany))
		case was.N == 0:
			return http.StatusOK, fmt.Sprintf("Set the rate limit of %s of queue %s to %s: at most %s of its items are claimed in any %s.",
				subj, qn, rateText(l), num(int64(l.N)), short(l.Per))
		}
		return http.StatusOK, fmt.Sprintf("Changed the rate limit of %s of queue %s from %s to %s%s.",
			subj, qn, rateText(was), rateText(l), waitingFor(a.WasRate.Waiting, "a slot", waitedOne, waitedMany))
	}
	was, k := a.WasConc.Limit, a.K
	switch {
	case a.Remove && was == 0:
		return http.StatusOK, fmt.Sprintf("No concurrency limit on %s of queue %s to remove; nothing changed.", subj, qn)
	case a.Remove:
		return http.StatusOK, fmt.Sprintf("Removed the concurrency limit of %s of queue %s (it was %s at once): its items are leased as soon as they are due%s.",
			subj, qn, num(int64(was)), waitingFor(a.WasConc.Waiting, "a place", letGoOne, letGoMany))
	case was == k:
		return http.StatusOK, fmt.Sprintf("The concurrency limit of %s of queue %s was %s already; nothing changed.", subj, qn, num(int64(k)))
	case was == 0:
		return http.StatusOK, fmt.Sprintf("Set the concurrency limit of %s of queue %s to %s: at most %s of its items are leased at once.",
			subj, qn, num(int64(k)), num(int64(k)))
	}
	return http.StatusOK, fmt.Sprintf("Changed the concurrency limit of %s of queue %s from %s to %s leased at once.", subj, qn, num(int64(was)), num(int64(k)))
}

// queueRateQuestion is what queue-rate-limit asks, given the queue's own
// rate limit now.
func (a action) queueRateQuestion() string {
	q, was, l := quoted(a.Queue), a.WasRate, a.Rate
	switch {
	case a.Remove && was.Limit.N == 0:
		return fmt.Sprintf("Remove the rate limit of the whole queue %s? It has none now: nothing would change.", q)
	case a.Remove:
		return fmt.Sprintf("Remove the rate limit of the whole queue %s (%s, %s claimed in the window that ends now)? Its due items are claimed as fast as its consumers take them, within their keys' own limits.",
			q, rateText(was.Limit), num(int64(was.Used)))
	case was.Limit.N == 0:
		return fmt.Sprintf("Limit the whole queue %s to %s? At most %s of its items, whatever their limit keys, are claimed in any %s, across every process; while the window is full none is claimed, and the due items wait in their order.",
			q, rateText(l), num(int64(l.N)), short(l.Per))
	}
	return fmt.Sprintf("Change the rate limit of the whole queue %s from %s to %s (%s claimed in the window that ends now)? At most %s of its items are claimed in any %s from now on.",
		q, rateText(was.Limit), rateText(l), num(int64(was.Used)), num(int64(l.N)), short(l.Per))
}

// queueRateDone reports a queue-rate-limit done, given the limit it
// replaced.
func (a action) queueRateDone() string {
	q, was, l := quoted(a.Queue), a.WasRate.Limit, a.Rate
	switch {
	case a.Remove && was.N == 0:
		return fmt.Sprintf("No rate limit on the whole queue %s to remove; nothing changed.", q)
	case a.Remove:
		return fmt.Sprintf("Removed the rate limit of the whole queue %s (it was %s): its due items are claimed as fast as its consumers take them, within their keys' own limits.",
			q, rateText(was))
	case was == l:
		return fmt.Sprintf("The rate limit of the whole queue %s was %s already: set again.", q, rateText(l))
	case was.N == 0:
		return fmt.Sprintf("Set the rate limit of the whole queue %s to %s: at most %s of its items are claimed in any %s, whatever their limit keys.",
			q, rateText(l), num(int64(l.N)), short(l.Per))
	}
	return fmt.Sprintf("Changed the rate limit of the whole queue %s from %s to %s.", q, rateText(was), rateText(l))
}
