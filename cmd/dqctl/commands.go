package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

func commands() []command {
	return []command{
		{name: "queues", help: "list the queues on the server with their sizes (the registry " + redisq.RegistryKey + "; -scan: every queue)",
			max: 0, flags: queuesFlags, run: cmdQueues},
		{name: "stats", args: "QUEUE", help: "show a queue's sizes, counters and delivery lateness",
			min: 1, max: 1, flags: withJSON, run: cmdStats},
		{name: "list", args: "QUEUE STATE", help: "list the items in STATE (scheduled, inflight, dead), a page at a time",
			min: 2, max: 2, flags: listFlags, run: cmdList},
		{name: "show", args: "QUEUE ID", help: "show one item, its payload pretty-printed if it is JSON (what fits the terminal; -full: all)",
			min: 2, max: 2, flags: showFlags, run: cmdShow},
		{name: "requeue", args: "QUEUE (ID... | -all)", help: "requeue dead items: due now, attempts reset",
			min: 1, max: -1, flags: withAll, run: func(e *env) error { return cmdDead(e, true) }, write: true},
		{name: "delete-dead", args: "QUEUE (ID... | -all)", help: "delete dead items",
			min: 1, max: -1, flags: withAll, run: func(e *env) error { return cmdDead(e, false) }, write: true},
		{name: "delete", args: "QUEUE ID...", help: "delete items in any state (an in-flight one is marked: deleted when settled, never retried)",
			min: 2, max: -1, run: cmdDelete, write: true},
		{name: "purge", args: "QUEUE STATE", help: "delete every item in STATE (inflight: mark them all)",
			min: 2, max: 2, flags: withYes, run: cmdPurge, write: true},
		{name: "pause", args: "QUEUE", help: "pause deliveries: no consumer takes an item until resume (enqueues, acks and admin commands go on)",
			min: 1, max: 1, run: func(e *env) error { return cmdPause(e, true) }, write: true},
		{name: "resume", args: "QUEUE", help: "resume the deliveries of a paused queue",
			min: 1, max: 1, run: func(e *env) error { return cmdPause(e, false) }, write: true},
		{name: "destroy", args: "QUEUE", help: "delete every key of a queue: items, counters, everything",
			min: 1, max: 1, flags: withYes, run: cmdDestroy, write: true},
		{name: "recurring", args: "QUEUE", help: "list the queue's recurring registrations (redisq Queue.Register): schedule, next and last occurrence; " +
			"a next occurrence in the past means that no process keeps the registration (a Worker, or Queue.KeepRecurring, does)",
			min: 1, max: 1, flags: withJSON, run: cmdRecurring},
		{name: "register", args: "QUEUE NAME SCHEDULE", help: "register (or replace) the recurring job NAME: an item with the payload is enqueued at each occurrence of SCHEDULE " +
			`("every 1h0m0s", "every 24h0m0s, phase 9h0m0s", or a cron spec such as "CRON_TZ=Europe/Paris 0 9 * * *"); ` + keeperNote,
			min: 3, max: 3, flags: registerFlags, run: cmdRegister, write: true},
		{name: "unregister", args: "QUEUE NAME", help: "remove the recurring registration NAME: no occurrence is enqueued any more, and its last one, if still scheduled, is cancelled",
			min: 2, max: 2, flags: withYes, run: cmdUnregister, write: true},
		{name: "watch", args: "QUEUE", help: "stats refreshed every second, with rates and a chart of items coming due",
			min: 1, max: 1, flags: watchFlags, run: cmdWatch, serving: true},
		{name: "serve-metrics", args: "[QUEUE...]", help: "serve Prometheus metrics for the queues (default: every queue on the server): their stats and their recurring registrations",
			max: -1, flags: metricsFlags, run: cmdServeMetrics, serving: true},
		{name: "serve", help: "serve the web dashboard (dqweb) for the queues on the server",
			max: 0, flags: serveFlags, run: cmdServe, serving: true},
	}
}

func withJSON(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.json, "json", false, "print JSON (for scripts; complete, never cut)")
}

func withYes(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.yes, "yes", false, "do not ask for confirmation")
}

func withAll(fs *flag.FlagSet, e *env) {
	withYes(fs, e)
	fs.BoolVar(&e.all, "all", false, "every dead item (asks for confirmation unless -yes)")
}

func withFull(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.full, "full", false, "print everything, not what fits the terminal (its size, or $COLUMNS and $LINES, else 80x24)")
}

func queuesFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	fs.BoolVar(&e.scan, "scan", false, "SCAN the whole keyspace for every queue, those missing from the registry "+redisq.RegistryKey+
		" too (written by an older version or by hand); its cost grows with the number of keys on the server: seconds for millions")
}

func listFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	fs.Int64Var(&e.page.Offset, "offset", 0, "skip the first `n` items")
	fs.IntVar(&e.page.Limit, "limit", 50, fmt.Sprintf("`n` items per page (1..%d)", redisq.MaxPage))
	fs.BoolVar(&e.page.Reverse, "reverse", false, "latest first")
	fs.BoolVar(&e.page.Payloads, "payloads", false, "include payloads (in -json output)")
	withFull(fs, e)
}

func showFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	withFull(fs, e)
}

// queueInfo is one line of "queues".
type queueInfo struct {
	Name      string `json:"name"`
	Scheduled int64  `json:"scheduled"`
	Due       int64  `json:"due"`
	InFlight  int64  `json:"inflight"`
	Dead      int64  `json:"dead"`
	Paused    bool   `json:"paused"`
}

func cmdQueues(e *env) error {
	list := redisq.ListQueues
	if e.scan {
		list = redisq.ScanQueues
	}
	names, err := list(e.ctx, e.c)
	if err != nil {
		return err
	}
	infos := make([]queueInfo, 0, len(names))
	paused := false
	for _, n := range names {
		q, err := redisq.New(e.ctx, e.c, n, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
		if err != nil {
			continue
		}
		st, err := q.Stats(e.ctx)
		if err != nil {
			return err
		}
		infos = append(infos, queueInfo{n, st.Scheduled, st.DueBacklog, st.InFlight, st.Dead, st.Paused})
		paused = paused || st.Paused
	}
	if e.json {
		return writeJSON(e.stdout, infos)
	}
	if len(infos) == 0 {
		e.printf("no queues on %s", e.conn.where())
		if !e.scan {
			e.printf(" (in the registry %s; dqctl queues -scan finds unregistered ones)", redisq.RegistryKey)
		}
		e.printf("\n")
		return nil
	}
	tw := table(e.stdout)
	// The PAUSED column only when a queue is paused.
	head, line := "QUEUE\tSCHEDULED\tDUE\tINFLIGHT\tDEAD", "%s\t%d\t%d\t%d\t%d"
	if paused {
		head, line = head+"\tPAUSED", line+"\t%s"
	}
	fmt.Fprintln(tw, head)
	for _, i := range infos {
		a := []any{cell(i.Name), i.Scheduled, i.Due, i.InFlight, i.Dead}
		if paused {
			a = append(a, map[bool]string{true: "paused"}[i.Paused])
		}
		fmt.Fprintf(tw, line+"\n", a...)
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
// payload, when it was read, in one field whatever its content:
// payload_encoding says how (utf8: the string is the payload; base64:
// the payload is not UTF-8 and the string is its standard base64).
type itemJSON struct {
	redisq.Item
	Payload  *string `json:"payload,omitempty"`
	Encoding string  `json:"payload_encoding,omitempty"`
}

func jsonItem(it redisq.Item, withPayload bool) itemJSON {
	j := itemJSON{Item: it}
	if !withPayload {
		return j
	}
	p, enc := string(it.Payload), "utf8"
	if !utf8.Valid(it.Payload) {
		p, enc = base64Std(it.Payload), "base64"
	}
	j.Payload, j.Encoding = &p, enc
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
			out.Items = append(out.Items, jsonItem(it, e.page.Payloads))
		}
		return writeJSON(e.stdout, out)
	}
	var rows [][]string
	switch state {
	case redisq.StateScheduled:
		rows = append(rows, []string{"ID", "DUE", "ATTEMPTS", "ENQUEUED", "SIZE"})
	case redisq.StateInFlight:
		rows = append(rows, []string{"ID", "LEASE ENDS", "ATTEMPTS", "DUE", "CANCELLED", "SIZE"})
	default:
		rows = append(rows, []string{"ID", "DIED", "ATTEMPTS", "SIZE", "REASON"})
	}
	for _, it := range p.Items {
		att, size := strconv.Itoa(it.Attempts), strconv.Itoa(it.PayloadSize)
		switch state {
		case redisq.StateScheduled:
			rows = append(rows, []string{cell(it.ID), rel(it.Due, p.Now), att, rel(it.Enqueued, p.Now), size})
		case redisq.StateInFlight:
			rows = append(rows, []string{cell(it.ID), rel(it.LeaseDeadline, p.Now), att, rel(it.Due, p.Now), strconv.FormatBool(it.Cancelled), size})
		default:
			rows = append(rows, []string{cell(it.ID), rel(it.DiedAt, p.Now), att, size, cell(it.DeadReason)})
		}
	}
	cut := false
	if state == redisq.StateDead && !e.full {
		cut = fitLastColumn(rows, screen(e.stdout).cols)
	}
	if err := writeTable(e.stdout, rows); err != nil {
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
	if cut {
		e.printf("; reasons cut to the terminal's width (-full: whole)")
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
		return writeJSON(e.stdout, jsonItem(it, true))
	}
	tw := table(e.stdout)
	fmt.Fprintf(tw, "id\t%s\n", quote(it.ID))
	fmt.Fprintf(tw, "state\t%s\n", it.State)
	fmt.Fprintf(tw, "due\t%s\n", stamp(it.Due))
	fmt.Fprintf(tw, "attempts\t%d\n", it.Attempts)
	fmt.Fprintf(tw, "enqueued\t%s\n", stamp(it.Enqueued))
	lines := 6
	if it.State == redisq.StateInFlight {
		fmt.Fprintf(tw, "lease ends\t%s\n", stamp(it.LeaseDeadline))
		fmt.Fprintf(tw, "cancelled\t%v\n", it.Cancelled)
		lines += 2
	}
	if it.State == redisq.StateDead {
		fmt.Fprintf(tw, "died\t%s\n", stamp(it.DiedAt))
		fmt.Fprintf(tw, "reason\t%s\n", clean(it.DeadReason))
		lines += 2
	}
	fmt.Fprintf(tw, "payload\t%s\n", plural(int64(it.PayloadSize), "byte"))
	if err := tw.Flush(); err != nil {
		return err
	}
	lim := limits{}
	if !e.full {
		s := screen(e.stdout)
		// What is left of the screen, keeping a line for the prompt and
		// one for the note, but at least 10 lines.
		lim = limits{cols: s.cols, lines: max(10, s.rows-lines-2)}
	}
	showPayload(e.stdout, it.Payload, lim)
	return nil
}

// stamp is a Redis-clock time for show: UTC, to the millisecond.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// plural is "1 byte", "2 bytes".
func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
