package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

func commands() []command {
	return []command{
		{name: "queues", help: "list the queues on the server with their sizes (the registry " + redisq.RegistryKey + "; -scan: every queue); " +
			"a partitioned queue is one row with the sums of its partitions",
			max: 0, flags: queuesFlags, run: cmdQueues},
		{name: "stats", args: "QUEUE", help: "show a queue's sizes, counters and delivery lateness (a partitioned queue's sums, and a line per partition)",
			min: 1, max: 1, flags: withJSON, run: cmdStats},
		{name: "list", args: "QUEUE STATE", help: "list the items in STATE (scheduled, inflight, dead), a page at a time (a partitioned queue's across its partitions, from -cursor)",
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
	fs.BoolVar(&e.partitions, "partitions", false, "list the partitions of each partitioned queue, indented under it "+
		"(a partitioned queue is one row, NAME (3 partitions), with their sums; -json always lists them)")
}

func listFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	fs.Int64Var(&e.page.Offset, "offset", 0, "skip the first `n` items (an ordinary queue)")
	fs.StringVar(&e.cursor, "cursor", "", "a partitioned queue: start at this `cursor`, one offset per partition (a,b,c), as the previous page printed")
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

func infoOf(name string, st redisq.Stats) queueInfo {
	return queueInfo{name, st.Scheduled, st.DueBacklog, st.InFlight, st.Dead, st.Paused}
}

// queueRow is a queue of "queues": an ordinary one, or a partitioned one
// with the sums of its partitions (paused when every one is), each of
// them in Partitions.
type queueRow struct {
	queueInfo
	Partitions []queueInfo `json:"partitions,omitempty"`
}

// pausedCell is the PAUSED cell of a row: "paused", "1/3 paused" for a
// partitioned queue some of whose partitions are paused, or "".
func (r queueRow) pausedCell() string {
	n := 0
	for _, p := range r.Partitions {
		if p.Paused {
			n++
		}
	}
	switch {
	case r.Paused:
		return "paused"
	case n > 0:
		return fmt.Sprintf("%d/%d paused", n, len(r.Partitions))
	}
	return ""
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
	// The partitioned queues, each shown once with its partitions: those
	// are not listed again as queues of their own.
	parts, err := redisq.ListPartitioned(e.ctx, e.c)
	if err != nil {
		if e.ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "dqctl: partitioned queues not listed (their partitions are listed as queues): %s\n", clean(err.Error()))
	}
	hide := map[string]bool{}
	for _, p := range parts {
		if p.Err != nil {
			fmt.Fprintf(e.stderr, "dqctl: partitioned queue %s not listed (its partitions are listed as queues): %s\n", quote(p.Name), clean(p.Err.Error()))
			continue
		}
		for _, n := range p.Partitions {
			hide[n] = true
		}
	}
	stats := func(n string) (redisq.Stats, bool, error) {
		q, err := redisq.New(e.ctx, e.c, n, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
		if err != nil {
			return redisq.Stats{}, false, nil
		}
		st, err := q.Stats(e.ctx)
		return st, err == nil, err
	}
	rows := make([]queueRow, 0, len(names)+len(parts))
	for _, n := range names {
		if hide[n] {
			continue
		}
		st, ok, err := stats(n)
		if err != nil {
			return err
		}
		if ok {
			rows = append(rows, queueRow{queueInfo: infoOf(n, st)})
		}
	}
	for _, p := range parts {
		if p.Err != nil {
			continue
		}
		row := queueRow{Partitions: []queueInfo{}}
		ss := make([]redisq.Stats, 0, len(p.Partitions))
		for _, n := range p.Partitions {
			st, _, err := stats(n)
			if err != nil {
				return err
			}
			ss = append(ss, st)
			row.Partitions = append(row.Partitions, infoOf(n, st))
		}
		row.queueInfo = infoOf(p.Name, redisq.SumStats(ss))
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b queueRow) int { return strings.Compare(a.Name, b.Name) })
	if e.json {
		return writeJSON(e.stdout, rows)
	}
	if len(rows) == 0 {
		e.printf("no queues on %s", e.conn.where())
		if !e.scan {
			e.printf(" (in the registry %s; dqctl queues -scan finds unregistered ones)", redisq.RegistryKey)
		}
		e.printf("\n")
		return nil
	}
	paused := false
	for _, r := range rows {
		paused = paused || r.pausedCell() != ""
	}
	tw := table(e.stdout)
	// The PAUSED column only when a queue is paused.
	head, line := "QUEUE\tSCHEDULED\tDUE\tINFLIGHT\tDEAD", "%s\t%d\t%d\t%d\t%d"
	if paused {
		head, line = head+"\tPAUSED", line+"\t%s"
	}
	fmt.Fprintln(tw, head)
	row := func(name string, i queueInfo, pausedCell string) {
		a := []any{name, i.Scheduled, i.Due, i.InFlight, i.Dead}
		if paused {
			a = append(a, pausedCell)
		}
		fmt.Fprintf(tw, line+"\n", a...)
	}
	for _, r := range rows {
		if r.Partitions == nil {
			row(cell(r.Name), r.queueInfo, r.pausedCell())
			continue
		}
		row(cell(r.Name)+" ("+plural(int64(len(r.Partitions)), "partition")+")", r.queueInfo, r.pausedCell())
		if e.partitions {
			for _, p := range r.Partitions {
				row("  "+cell(p.Name), p, map[bool]string{true: "paused"}[p.Paused])
			}
		}
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
// the payload is not UTF-8 and the string is its standard base64). An
// item of a partitioned queue also has its partition: its number and its
// name (an ordinary queue).
type itemJSON struct {
	redisq.Item
	Payload        *string `json:"payload,omitempty"`
	Encoding       string  `json:"payload_encoding,omitempty"`
	Partition      *int    `json:"partition,omitempty"`
	PartitionQueue string  `json:"partition_queue,omitempty"`
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

// partItem is jsonItem for the item of partition i of p.
func partItem(it redisq.Item, withPayload bool, p *redisq.Partitioned, i int) itemJSON {
	j := jsonItem(it, withPayload)
	j.Partition, j.PartitionQueue = &i, p.Partition(i).Name()
	return j
}

// itemTable is the table of list: a header and a row per item, with a
// PARTITION column after the id when part is given (a partitioned queue).
func itemTable(state redisq.State, items []redisq.Item, now time.Time, part func(i int) string) [][]string {
	var head []string
	switch state {
	case redisq.StateScheduled:
		head = []string{"ID", "DUE", "ATTEMPTS", "ENQUEUED", "SIZE"}
	case redisq.StateInFlight:
		head = []string{"ID", "LEASE ENDS", "ATTEMPTS", "DUE", "CANCELLED", "SIZE"}
	default:
		head = []string{"ID", "DIED", "ATTEMPTS", "SIZE", "REASON"}
	}
	withPart := func(r []string, p string) []string {
		if part == nil {
			return r
		}
		return append([]string{r[0], p}, r[1:]...)
	}
	rows := [][]string{withPart(head, "PARTITION")}
	for i, it := range items {
		att, size := strconv.Itoa(it.Attempts), strconv.Itoa(it.PayloadSize)
		var r []string
		switch state {
		case redisq.StateScheduled:
			r = []string{cell(it.ID), rel(it.Due, now), att, rel(it.Enqueued, now), size}
		case redisq.StateInFlight:
			r = []string{cell(it.ID), rel(it.LeaseDeadline, now), att, rel(it.Due, now), strconv.FormatBool(it.Cancelled), size}
		default:
			r = []string{cell(it.ID), rel(it.DiedAt, now), att, size, cell(it.DeadReason)}
		}
		if part != nil {
			r = withPart(r, part(i))
		}
		rows = append(rows, r)
	}
	return rows
}

// writeItems writes the table of list, the reasons of dead items cut to
// the terminal unless -full; it reports whether it cut one.
func writeItems(e *env, state redisq.State, rows [][]string) (bool, error) {
	cut := false
	if state == redisq.StateDead && !e.full {
		cut = fitLastColumn(rows, screen(e.stdout).cols)
	}
	return cut, writeTable(e.stdout, rows)
}

func cmdList(e *env) error {
	state, err := parseState(e.args[1])
	if err != nil {
		return err
	}
	if e.page.Limit < 1 || e.page.Limit > redisq.MaxPage || e.page.Offset < 0 {
		return usageErr("-limit must be in 1..%d and -offset >= 0", redisq.MaxPage)
	}
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.close()
	if t.p != nil {
		return listPartitioned(e, t.p, state)
	}
	if e.cursor != "" {
		return usageErr("-cursor pages a partitioned queue; queue %s is an ordinary one: give -offset", quote(t.q.Name()))
	}
	p, err := t.q.List(e.ctx, state, e.page)
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
	cut, err := writeItems(e, state, itemTable(state, p.Items, p.Now, nil))
	if err != nil {
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

// listPartitioned is list of a partitioned queue: one page merged across
// its partitions, from -cursor.
func listPartitioned(e *env, p *redisq.Partitioned, state redisq.State) error {
	if e.page.Offset != 0 {
		return usageErr("-offset pages an ordinary queue; queue %s is partitioned (%s): give -cursor, as each page prints it",
			quote(p.Name()), plural(int64(p.NumPartitions()), "partition"))
	}
	cur, err := parseCursor(e.cursor, p.NumPartitions(), p.Name())
	if err != nil {
		return err
	}
	pg, err := p.List(e.ctx, state, redisq.PartitionedListOptions{Cursor: cur, Limit: e.page.Limit, Reverse: e.page.Reverse, Payloads: e.page.Payloads})
	if err != nil {
		return err
	}
	if e.json {
		out := struct {
			Now   time.Time  `json:"now"`
			Total int64      `json:"total"`
			Next  []int64    `json:"next"` // null after the last page
			Items []itemJSON `json:"items"`
		}{pg.Now, pg.Total, pg.Next, []itemJSON{}}
		for _, it := range pg.Items {
			out.Items = append(out.Items, partItem(it.Item, e.page.Payloads, p, it.Partition))
		}
		return writeJSON(e.stdout, out)
	}
	items := make([]redisq.Item, len(pg.Items))
	for i, it := range pg.Items {
		items[i] = it.Item
	}
	cut, err := writeItems(e, state, itemTable(state, items, pg.Now, func(i int) string { return strconv.Itoa(pg.Items[i].Partition) }))
	if err != nil {
		return err
	}
	var before int64 // the items of the merged order before this page
	for _, o := range cur {
		before += o
	}
	if len(pg.Items) == 0 {
		e.printf("(no %s items at cursor %s; %d in all)\n", state, formatCursor(cur, p.NumPartitions()), pg.Total)
		return nil
	}
	e.printf("%d-%d of %d %s in %s", before+1, before+int64(len(pg.Items)), pg.Total, state, plural(int64(p.NumPartitions()), "partition"))
	if pg.Next != nil {
		e.printf("; next page: -cursor %s", formatCursor(pg.Next, 0))
	}
	if cut {
		e.printf("; reasons cut to the terminal's width (-full: whole)")
	}
	e.printf("\n")
	return nil
}

func cmdShow(e *env) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.close()
	id := e.args[1]
	var it redisq.Item
	part := -1
	if t.p != nil {
		it, part, err = getPartitioned(e, t.p, id)
	} else {
		it, err = t.q.Get(e.ctx, id)
	}
	if errors.Is(err, redisq.ErrNotFound) {
		return notFound("no item %s in queue %s", quote(id), quote(t.Name()))
	}
	if err != nil {
		return err
	}
	if e.json {
		if part >= 0 {
			return writeJSON(e.stdout, partItem(it, true, t.p, part))
		}
		return writeJSON(e.stdout, jsonItem(it, true))
	}
	tw := table(e.stdout)
	fmt.Fprintf(tw, "id\t%s\n", quote(it.ID))
	lines := 6
	if part >= 0 {
		fmt.Fprintf(tw, "partition\t%s\n", partitionName(t.p, part))
		lines++
	}
	fmt.Fprintf(tw, "state\t%s\n", it.State)
	fmt.Fprintf(tw, "due\t%s\n", stamp(it.Due))
	fmt.Fprintf(tw, "attempts\t%d\n", it.Attempts)
	fmt.Fprintf(tw, "enqueued\t%s\n", stamp(it.Enqueued))
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

// getPartitioned finds item id of p: Get on the partition of the id, else
// the partitions Locate finds (an item enqueued under an ordering key);
// when several hold it, the first, saying so on stderr.
func getPartitioned(e *env, p *redisq.Partitioned, id string) (redisq.Item, int, error) {
	it, err := p.Get(e.ctx, id)
	if !errors.Is(err, redisq.ErrNotFound) {
		return it, p.PartitionOf(id), err
	}
	at, err := p.Locate(e.ctx, id)
	if err != nil {
		return redisq.Item{}, 0, err
	}
	if len(at) > 1 {
		var others []string
		for _, i := range at[1:] {
			others = append(others, quote(p.Partition(i).Name()))
		}
		fmt.Fprintf(e.stderr, "dqctl: item %s is in %s (enqueued under ordering keys of different partitions): this is partition %s's; "+
			"give the partition's name as the queue for another (%s)\n", quote(id), plural(int64(len(at)), "partition"), partitionName(p, at[0]), strings.Join(others, ", "))
	}
	it, err = p.Partition(at[0]).Get(e.ctx, id)
	return it, at[0], err
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
