package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// cmdLimits lists a queue's rate limits (redisq Queue.SetRateLimit) and
// their use, or one key's.
func cmdLimits(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	defer q.Close()
	var all []redisq.LimitState
	if len(e.args) == 2 {
		st, err := q.RateLimitState(e.ctx, e.args[1])
		if err != nil {
			return err
		}
		if st.Limit.N == 0 {
			return notFound("limit key %s of queue %s has no rate limit: its items are not limited", quote(e.args[1]), quote(e.args[0]))
		}
		all = []redisq.LimitState{st}
	} else if all, err = q.RateLimits(e.ctx); err != nil {
		return err
	}
	if len(all) == 0 {
		e.printf("queue %s has no rate limit\n", quote(e.args[0]))
		return nil
	}
	now, err := e.c.Time(e.ctx).Result()
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Key < all[j].Key })
	w := table(e.stdout)
	fmt.Fprintln(w, "KEY\tLIMIT\tUSED\tROOM\tWAITING\tLAST SLOT")
	for _, s := range all {
		room, last := "now", "-"
		if s.Room.After(now) {
			room = rel(s.Room, now)
		}
		if !s.LastSlot.IsZero() {
			last = rel(s.LastSlot, now)
		}
		fmt.Fprintf(w, "%s\t%v\t%d/%d\t%s\t%d\t%s\n", quote(s.Key), s.Limit, s.Used, s.Limit.N, room, s.Waiting, last)
	}
	return w.Flush()
}

// cmdRateLimit sets or removes one key's rate limit.
func cmdRateLimit(e *env) error {
	l, err := parseRate(e.args[2])
	if err != nil {
		return err
	}
	q, err := e.queue()
	if err != nil {
		return err
	}
	defer q.Close()
	if err := q.SetRateLimit(e.ctx, e.args[1], l); err != nil {
		return err
	}
	if l.N == 0 {
		e.printf("limit key %s of queue %s: no rate limit; its waiting items are due now\n", quote(e.args[1]), quote(e.args[0]))
		return nil
	}
	e.printf("limit key %s of queue %s: rate limit %v (claims, by the Redis clock); items waiting under the old limit wait again only if they must\n", quote(e.args[1]), quote(e.args[0]), l)
	return nil
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
