package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/dq-go/delayqueue/bench/internal/report"
)

// writeRedisSections prints what follows the idle table (report.Sections'
// Tail): each -impl redis idle phase, the server's commands over the other
// idle phases and the comparison with asynq.
func writeRedisSections(w io.Writer, o *options, rs []report.Result) {
	for _, r := range rs {
		if r.RedisIdle != nil {
			writeRedisIdle(w, o, r)
		}
	}
	for _, r := range rs {
		if r.Kind == "idle" && r.RedisIdle == nil && r.IdleCmdsPer10s > 0 {
			fmt.Fprintf(w, "%s: redis-server commands per 10 s idle: %.1f\n", r.Name, r.IdleCmdsPer10s)
		}
	}
	writeJobs(w, o, rs)
	writeVersus(w, o, rs)
	writeLimits(w, o, rs)
}

// writeJobs prints -impl worker-mux and worker-retain against -impl
// worker, metric by metric, from one run's steady phases: the cost of
// kinds (target: within 5% of the plain Worker in server commands and CPU
// per item) and, retain - mux, that of a kept item.
func writeJobs(w io.Writer, o *options, rs []report.Result) {
	by := map[string]*report.Result{}
	for i := range rs {
		by[rs[i].Name] = &rs[i]
	}
	wq, mq, kq := by["worker"], by["worker-mux"], by["worker-retain"]
	if wq == nil || (mq == nil && kq == nil) {
		return
	}
	head := []string{"kinds vs plain Worker (steady)", "worker"}
	if mq != nil {
		head = append(head, "worker-mux", "mux/worker", "target", "met")
	}
	if kq != nil {
		head = append(head, "worker-retain")
		if mq != nil {
			head = append(head, "retain - mux")
		}
	}
	t := report.Table{MD: o.MD, Head: head}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
	ns := func(f float64) string { return report.Dur(int64(f)) }
	bytes := func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + " B" }
	// row adds a metric; goal > 0 is the target mux/worker <= goal.
	row := func(name string, get func(*report.Result) float64, format func(float64) string, goal float64) {
		cells := []string{name, format(get(wq))}
		if mq != nil {
			ratio, target, met := "-", "", ""
			if g := get(wq); g > 0 {
				ratio = strconv.FormatFloat(get(mq)/g, 'f', 3, 64) + "x"
				if goal > 0 {
					target = "<= " + strconv.FormatFloat(goal, 'f', 2, 64) + "x"
					met = yesNoMet(get(mq)/g <= goal)
				}
			}
			cells = append(cells, format(get(mq)), ratio, target, met)
		}
		if kq != nil {
			cells = append(cells, format(get(kq)))
			if mq != nil {
				cells = append(cells, format(get(kq)-get(mq)))
			}
		}
		t.Add(cells)
	}
	row("server commands per item", func(r *report.Result) float64 { return r.ServerCmdsPerItem }, num, 1.05)
	row("server CPU per item", func(r *report.Result) float64 { return r.ServerCPUPerItemNs }, ns, 1.05)
	row("process CPU per item (producer + Worker)", func(r *report.Result) float64 { return r.CPUPerItemNs }, ns, 0)
	row("server used_memory growth per item", func(r *report.Result) float64 { return r.ServerMemPerItem }, bytes, 0)
	if kq != nil && kq.KeptBytesPerItem > 0 {
		row("used_memory freed by purging, per kept item", func(r *report.Result) float64 { return r.KeptBytesPerItem }, func(f float64) string {
			if f == 0 {
				return "-"
			}
			return bytes(f)
		}, 0)
	}
	row("lateness p99", func(r *report.Result) float64 {
		if r.Lateness == nil {
			return 0
		}
		return float64(r.Lateness.P99)
	}, ns, 0)
	t.Write(w)
	fmt.Fprintln(w)
	if kq != nil {
		fmt.Fprintf(w, "worker-retain: %s items kept completed (Retention %v, a %d-byte result each)\n", report.Group(int64(kq.Kept)), retainFor, len(retainResult))
		fmt.Fprintln(w)
	}
}

// writeVersus prints redisq against asynq, metric by metric, from one run of
// -impl redis,worker,asynq (or any two of them), with the targets of the
// comparison (ratios, since all ran on the same machine and server minutes
// apart). The Worker's rows come first: it is what a program runs, as
// asynq.Server is; the Take/AckTake/TakeBatch loops ("redis") are the
// lower level.
func writeVersus(w io.Writer, o *options, rs []report.Result) {
	by := map[string]*report.Result{}
	for i := range rs {
		by[rs[i].Name] = &rs[i]
	}
	aq, ab, ai := by["asynq"], by["asynq/backlog"], by["asynq/idle"]
	if aq == nil && ab == nil && ai == nil {
		return
	}
	rq, rb, rbb, ri := by["redis"], by["redis/backlog"], by["redis/backlog-batch"], by["redis/idle"]
	wq, wb, wi := by["worker"], by["worker/backlog"], by["worker/idle"]
	if rq == nil && rb == nil && ri == nil && wq == nil && wb == nil && wi == nil {
		return
	}
	t := report.Table{MD: o.MD, Head: []string{"redisq vs asynq", "redisq", "asynq", "ratio", "target", "met"}}
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
		t.Add([]string{name, format(r), format(a), ratio, target, met})
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
	ns := func(f float64) string { return report.Dur(int64(f)) }
	perSec := func(f float64) string { return report.Rate(f) + "/s" }
	lateness := func(name string, r, a *report.Result) {
		if r == nil || a == nil || r.Lateness == nil || a.Lateness == nil {
			return
		}
		t.Add([]string{name + " lateness p50 / p99 / max",
			report.Dur(r.Lateness.P50) + " / " + report.Dur(r.Lateness.P99) + " / " + report.Dur(r.Lateness.Max),
			report.Dur(a.Lateness.P50) + " / " + report.Dur(a.Lateness.P99) + " / " + report.Dur(a.Lateness.Max),
			"-", "p99 <= 5ms", yesNoMet(r.Lateness.P99 <= int64(5e6))})
		t.Add([]string{name + " delivered early", strconv.Itoa(r.Early), strconv.Itoa(a.Early), "-", "0", yesNoMet(r.Early == 0)})
	}
	if wq != nil && aq != nil {
		row("Worker: commands per item (steady)", wq.ServerCmdsPerItem, aq.ServerCmdsPerItem, num, true, 1.0)
		row("Worker: server CPU per item (steady)", wq.ServerCPUPerItemNs, aq.ServerCPUPerItemNs, ns, true, 1.0)
		lateness("Worker:", wq, aq)
	}
	if ab != nil {
		prod := wb
		if prod == nil {
			prod = rb
		}
		if prod != nil {
			row(fmt.Sprintf("enqueue, %d producers (Enqueue; asynq Client.Enqueue)", o.backlogProducers()), prod.OfferRate, ab.OfferRate, perSec, false, 1.2)
		}
		if wb != nil {
			row(fmt.Sprintf("Worker, %d handlers: backlog handled/s", o.consumers), wb.DeliverRate, ab.DeliverRate, perSec, false, 1.5)
			row("Worker: commands per item (backlog)", wb.ServerCmdsPerItem, ab.ServerCmdsPerItem, num, true, 0)
			row("Worker: server CPU per item (backlog)", wb.ServerCPUPerItemNs, ab.ServerCPUPerItemNs, ns, true, 0)
		}
	}
	if wi != nil && ai != nil {
		row("Worker idle: server commands per 10 s", wi.IdleCmdsPer10s, ai.IdleCmdsPer10s, num, true, 0)
	}
	if rq != nil && aq != nil {
		row("Take+Ack: commands per item (steady)", rq.ServerCmdsPerItem, aq.ServerCmdsPerItem, num, true, 0.7)
		row("Take+Ack: server CPU per item (steady)", rq.ServerCPUPerItemNs, aq.ServerCPUPerItemNs, ns, true, 0.8)
		lateness("Take+Ack:", rq, aq)
	}
	if rb != nil && ab != nil {
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
		row("commands per item (backlog, Take+Ack)", rb.ServerCmdsPerItem, ab.ServerCmdsPerItem, num, true, 0)
		if rbb != nil {
			row("commands per item (backlog, batches)", rbb.ServerCmdsPerItem, ab.ServerCmdsPerItem, num, true, 0)
		}
	}
	if ri != nil && ai != nil {
		row("idle: server commands per 10 s", ri.IdleCmdsPer10s, ai.IdleCmdsPer10s, num, true, 0)
	}
	t.Write(w)
	fmt.Fprintln(w)
}

func yesNoMet(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// writeRedisIdle prints the -impl redis idle phase: what each blocked
// consumer sent per wait.
func writeRedisIdle(w io.Writer, o *options, r report.Result) {
	ri := r.RedisIdle
	t := report.Table{MD: o.MD, Head: []string{"redis idle", "consumer", "real time", "wake cap", "BZPOPMIN", "claims", "other", "cmds/wait", "mean wait"}}
	var bz, cl, ot int64
	for i := range ri.BZPopMin {
		bz += ri.BZPopMin[i]
		cl += ri.Claims[i]
		ot += ri.Other[i]
		t.Add([]string{r.Name, strconv.Itoa(i + 1), report.Dur(int64(r.IdleSeconds * 1e9)), report.Dur(ri.WakeCapNs),
			strconv.FormatInt(ri.BZPopMin[i], 10), strconv.FormatInt(ri.Claims[i], 10), strconv.FormatInt(ri.Other[i], 10),
			perWait(ri.BZPopMin[i]+ri.Claims[i]+ri.Other[i], ri.BZPopMin[i]), "-"})
	}
	t.Add([]string{r.Name, "all", report.Dur(int64(r.IdleSeconds * 1e9)), report.Dur(ri.WakeCapNs),
		strconv.FormatInt(bz, 10), strconv.FormatInt(cl, 10), strconv.FormatInt(ot, 10), perWait(bz+cl+ot, bz), report.Dur(ri.MeanWaitNs)})
	t.Write(w)
	fmt.Fprintln(w)
	verdict := "PASS"
	if !ri.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "redis idle: %d consumers blocked in Take for %s (head 1h away, wake cap %s), process CPU %s:\n",
		len(ri.BZPopMin), report.Dur(int64(r.IdleSeconds*1e9)), report.Dur(ri.WakeCapNs), report.Dur(int64(r.CPUSeconds*1e9)))
	fmt.Fprintf(w, "  each blocked wait is one BZPOPMIN (mean %s blocked); the claim script that follows it is the only other command.\n", report.Dur(ri.MeanWaitNs))
	fmt.Fprintf(w, "  target: one blocking command per wait, one wait per wake cap (<= %d per consumer), no polling: %s\n",
		int64(r.IdleSeconds*1e9)/ri.WakeCapNs+1, verdict)
	if ri.ServerBZPopMin >= 0 {
		fmt.Fprintf(w, "  server-wide INFO commandstats over the same time: %d BZPOPMIN, %d EVALSHA/EVAL (hook: %d, %d)\n",
			ri.ServerBZPopMin, ri.ServerEval, bz, cl)
	}
	fmt.Fprintln(w)
	report.Notes(w, []report.Result{r})
}

func perWait(cmds, waits int64) string {
	if waits == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(cmds)/float64(waits), 'f', 2, 64)
}
