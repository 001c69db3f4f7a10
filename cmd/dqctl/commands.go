package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

func commands() []command {
	return []command{
		{name: "queues", help: "list the queues on the server with their sizes, oldest overdue item and failed deliveries, the sick first with -sort " +
			"(the registry " + redisq.RegistryKey + "; -scan: every queue); a partitioned queue is one row with the sums of its partitions",
			max: 0, flags: queuesFlags, run: cmdQueues},
		{name: "stats", args: "QUEUE", help: "show a queue's sizes, counters and delivery lateness (a partitioned queue's sums, and a line per partition)",
			min: 1, max: 1, flags: withJSON, run: cmdStats},
		{name: "workers", args: "QUEUE", help: "list the live Workers of a queue from their heartbeats: host, pid, since when, last beat, " +
			"handlers running, and the messages they run since when; says when items are due and no worker is alive",
			min: 1, max: 1, flags: showFlags, run: cmdWorkers},
		{name: "list", args: "QUEUE STATE", help: "list the items in STATE (scheduled, inflight, dead, completed), a page at a time (a partitioned queue's across its partitions, from -cursor), " +
			"with their kind (-kind: only the items of one kind); completed items (acked, kept for their job's retention) with when they expire and their result's size " +
			"(-payloads: a preview of it)",
			min: 2, max: 2, flags: listFlags, run: cmdList},
		{name: "show", args: "QUEUE ID", help: "show one item: its state, kind, headers and own options (max attempts, backoff, timeout, not after, retention, unique key), " +
			"its payload pretty-printed if it is JSON (what fits the terminal; -full: all); a completed item's completion, expiry and result, shown as the payload is",
			min: 2, max: 2, flags: showFlags, run: cmdShow},
		{name: "reasons", args: "QUEUE", help: "group the dead items by the reason they died of: how many, the first and last death of each " +
			"(list -reason lists a group, requeue and delete-dead -reason act on one)",
			min: 1, max: 1, flags: reasonsFlags, run: cmdReasons},
		{name: "requeue", args: "QUEUE (ID... | -all | -reason R)", help: "requeue dead items: due now, attempts reset",
			min: 1, max: -1, flags: withDead, run: func(e *env) error { return cmdDead(e, true) }, write: true},
		{name: "delete-dead", args: "QUEUE (ID... | -all | -reason R)", help: "delete dead items",
			min: 1, max: -1, flags: withDead, run: func(e *env) error { return cmdDead(e, false) }, write: true},
		{name: "run-now", args: "QUEUE ID...", help: "run items as soon as a consumer is free, never later than they would have: " +
			"a scheduled item is made due now, one already due keeps its place, a dead or completed one is requeued, " +
			"and the next occurrence of a recurring job stays at its time while an extra run is enqueued, due now",
			min: 2, max: -1, run: cmdRunNow, write: true},
		{name: "delete", args: "QUEUE ID...", help: "delete items in any state (an in-flight one is marked: deleted when settled, never retried)",
			min: 2, max: -1, run: cmdDelete, write: true},
		{name: "purge", args: "QUEUE STATE", help: "delete every item in STATE: scheduled, inflight (mark them all), dead or completed (the results kept)",
			min: 2, max: 2, flags: withYes, run: cmdPurge, write: true},
		{name: "unique", args: "QUEUE KEY", help: "show a unique key's window (redisq Unique and Debounce): the item whose enqueue took it and when it ends; " +
			"an enqueue of the key meanwhile is refused (Unique) or replaces that item while it waits (Debounce); -release ends the window now",
			min: 2, max: 2, flags: uniqueFlags, run: cmdUnique},
		{name: "limits", args: "QUEUE [KEY]", help: "list the rate limit of the whole queue (redisq Queue.SetQueueRateLimit), when it has one: " +
			"the limit, the claims of its items in the window that ends now and when the next may be made; " +
			"then its keys' rate limits (Queue.SetRateLimit): the limit, " +
			"the claims in the window that ends now, when the next may be made, the items waiting for a slot and the last slot given; " +
			"then their concurrency limits (Queue.SetConcurrencyLimit): the limit, the items leased and the items waiting for a place; " +
			"with KEY, that limit key's alone",
			min: 1, max: 2, run: cmdLimits},
		{name: "concurrency-limit", args: "QUEUE KEY K|none", help: "set the concurrency limit of the items whose limit key is KEY (\"\" for those without one): " +
			"at most K of them leased at once, across every process; none removes it and lets the waiting items go",
			min: 3, max: 3, run: cmdConcurrencyLimit, write: true},
		{name: "rate-limit", args: "QUEUE KEY N/PER|none", help: "set the rate limit of the items whose limit key is KEY (\"\" for those without one): " +
			"at most N claims in any PER (100/1m), by the Redis clock; none removes it. Waiting items wait again under the new limit only if they must",
			min: 3, max: 3, run: cmdRateLimit, write: true},
		{name: "queue-rate-limit", args: "QUEUE N/PER|none", help: "set the rate limit of the whole queue: at most N claims of its items in any PER (100/1m), " +
			"whatever their limit keys (whose own limits hold too), by the Redis clock; none removes it. While its window is full nothing is claimed: " +
			"the due items stay due, in order, and no item waits for a slot",
			min: 2, max: 2, run: cmdQueueRateLimit, write: true},
		{name: "pause", args: "QUEUE", help: "pause deliveries: no consumer takes an item until resume (enqueues, acks and admin commands go on)",
			min: 1, max: 1, run: func(e *env) error { return cmdPause(e, true) }, write: true},
		{name: "resume", args: "QUEUE", help: "resume the deliveries of a paused queue",
			min: 1, max: 1, run: func(e *env) error { return cmdPause(e, false) }, write: true},
		{name: "destroy", args: "QUEUE", help: "delete every key of a queue: items, counters, everything",
			min: 1, max: 1, flags: withYes, run: cmdDestroy, write: true},
		{name: "recurring", args: "QUEUE", help: "list the queue's recurring registrations (redisq Queue.Register): schedule, next and last run, " +
			"when live code last registered it; a next run in the past means that no process keeps the registration (a Worker, or Queue.KeepRecurring, does), " +
			"orphaned that no live code has registered it for " + redisq.OrphanAfter.String(),
			min: 1, max: 1, flags: withJSON, run: cmdRecurring},
		{name: "register", args: "QUEUE NAME SCHEDULE", help: "register (or replace) the recurring job NAME: an item with the payload is enqueued at each occurrence of SCHEDULE " +
			`("every 1h0m0s", "every 24h0m0s, phase 9h0m0s", or a cron spec such as "CRON_TZ=Europe/Paris 0 9 * * *"); ` + keeperNote,
			min: 3, max: 3, flags: registerFlags, run: cmdRegister, write: true},
		{name: "unregister", args: "QUEUE NAME", help: "remove the recurring registration NAME: no occurrence is enqueued any more, and its last one, if still scheduled, is cancelled",
			min: 2, max: 2, flags: withYes, run: cmdUnregister, write: true},
		{name: "backfill", args: "QUEUE NAME FROM TO", help: "run again the past occurrences of the recurring registration NAME from FROM to TO (RFC 3339, TO excluded) " +
			"that its series has passed: each is enqueued due now, in order, under its own id; one whose item exists is left (redisq Backfill)",
			min: 4, max: 4, run: cmdBackfill, write: true},
		{name: "pause-recurring", args: "QUEUE NAME", help: "pause the recurring registration NAME: no occurrence is enqueued until resume-recurring, " +
			"and its scheduled occurrence, if not yet due, is cancelled (the registration and its definition stay)",
			min: 2, max: 2, run: func(e *env) error { return cmdPauseRecurring(e, true) }, write: true},
		{name: "resume-recurring", args: "QUEUE NAME", help: "resume a paused recurring registration: its first occurrence after now is enqueued, those of the pause are skipped",
			min: 2, max: 2, run: func(e *env) error { return cmdPauseRecurring(e, false) }, write: true},
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

// withDead is the flags of requeue and delete-dead.
func withDead(fs *flag.FlagSet, e *env) {
	withAll(fs, e)
	withReason(fs, e, "the dead items that died of exactly this `reason`, as dqctl reasons prints it (asks for confirmation unless -yes)")
}

func withFull(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.full, "full", false, "print everything, not what fits the terminal (its size, or $COLUMNS and $LINES, else 80x24)")
}

func queuesFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	fs.BoolVar(&e.scan, "scan", false, "SCAN the whole keyspace for every queue, those missing from the registry "+redisq.RegistryKey+
		" too (written by an older version or by hand); its cost grows with the number of keys on the server: seconds for millions")
	fs.StringVar(&e.sort, "sort", "name", "order the queues by `key`: "+sortNames()+"; but for name, the largest first, so that the sick queue comes first "+
		"(failed: the share of deliveries not acked since the queue was created, snoozes left out)")
	fs.BoolVar(&e.partitions, "partitions", false, "list the partitions of each partitioned queue, indented under it "+
		"(a partitioned queue is one row, NAME (3 partitions), with their sums; -json always lists them)")
}

func listFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	fs.Int64Var(&e.page.Offset, "offset", 0, "skip the first `n` items (an ordinary queue)")
	fs.StringVar(&e.cursor, "cursor", "", "a partitioned queue: start at this `cursor`, one offset per partition (a,b,c), as the previous page printed")
	fs.IntVar(&e.page.Limit, "limit", 50, fmt.Sprintf("`n` items per page (1..%d)", redisq.MaxPage))
	fs.BoolVar(&e.page.Reverse, "reverse", false, "latest first")
	fs.BoolVar(&e.page.Payloads, "payloads", false, "include payloads and results (in -json output; completed items: a preview of the result in the RESULT column)")
	withReason(fs, e, "list only the dead items that died of exactly this `reason`, as dqctl reasons prints it "+
		"(a page then examines up to 1000 dead items: it may hold fewer than -limit, or none, and still have a next page)")
	fs.Var(&e.kind, "kind", "list only the items of exactly this `kind`, as the KIND column prints it (with -reason: the dead items of both) "+
		"(a page then examines up to 1000 items: it may hold fewer than -limit, or none, and still have a next page)")
	withFull(fs, e)
}

func showFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	withFull(fs, e)
}

// queueInfo is one line of "queues": the sizes.
type queueInfo struct {
	Name      string `json:"name"`
	Scheduled int64  `json:"scheduled"`
	Due       int64  `json:"due"`
	InFlight  int64  `json:"inflight"`
	Dead      int64  `json:"dead"`
	Completed int64  `json:"completed"`
	Paused    bool   `json:"paused"`
}

// queueHealth is what tells the sick queue in "queues": how long its
// oldest due item has waited, since when it is paused, and the counters
// of its failed deliveries (since the queue was created), and of its
// snoozed ones, which are no failures.
type queueHealth struct {
	OldestOverdueSeconds float64   `json:"oldest_overdue_seconds"`
	PausedSince          time.Time `json:"paused_since,omitzero"`
	Delivered            int64     `json:"delivered"`
	Acked                int64     `json:"acked"`
	Nacked               int64     `json:"nacked"`
	Expired              int64     `json:"expired"`
	DeadLettered         int64     `json:"dead_lettered"`
	Snoozed              int64     `json:"snoozed"`

	overdue time.Duration
	now     time.Time // Redis TIME of its stats
}

// queueLine is a queue, or a partition, of "queues".
type queueLine struct {
	queueInfo
	queueHealth
}

func infoOf(name string, st redisq.Stats) queueLine {
	c := st.StatsCounters
	return queueLine{queueInfo{name, st.Scheduled, st.DueBacklog, st.InFlight, st.Dead, st.Completed, st.Paused},
		queueHealth{st.OldestOverdue.Seconds(), st.PausedSince, c.Delivered, c.Acked, c.Nacked, c.Expired, c.DeadLettered, c.Snoozed, st.OldestOverdue, st.Now}}
}

// failed is the share of the deliveries that were not acked (nacked,
// expired, dead-lettered or handed back), those in flight aside, and
// those a handler gave back with Snooze ("not now", no failure) left
// out; ok is false before the first delivery not snoozed.
func (l queueLine) failed() (share float64, ok bool) {
	d := l.Delivered - max(l.Snoozed, 0)
	if d <= 0 {
		return 0, false
	}
	n := max(0, min(d, d-l.Acked-l.InFlight))
	return float64(n) / float64(d), true
}

// failedCell is the FAILED cell: "12.5%", or "-" before any delivery.
func (l queueLine) failedCell() string {
	f, ok := l.failed()
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
}

// overdueCell is the OLDEST OVERDUE cell: "-" when nothing is due.
func (l queueLine) overdueCell() string {
	if l.Due == 0 {
		return "-"
	}
	return roundDur(l.overdue).String()
}

// pausedCell of one queue: "paused 3m0s ago (2026-12-01T15:31:11Z)",
// "paused" when the queue does not say since when, or "".
func (l queueLine) pausedCell() string {
	switch {
	case !l.Paused:
		return ""
	case l.PausedSince.IsZero():
		return "paused"
	}
	return "paused " + when(l.PausedSince, l.now)
}

// queueRow is a queue of "queues": an ordinary one, or a partitioned one
// with the sums of its partitions (paused when every one is), each of
// them in Partitions.
type queueRow struct {
	queueLine
	Partitions []queueLine `json:"partitions,omitempty"`
}

// pausedCell is the PAUSED cell of a row: that of a queue, or "1/3 paused"
// for a partitioned queue some of whose partitions are paused.
func (r queueRow) pausedCell() string {
	n := 0
	for _, p := range r.Partitions {
		if p.Paused {
			n++
		}
	}
	if !r.Paused && n > 0 {
		return fmt.Sprintf("%d/%d paused", n, len(r.Partitions))
	}
	return r.queueLine.pausedCell()
}

// queueSorts are the orders of queues -sort: by name, else the sickest
// first (the name breaking ties).
var queueSorts = map[string]func(a, b queueLine) int{
	"name":     func(a, b queueLine) int { return 0 },
	"overdue":  func(a, b queueLine) int { return cmp.Compare(b.overdue, a.overdue) },
	"due":      func(a, b queueLine) int { return cmp.Compare(b.Due, a.Due) },
	"inflight": func(a, b queueLine) int { return cmp.Compare(b.InFlight, a.InFlight) },
	"dead":     func(a, b queueLine) int { return cmp.Compare(b.Dead, a.Dead) },
	"failed": func(a, b queueLine) int {
		fa, _ := a.failed()
		fb, _ := b.failed()
		return cmp.Or(cmp.Compare(fb, fa), cmp.Compare(b.Nacked+b.DeadLettered, a.Nacked+a.DeadLettered))
	},
}

// sortNames is the -sort values, for messages and help.
func sortNames() string {
	return "name, overdue, due, inflight, dead, failed (errors)"
}

func cmdQueues(e *env) error {
	sortBy := e.sort
	if sortBy == "errors" {
		sortBy = "failed"
	}
	order, ok := queueSorts[sortBy]
	if !ok {
		return usageErr("unknown -sort %s: want %s", quote(e.sort), sortNames())
	}
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
			rows = append(rows, queueRow{queueLine: infoOf(n, st)})
		}
	}
	for _, p := range parts {
		if p.Err != nil {
			continue
		}
		row := queueRow{Partitions: []queueLine{}}
		ss := make([]redisq.Stats, 0, len(p.Partitions))
		for _, n := range p.Partitions {
			st, _, err := stats(n)
			if err != nil {
				return err
			}
			ss = append(ss, st)
			row.Partitions = append(row.Partitions, infoOf(n, st))
		}
		row.queueLine = infoOf(p.Name, redisq.SumStats(ss))
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b queueRow) int {
		return cmp.Or(order(a.queueLine, b.queueLine), strings.Compare(a.Name, b.Name))
	})
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
	// The PAUSED column only when a queue is paused.
	out := [][]string{{"QUEUE", "SCHEDULED", "DUE", "OLDEST OVERDUE", "INFLIGHT", "DEAD", "COMPLETED", "NACKED", "DEAD-LETTERED", "FAILED"}}
	if paused {
		out[0] = append(out[0], "PAUSED")
	}
	row := func(name string, l queueLine, pausedCell string) {
		r := []string{name, num(l.Scheduled), num(l.Due), l.overdueCell(), num(l.InFlight), num(l.Dead), num(l.Completed), num(l.Nacked), num(l.DeadLettered), l.failedCell()}
		if paused {
			r = append(r, pausedCell)
		}
		out = append(out, r)
	}
	for _, r := range rows {
		if r.Partitions == nil {
			row(cell(r.Name), r.queueLine, r.pausedCell())
			continue
		}
		row(cell(r.Name)+" ("+plural(int64(len(r.Partitions)), "partition")+")", r.queueLine, r.pausedCell())
		if e.partitions {
			for _, p := range r.Partitions {
				row("  "+cell(p.Name), p, p.pausedCell())
			}
		}
	}
	return writeTable(e.stdout, out)
}

func parseState(s string) (redisq.State, error) {
	st, err := redisq.ParseState(s)
	if err != nil {
		return 0, usageErr("unknown state %s: want scheduled, inflight, dead or completed", quote(s))
	}
	return st, nil
}

// itemJSON is an item in -json output: the library's Item, with the
// payload, when it was read, in one field whatever its content:
// payload_encoding says how (utf8: the string is the payload; base64:
// the payload is not UTF-8 and the string is its standard base64). An
// item of a partitioned queue also has its partition: its number and its
// name (an ordinary queue). A completed item's result, when it was read,
// is in result the same way, result_encoding saying how.
type itemJSON struct {
	redisq.Item
	Payload        *string `json:"payload,omitempty"`
	Encoding       string  `json:"payload_encoding,omitempty"`
	Result         *string `json:"result,omitempty"`
	ResultEncoding string  `json:"result_encoding,omitempty"`
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
	if it.State == redisq.StateCompleted {
		r, enc := string(it.Result), "utf8"
		if !utf8.Valid(it.Result) {
			r, enc = base64Std(it.Result), "base64"
		}
		j.Result, j.ResultEncoding = &r, enc
	}
	return j
}

// partItem is jsonItem for the item of partition i of p.
func partItem(it redisq.Item, withPayload bool, p *redisq.Partitioned, i int) itemJSON {
	j := jsonItem(it, withPayload)
	j.Partition, j.PartitionQueue = &i, p.Partition(i).Name()
	return j
}

// kindCell is an item's kind in a table cell: "-" for none, and a kind
// that is itself "-" quoted.
func kindCell(kind string) string {
	switch kind {
	case "":
		return "-"
	case "-":
		return quote(kind)
	}
	return cell(kind)
}

// itemTable is the table of list: a header and a row per item, its KIND
// after the id, with a PARTITION column between them when part is given
// (a partitioned queue).
func itemTable(state redisq.State, items []redisq.Item, now time.Time, part func(i int) string) [][]string {
	var head []string
	switch state {
	case redisq.StateScheduled:
		head = []string{"ID", "KIND", "DUE", "ATTEMPTS", "ENQUEUED", "SIZE"}
	case redisq.StateInFlight:
		head = []string{"ID", "KIND", "LEASE ENDS", "ATTEMPTS", "DUE", "CANCELLED", "SIZE"}
	case redisq.StateCompleted:
		head = []string{"ID", "KIND", "COMPLETED", "EXPIRES", "ATTEMPTS", "SIZE", "RESULT"}
	default:
		head = []string{"ID", "KIND", "DIED", "ATTEMPTS", "SIZE", "REASON"}
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
			r = []string{cell(it.ID), kindCell(it.Kind), rel(it.Due, now), att, rel(it.Enqueued, now), size}
		case redisq.StateInFlight:
			r = []string{cell(it.ID), kindCell(it.Kind), rel(it.LeaseDeadline, now), att, rel(it.Due, now), strconv.FormatBool(it.Cancelled), size}
		case redisq.StateCompleted:
			r = []string{cell(it.ID), kindCell(it.Kind), rel(it.CompletedAt, now), rel(it.Expires, now), att, size, resultCell(it)}
		default:
			r = []string{cell(it.ID), kindCell(it.Kind), rel(it.DiedAt, now), att, size, cell(it.DeadReason)}
		}
		if part != nil {
			r = withPart(r, part(i))
		}
		rows = append(rows, r)
	}
	return rows
}

// resultPreview is how many runes of a result the RESULT cell shows at
// most (then the terminal's width cuts it further, unless -full).
const resultPreview = 40

// resultCell is the RESULT cell of a completed item: a preview of the
// result when it was read (-payloads, see oneLine), else its size; "-"
// for none.
func resultCell(it redisq.Item) string {
	switch {
	case it.ResultSize == 0 && len(it.Result) == 0:
		return "-"
	case it.Result != nil:
		return cutTo(oneLine(it.Result), resultPreview)
	}
	return plural(int64(it.ResultSize), "byte")
}

// writeItems writes the table of list cut to the terminal's width
// unless -full (see fitColumns): the ids and kinds, and the reasons of
// dead items and the results of completed ones, the last column. It
// returns what it cut, for the summary line ("" when nothing).
func writeItems(e *env, state redisq.State, rows [][]string) (string, error) {
	var cut []string
	if !e.full {
		cols := []int{0, 1}
		if rows[0][1] == "PARTITION" {
			cols = []int{0, 2}
		}
		if state == redisq.StateDead || state == redisq.StateCompleted {
			cols = append(cols, len(rows[0])-1)
		}
		cut = fitColumns(rows, screen(e.stdout).cols, cols...)
	}
	note := ""
	if len(cut) > 0 {
		for i, h := range cut {
			cut[i] = map[string]string{"ID": "ids", "KIND": "kinds", "REASON": "reasons", "RESULT": "results"}[h]
		}
		note = cut[len(cut)-1]
		if len(cut) > 1 {
			note = strings.Join(cut[:len(cut)-1], ", ") + " and " + note
		}
		note += " cut to the terminal's width (-full: whole)"
	}
	return note, writeTable(e.stdout, rows)
}

// summary prints list's line under the table, its parts joined by "; ",
// wrapped to the terminal's width.
func summary(e *env, parts ...string) {
	var ps []string
	for _, p := range parts {
		if p != "" {
			ps = append(ps, p)
		}
	}
	fmt.Fprint(e.stdout, wrapTo(screen(e.stdout).cols, "", "  ", ps, ";"))
}

func cmdList(e *env) error {
	state, err := parseState(e.args[1])
	if err != nil {
		return err
	}
	if e.page.Limit < 1 || e.page.Limit > redisq.MaxPage || e.page.Offset < 0 {
		return usageErr("-limit must be in 1..%d and -offset >= 0", redisq.MaxPage)
	}
	if e.reason.set {
		if err := checkReason(e.reason.val); err != nil {
			return err
		}
		if state != redisq.StateDead {
			return usageErr("-reason filters dead items: give the state dead, not %s", state)
		}
		e.page.Reason = e.reason.val
	}
	if e.kind.set {
		if err := checkKind(e.kind.val); err != nil {
			return err
		}
		e.page.Kind = e.kind.val
	}
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
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
	next := ""
	if p.Next >= 0 {
		next = fmt.Sprintf("next page: -offset %d", p.Next)
	}
	end := p.Total // where the page's examined items end
	if p.Next >= 0 {
		end = p.Next
	}
	var page string
	switch {
	case e.page.Offset >= p.Total || (len(p.Items) == 0 && !filtered(e.page)):
		e.printf("(no %s items at offset %d; %s in all)\n", state, e.page.Offset, num(p.Total))
		return nil
	case filtered(e.page):
		page = fmt.Sprintf("%s among %s items %s-%s of %s", matched(len(p.Items), state, e.page), state, num(e.page.Offset+1), num(end), num(p.Total))
	default:
		page = fmt.Sprintf("%s-%s of %s %s", num(e.page.Offset+1), num(e.page.Offset+int64(len(p.Items))), num(p.Total), state)
	}
	summary(e, page, next, cut)
	return nil
}

// checkKind returns the usage error of an empty -kind, or nil.
func checkKind(kind string) error {
	if kind == "" {
		return usageErr("-kind is empty: give a kind as list prints it (items with no kind cannot be picked by kind)")
	}
	return nil
}

// filtered: the page keeps only some of the items it examines (-reason,
// -kind).
func filtered(o redisq.ListOptions) bool { return o.Reason != "" || o.Kind != "" }

// matched says which items a filtered page kept: `3 dead items died of
// "smtp 550"`, `no scheduled item of kind "refund"`, `1 dead item of kind
// "refund" died of "smtp 550"`.
func matched(n int, state redisq.State, o redisq.ListOptions) string {
	if o.Kind == "" {
		return diedOf(n, o.Reason)
	}
	what := counted(int64(n), state.String()+" item")
	if n == 0 {
		what = "no " + state.String() + " item"
	}
	what += " of kind " + quote(o.Kind)
	if o.Reason != "" {
		what += " died of " + quote(o.Reason)
	}
	return what
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
	pg, err := p.List(e.ctx, state, redisq.PartitionedListOptions{Cursor: cur, Limit: e.page.Limit, Reverse: e.page.Reverse, Payloads: e.page.Payloads,
		Reason: e.page.Reason, Kind: e.page.Kind})
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
	end := pg.Total // where the page's examined items end
	if pg.Next != nil {
		end = 0
		for _, o := range pg.Next {
			end += o
		}
	}
	parts := plural(int64(p.NumPartitions()), "partition")
	var page, next string
	switch {
	case before >= pg.Total || (len(pg.Items) == 0 && !filtered(e.page)):
		e.printf("(no %s items at cursor %s; %s in all)\n", state, formatCursor(cur, p.NumPartitions()), num(pg.Total))
		return nil
	case filtered(e.page):
		page = fmt.Sprintf("%s among %s items %s-%s of %s in %s", matched(len(pg.Items), state, e.page), state, num(before+1), num(end), num(pg.Total), parts)
	default:
		page = fmt.Sprintf("%s-%s of %s %s in %s", num(before+1), num(before+int64(len(pg.Items))), num(pg.Total), state, parts)
	}
	if pg.Next != nil {
		next = "next page: -cursor " + formatCursor(pg.Next, 0)
	}
	summary(e, page, next, cut)
	return nil
}

func cmdShow(e *env) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
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
	keyw := 0 // the width of the first column, for the result's line
	row := func(k, format string, a ...any) {
		keyw = max(keyw, utf8.RuneCountInString(k))
		fmt.Fprintf(tw, "%s\t", k)
		fmt.Fprintf(tw, format+"\n", a...)
	}
	row("id", "%s", quote(it.ID))
	lines := 6
	if part >= 0 {
		row("partition", "%s", partitionName(t.p, part))
		lines++
	}
	row("state", "%s", it.State)
	if it.Kind != "" {
		row("kind", "%s", cell(it.Kind))
		lines++
	}
	row("due", "%s", stamp(it.Due))
	if !it.RateSlot.IsZero() {
		row("waits", "for a slot of its limit key's rate limit, until %s", stamp(it.RateSlot))
		lines++
	}
	if it.WaitsForPlace {
		row("waits", "for a place under its limit key's concurrency limit: due when one frees")
		lines++
	}
	row("attempts", "%d", it.Attempts)
	row("enqueued", "%s", stamp(it.Enqueued))
	if it.State == redisq.StateInFlight {
		row("lease ends", "%s", stamp(it.LeaseDeadline))
		row("cancelled", "%v", it.Cancelled)
		lines += 2
	}
	if it.State == redisq.StateDead {
		row("died", "%s", stamp(it.DiedAt))
		row("reason", "%s", clean(it.DeadReason))
		lines += 2
	}
	if it.State == redisq.StateCompleted {
		row("completed", "%s", stamp(it.CompletedAt))
		row("expires", "%s", stamp(it.Expires))
		lines += 2
	}
	for _, l := range jobLines(it.Job) {
		row(l[0], "%s", l[1])
		lines++
	}
	row("payload", "%s", plural(int64(it.PayloadSize), "byte"))
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
	if it.State == redisq.StateCompleted {
		// The result, escaped and cut as the payload is.
		fmt.Fprintf(e.stdout, "%-*s%s\n", keyw+tableGap, "result", plural(int64(it.ResultSize), "byte"))
		if it.ResultSize > 0 || len(it.Result) > 0 {
			showPayload(e.stdout, it.Result, lim)
		}
	}
	return nil
}

// jobLines are the lines of show for an item's headers, sorted by name,
// one a line (`tenant: acme`), and for the options of its own that are
// set: each a name and its value.
func jobLines(j redisq.Job) [][2]string {
	var out [][2]string
	for i, k := range slices.Sorted(maps.Keys(j.Headers)) {
		name := ""
		if i == 0 {
			name = "headers"
		}
		out = append(out, [2]string{name, headerName(k) + ": " + cell(j.Headers[k])})
	}
	switch {
	case j.MaxAttempts > 0:
		out = append(out, [2]string{"max attempts", strconv.Itoa(j.MaxAttempts)})
	case j.MaxAttempts < 0:
		out = append(out, [2]string{"max attempts", "no limit"})
	}
	if j.BackoffBase > 0 {
		out = append(out, [2]string{"backoff", fmt.Sprintf("%v, doubling up to %v", j.BackoffBase, j.BackoffMax)})
	}
	if j.Timeout > 0 {
		out = append(out, [2]string{"timeout", j.Timeout.String() + " a run"})
	}
	if !j.NotAfter.IsZero() {
		out = append(out, [2]string{"not after", stamp(j.NotAfter)})
	}
	if j.Retention > 0 {
		out = append(out, [2]string{"retention", j.Retention.String() + " once acked"})
	}
	if j.UniqueKey != "" {
		what := "unique for"
		if j.Debounce {
			what = "debounced over"
		}
		out = append(out, [2]string{"unique key", fmt.Sprintf("%s, %s %v (dqctl unique shows the window)", quote(j.UniqueKey), what, j.UniqueFor)})
	}
	if j.LimitKey != "" {
		out = append(out, [2]string{"limit key", quote(j.LimitKey) + " (dqctl limits shows its rate limit)"})
	}
	return out
}

// headerName is a header's name in show: as cell has it, and quoted when
// it holds the ": " that ends it.
func headerName(k string) string {
	if strings.Contains(k, ":") {
		return quote(k)
	}
	return cell(k)
}

// getPartitioned finds item id of p: Get on the partition of the id, else
// the partitions Locate finds (an item enqueued under an ordering key);
// when several hold it, the first, saying so on stderr.
func getPartitioned(e *env, p *redisq.Partitioned, id string) (redisq.Item, int, error) {
	it, err := p.Partition(p.PartitionOf(id)).Get(e.ctx, id)
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
