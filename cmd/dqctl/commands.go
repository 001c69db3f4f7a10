package main

import (
	"errors"
	"flag"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

func commands() []command {
	return []command{
		{name: "queues", help: "list the queues on the server with their sizes",
			max: 0, flags: withJSON, run: cmdQueues},
		{name: "stats", args: "QUEUE", help: "show a queue's sizes, counters and delivery lateness",
			min: 1, max: 1, flags: withJSON, run: cmdStats},
		{name: "list", args: "QUEUE STATE", help: "list the items in STATE (scheduled, inflight, dead), a page at a time",
			min: 2, max: 2, flags: listFlags, run: cmdList},
		{name: "show", args: "QUEUE ID", help: "show one item, its payload pretty-printed if it is JSON",
			min: 2, max: 2, flags: withJSON, run: cmdShow},
		{name: "requeue", args: "QUEUE (ID... | -all)", help: "requeue dead items: due now, attempts reset",
			min: 1, max: -1, flags: withAll, run: func(e *env) error { return cmdDead(e, true) }},
		{name: "delete-dead", args: "QUEUE (ID... | -all)", help: "delete dead items",
			min: 1, max: -1, flags: withAll, run: func(e *env) error { return cmdDead(e, false) }},
		{name: "delete", args: "QUEUE ID...", help: "delete items in any state (an in-flight one is marked: deleted when settled, never retried)",
			min: 2, max: -1, run: cmdDelete},
		{name: "purge", args: "QUEUE STATE", help: "delete every item in STATE (inflight: mark them all)",
			min: 2, max: 2, flags: withYes, run: cmdPurge},
		{name: "destroy", args: "QUEUE", help: "delete every key of a queue: items, counters, everything",
			min: 1, max: 1, flags: withYes, run: cmdDestroy},
		{name: "watch", args: "QUEUE", help: "stats refreshed every second, with a chart of items coming due",
			min: 1, max: 1, flags: watchFlags, run: cmdWatch},
		{name: "serve-metrics", args: "[QUEUE...]", help: "serve Prometheus metrics for the queues (default: every queue on the server)",
			max: -1, flags: metricsFlags, run: cmdServeMetrics},
		{name: "serve", help: "serve the web dashboard (dqweb) for the queues on the server",
			max: 0, flags: serveFlags, run: cmdServe},
	}
}

func withJSON(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.json, "json", false, "print JSON (for scripts)")
}

func withYes(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.yes, "yes", false, "do not ask for confirmation")
}

func withAll(fs *flag.FlagSet, e *env) {
	withYes(fs, e)
	fs.BoolVar(&e.all, "all", false, "every dead item (asks for confirmation unless -yes)")
}

func listFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	fs.Int64Var(&e.page.Offset, "offset", 0, "skip this many items")
	fs.IntVar(&e.page.Limit, "limit", 50, fmt.Sprintf("items per page (1..%d)", redisq.MaxPage))
	fs.BoolVar(&e.page.Reverse, "reverse", false, "latest first")
	fs.BoolVar(&e.page.Payloads, "payloads", false, "include payloads (in -json output)")
}

// queueInfo is one line of "queues".
type queueInfo struct {
	Name      string `json:"name"`
	Scheduled int64  `json:"scheduled"`
	Due       int64  `json:"due"`
	InFlight  int64  `json:"inflight"`
	Dead      int64  `json:"dead"`
}

func cmdQueues(e *env) error {
	names, err := redisq.ListQueues(e.ctx, e.c)
	if err != nil {
		return err
	}
	infos := make([]queueInfo, 0, len(names))
	for _, n := range names {
		q, err := redisq.New(e.ctx, e.c, n, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
		if err != nil {
			continue
		}
		st, err := q.Stats(e.ctx)
		if err != nil {
			return err
		}
		infos = append(infos, queueInfo{n, st.Scheduled, st.DueBacklog, st.InFlight, st.Dead})
	}
	if e.json {
		return writeJSON(e.stdout, infos)
	}
	if len(infos) == 0 {
		e.printf("no queues on %s\n", e.conn.where())
		return nil
	}
	tw := table(e.stdout)
	fmt.Fprintln(tw, "QUEUE\tSCHEDULED\tDUE\tINFLIGHT\tDEAD")
	for _, i := range infos {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", cell(i.Name), i.Scheduled, i.Due, i.InFlight, i.Dead)
	}
	return tw.Flush()
}

func parseState(s string) (redisq.State, error) {
	st, err := redisq.ParseState(s)
	if err != nil {
		return 0, usageErr("unknown state %s: want scheduled, inflight or dead", quote(s))
	}
	return st, nil
}

// itemJSON is an item in -json output: the library's Item, with the
// payload as text when it is UTF-8.
type itemJSON struct {
	redisq.Item
	Payload       []byte `json:"payload_base64,omitempty"`
	PayloadString string `json:"payload,omitempty"`
}

func jsonItem(it redisq.Item) itemJSON {
	j := itemJSON{Item: it}
	if utf8.Valid(it.Payload) {
		j.PayloadString = string(it.Payload)
	} else {
		j.Payload = it.Payload
	}
	return j
}

func cmdList(e *env) error {
	state, err := parseState(e.args[1])
	if err != nil {
		return err
	}
	if e.page.Limit < 1 || e.page.Limit > redisq.MaxPage || e.page.Offset < 0 {
		return usageErr("-limit must be in 1..%d and -offset >= 0", redisq.MaxPage)
	}
	q, err := e.queue()
	if err != nil {
		return err
	}
	p, err := q.List(e.ctx, state, e.page)
	if err != nil {
		return err
	}
	if e.json {
		out := struct {
			Now   time.Time  `json:"now"`
			Total int64      `json:"total"`
			Next  int64      `json:"next"`
			Items []itemJSON `json:"items"`
		}{p.Now, p.Total, p.Next, []itemJSON{}}
		for _, it := range p.Items {
			out.Items = append(out.Items, jsonItem(it))
		}
		return writeJSON(e.stdout, out)
	}
	tw := table(e.stdout)
	switch state {
	case redisq.StateScheduled:
		fmt.Fprintln(tw, "ID\tDUE\tATTEMPTS\tENQUEUED\tSIZE")
	case redisq.StateInFlight:
		fmt.Fprintln(tw, "ID\tLEASE ENDS\tATTEMPTS\tDUE\tCANCELLED\tSIZE")
	default:
		fmt.Fprintln(tw, "ID\tDIED\tATTEMPTS\tREASON\tSIZE")
	}
	for _, it := range p.Items {
		switch state {
		case redisq.StateScheduled:
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", cell(it.ID), rel(it.Due, p.Now), it.Attempts, rel(it.Enqueued, p.Now), it.PayloadSize)
		case redisq.StateInFlight:
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%d\n", cell(it.ID), rel(it.LeaseDeadline, p.Now), it.Attempts, rel(it.Due, p.Now), it.Cancelled, it.PayloadSize)
		default:
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", cell(it.ID), rel(it.DiedAt, p.Now), it.Attempts, cell(it.DeadReason), it.PayloadSize)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Items) == 0 {
		e.printf("(no %s items at offset %d; %d in all)\n", state, e.page.Offset, p.Total)
		return nil
	}
	e.printf("%d-%d of %d %s", e.page.Offset+1, e.page.Offset+int64(len(p.Items)), p.Total, state)
	if p.Next >= 0 {
		e.printf("; next page: -offset %d", p.Next)
	}
	e.printf("\n")
	return nil
}

func cmdShow(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	id := e.args[1]
	it, err := q.Get(e.ctx, id)
	if errors.Is(err, redisq.ErrNotFound) {
		return notFound("no item %s in queue %s", quote(id), quote(q.Name()))
	}
	if err != nil {
		return err
	}
	if e.json {
		return writeJSON(e.stdout, jsonItem(it))
	}
	tw := table(e.stdout)
	fmt.Fprintf(tw, "id\t%s\n", quote(it.ID))
	fmt.Fprintf(tw, "state\t%s\n", it.State)
	fmt.Fprintf(tw, "due\t%s\n", stamp(it.Due))
	fmt.Fprintf(tw, "attempts\t%d\n", it.Attempts)
	fmt.Fprintf(tw, "enqueued\t%s\n", stamp(it.Enqueued))
	if it.State == redisq.StateInFlight {
		fmt.Fprintf(tw, "lease ends\t%s\n", stamp(it.LeaseDeadline))
		fmt.Fprintf(tw, "cancelled\t%v\n", it.Cancelled)
	}
	if it.State == redisq.StateDead {
		fmt.Fprintf(tw, "died\t%s\n", stamp(it.DiedAt))
		fmt.Fprintf(tw, "reason\t%s\n", clean(it.DeadReason))
	}
	fmt.Fprintf(tw, "payload\t%d bytes\n", it.PayloadSize)
	if err := tw.Flush(); err != nil {
		return err
	}
	showPayload(e.stdout, it.Payload)
	return nil
}

// stamp is a Redis-clock time for show: UTC, to the millisecond.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }
