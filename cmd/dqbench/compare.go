package main

import (
	"fmt"
	"io"
	"strconv"
)

// writeVersus prints redisq against asynq, metric by metric, from one run of
// -impl redis,asynq, with the targets of the comparison (ratios, since both
// ran on the same machine and server minutes apart).
func writeVersus(w io.Writer, o *options, rs []Result) {
	by := map[string]*Result{}
	for i := range rs {
		by[rs[i].Name] = &rs[i]
	}
	rq, aq := by["redis"], by["asynq"]
	if by["asynq/backlog"] == nil && aq == nil && by["asynq/idle"] == nil {
		return
	}
	if by["redis/backlog"] == nil && rq == nil && by["redis/idle"] == nil {
		return
	}
	t := table{md: o.md, head: []string{"redisq vs asynq", "redisq", "asynq", "ratio", "target", "met"}}
	// row adds a metric; lower says whether less is better (the target is
	// then ratio <= goal, else ratio >= goal); goal 0: no target.
	row := func(name string, r, a float64, format func(float64) string, lower bool, goal float64) {
		if r <= 0 && a <= 0 {
			return
		}
		ratio, target, met := "-", "", ""
		if a > 0 {
			ratio = strconv.FormatFloat(r/a, 'f', 2, 64) + "x"
		}
		if goal > 0 && a > 0 {
			ok := r/a >= goal
			target = ">= " + strconv.FormatFloat(goal, 'f', 1, 64) + "x"
			if lower {
				ok = r/a <= goal
				target = "<= " + strconv.FormatFloat(goal, 'f', 1, 64) + "x"
			}
			met = "no"
			if ok {
				met = "yes"
			}
		}
		t.add([]string{name, format(r), format(a), ratio, target, met})
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
	ns := func(f float64) string { return dur(int64(f)) }
	perSec := func(f float64) string { return rate(f) + "/s" }
	if rq != nil && aq != nil {
		row("commands per item (steady)", rq.ServerCmdsPerItem, aq.ServerCmdsPerItem, num, true, 0.7)
		row("server CPU per item (steady)", rq.ServerCPUPerItemNs, aq.ServerCPUPerItemNs, ns, true, 0.8)
	}
	rb, ab, rbb := by["redis/backlog"], by["asynq/backlog"], by["redis/backlog-batch"]
	if rb != nil && ab != nil {
		row(fmt.Sprintf("enqueue, %d producers", o.backlogProducers()), rb.OfferRate, ab.OfferRate, perSec, false, 1.2)
		if rbb != nil {
			row(fmt.Sprintf("EnqueueMany(%d) vs asynq single", o.redisBatch), rbb.OfferRate, ab.OfferRate, perSec, false, 5)
		}
		row(fmt.Sprintf("Take+Ack, %d consumers", o.consumers), rb.DeliverRate, ab.DeliverRate, perSec, false, 1.5)
		if rba := by["redis/backlog-acktake"]; rba != nil {
			row(fmt.Sprintf("AckTake, %d consumers", o.consumers), rba.DeliverRate, ab.DeliverRate, perSec, false, 1.5)
		}
		if rbb != nil {
			row(fmt.Sprintf("TakeBatch(%d)+AckMany", o.redisBatch), rbb.DeliverRate, ab.DeliverRate, perSec, false, 0)
		}
		row("commands per item (backlog)", rb.ServerCmdsPerItem, ab.ServerCmdsPerItem, num, true, 0)
		if rbb != nil {
			row("commands per item (backlog, batches)", rbb.ServerCmdsPerItem, ab.ServerCmdsPerItem, num, true, 0)
		}
	}
	if ri, ai := by["redis/idle"], by["asynq/idle"]; ri != nil && ai != nil {
		row("idle: server commands per 10 s", ri.IdleCmdsPer10s, ai.IdleCmdsPer10s, num, true, 0)
	}
	t.write(w)
	if rq != nil && aq != nil && rq.Lateness != nil && aq.Lateness != nil {
		fmt.Fprintf(w, "lateness (steady): redisq p50 %s, p99 %s, max %s, %d early; asynq p50 %s, p99 %s, max %s, %d early (target for redisq: p99 <= 5ms, 0 early: %s)\n",
			dur(rq.Lateness.P50), dur(rq.Lateness.P99), dur(rq.Lateness.Max), rq.Early,
			dur(aq.Lateness.P50), dur(aq.Lateness.P99), dur(aq.Lateness.Max), aq.Early,
			yesNo(rq.Lateness.P99 <= int64(5e6) && rq.Early == 0))
	}
	fmt.Fprintln(w)
}

func yesNo(b bool) string {
	if b {
		return "met"
	}
	return "NOT met"
}
