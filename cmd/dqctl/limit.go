package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// cmdLimits lists a queue's own rate limit (redisq
// Queue.SetQueueRateLimit), its keys' rate limits (Queue.SetRateLimit)
// and concurrency limits (Queue.SetConcurrencyLimit) and their use, or
// one key's.
func cmdLimits(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	defer q.Close()
	var whole redisq.LimitState // the queue's own
	var all []redisq.LimitState
	var conc []redisq.ConcurrencyState
	if len(e.args) == 2 {
		st, err := q.RateLimitState(e.ctx, e.args[1])
		if err != nil {
			return err
		}
		cs, err := q.ConcurrencyLimitState(e.ctx, e.args[1])
		if err != nil {
			return err
		}
		if st.Limit.N == 0 && cs.Limit == 0 {
			return notFound("limit key %s of queue %s has no rate or concurrency limit: its items are not limited", quote(e.args[1]), quote(e.args[0]))
		}
		if st.Limit.N > 0 {
			all = []redisq.LimitState{st}
		}
		if cs.Limit > 0 {
			conc = []redisq.ConcurrencyState{cs}
		}
	} else {
		if whole, err = q.QueueRateLimit(e.ctx); err != nil {
			return err
		}
		if all, err = q.RateLimits(e.ctx); err != nil {
			return err
		}
		if conc, err = q.ConcurrencyLimits(e.ctx); err != nil {
			return err
		}
	}
	if whole.Limit.N == 0 && len(all) == 0 && len(conc) == 0 {
		e.printf("queue %s has no rate or concurrency limit\n", quote(e.args[0]))
		return nil
	}
	now, err := e.c.Time(e.ctx).Result()
	if err != nil {
		return err
	}
	w := table(e.stdout)
	// room is when the next claim may be made under s: "now", or how soon.
	room := func(s redisq.LimitState) string {
		if s.Room.After(now) {
			return rel(s.Room, now)
		}
		return "now"
	}
	if whole.Limit.N > 0 {
		fmt.Fprintln(w, "QUEUE RATE LIMIT\tUSED\tROOM")
		fmt.Fprintf(w, "%v\t%d/%d\t%s\n", whole.Limit, whole.Used, whole.Limit.N, room(whole))
	}
	if len(all) > 0 {
		if whole.Limit.N > 0 {
			fmt.Fprintln(w)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Key < all[j].Key })
		fmt.Fprintln(w, "KEY\tLIMIT\tUSED\tROOM\tWAITING\tLAST SLOT")
		for _, s := range all {
			last := "-"
			if !s.LastSlot.IsZero() {
				last = rel(s.LastSlot, now)
			}
			fmt.Fprintf(w, "%s\t%v\t%d/%d\t%s\t%d\t%s\n", quote(s.Key), s.Limit, s.Used, s.Limit.N, room(s), s.Waiting, last)
		}
	}
	if len(conc) > 0 {
		if whole.Limit.N > 0 || len(all) > 0 {
			fmt.Fprintln(w)
		}
		sort.Slice(conc, func(i, j int) bool { return conc[i].Key < conc[j].Key })
		fmt.Fprintln(w, "KEY\tCONCURRENCY\tTAKEN\tGIVEN\tWAITING")
		for _, s := range conc {
			limit, taken := strconv.Itoa(s.Limit), fmt.Sprintf("%d/%d", s.Leased+s.Granted, s.Limit)
			if s.Removing {
				limit, taken = "being removed (concurrency-limit KEY none ends it)", "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\n", quote(s.Key), limit, taken, s.Granted, s.Waiting)
		}
	}
	return w.Flush()
}

// cmdConcurrencyLimit sets or removes one key's concurrency limit.
func cmdConcurrencyLimit(e *env) error {
	k := 0
	if e.args[2] != "none" {
		n, err := strconv.Atoi(e.args[2])
		if err != nil || n < 1 || n > redisq.MaxConcurrency {
			return usageErr("bad concurrency %s: want K, 1 to %d, or none", quote(e.args[2]), redisq.MaxConcurrency)
		}
		k = n
	}
	q, err := e.queue()
	if err != nil {
		return err
	}
	defer q.Close()
	if err := q.SetConcurrencyLimit(e.ctx, e.args[1], k); err != nil {
		return err
	}
	if k == 0 {
		e.printf("limit key %s of queue %s: no concurrency limit; its waiting items are due now\n", quote(e.args[1]), quote(e.args[0]))
		return nil
	}
	e.printf("limit key %s of queue %s: at most %d leased at once; waiting items go as places free\n", quote(e.args[1]), quote(e.args[0]), k)
	return nil
}

// cmdRateLimit sets or removes one key's rate limit.
func cmdRateLimit(e *env) error {
	l, err := setRate(e, e.args[2], func(q *redisq.Queue, l redisq.RateLimit) error { return q.SetRateLimit(e.ctx, e.args[1], l) })
	if err != nil {
		return err
	}
	if l.N == 0 {
		e.printf("limit key %s of queue %s: no rate limit; its waiting items are due now\n", quote(e.args[1]), quote(e.args[0]))
		return nil
	}
	e.printf("limit key %s of queue %s: rate limit %v (claims, by the Redis clock); items waiting under the old limit wait again only if they must\n", quote(e.args[1]), quote(e.args[0]), l)
	return nil
}

// cmdQueueRateLimit sets or removes the rate limit of the whole queue.
func cmdQueueRateLimit(e *env) error {
	l, err := setRate(e, e.args[1], func(q *redisq.Queue, l redisq.RateLimit) error { return q.SetQueueRateLimit(e.ctx, l) })
	if err != nil {
		return err
	}
	if l.N == 0 {
		e.printf("queue %s: no rate limit of its own; its due items are claimed as fast as consumers take them, within their keys' limits\n", quote(e.args[0]))
		return nil
	}
	e.printf("queue %s: rate limit %v of the whole queue (claims of its items whatever their keys, by the Redis clock); while the window is full nothing is claimed and the due items wait in order\n",
		quote(e.args[0]), l)
	return nil
}

// setRate parses the rate arg (as parseRate), opens the queue and sets
// the rate with set.
func setRate(e *env, arg string, set func(*redisq.Queue, redisq.RateLimit) error) (redisq.RateLimit, error) {
	l, err := parseRate(arg)
	if err != nil {
		return l, err
	}
	q, err := e.queue()
	if err != nil {
		return l, err
	}
	defer q.Close()
	return l, set(q, l)
}

// parseRate reads "N/PER" ("100/1m") or "none".
func parseRate(s string) (redisq.RateLimit, error) {
	if s == "none" {
		return redisq.RateLimit{}, nil
	}
	ns, ps, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(ns)
	per, perr := time.ParseDuration(ps)
	if !ok || err != nil || perr != nil || n < 1 || per <= 0 {
		return redisq.RateLimit{}, usageErr("bad rate %s: want N/PER, as 100/1m or 5/1s, or none", quote(s))
	}
	return redisq.RateLimit{N: n, Per: per}, nil
}
