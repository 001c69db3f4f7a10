package dqweb

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// Who holds the work: every running redisq Worker writes a heartbeat
// (redisq Queue.Workers) with the messages its handlers run. The queue
// page's Workers tab (state=workers) lists the live workers of the queue
// (of every partition, for a partitioned queue, each with its partition):
// name, host, pid, started, last beat, running/concurrency, held, and the
// leases their handlers run (each id linking to its item, with its claim
// time and attempt). The in-flight tab names the holder of each lease the
// heartbeats list. A queue with due items and no live worker is the "every
// worker is down" signal: the page says so above its tabs, the tab's
// count is red, and the overview marks the row.
//
// Every view of a queue's page reads its workers (Queue.Workers: one
// script for the live ids, then one per 100 workers, each heartbeat at
// most 16 KiB of lease list; Partitioned.Workers does that on every
// partition), for the tab's count and the warning; the overview reads them
// only for the rows with due items. A failure to read them is the tab's
// count "?" saying why, and the error page on the Workers tab.

// workersTab is the value of the state parameter of the Workers tab.
const workersTab = "workers"

// leasesShown is how many leases of one worker the Workers tab lists; the
// rest are counted. The in-flight tab names the holder of every lease a
// heartbeat lists.
const leasesShown = 20

// workerRow is a live worker as the Workers tab shows it.
type workerRow struct {
	Anchor                 string // its row's id, for links from the in-flight tab
	NameShown, HostShown   string
	IDShown                string
	PID                    int
	Started, Beat, Expires when
	Concurrency, Running   int
	Held                   int
	Leases                 []leaseRow
	// MoreLeases counts the leases not listed: those its heartbeat had no
	// room for and those past leasesShown.
	MoreLeases int
	// Of a partitioned queue: the worker's partition, its name as shown
	// and its page's Workers tab ("" when too long to open). Part is -1
	// when the worker's queue is no partition of it (never, but data).
	HasPart            bool
	Part               int
	PartShown, PartURL string
}

// leaseRow is one message a worker's handler runs.
type leaseRow struct {
	IDShown, URL string
	Long         bool
	Claimed      when
	Attempt      int
}

// holder is the worker that runs an in-flight item, as its row names it.
type holder struct {
	NameShown, URL string
}

// holderKey is an item of a queue (a partition's name, for a partitioned
// queue).
type holderKey struct{ queue, id string }

// workerAnchor is the id of the Workers tab's row of worker w.
func workerAnchor(w redisq.WorkerInfo) string {
	return "w-" + hex.EncodeToString([]byte(w.Queue)) + "-" + hex.EncodeToString([]byte(w.ID))
}

// workersURL is the Workers tab of queue name.
func (h *handler) workersURL(name string) string {
	u := h.queueURL(name)
	if u != "" {
		u += "&state=" + workersTab
	}
	return u
}

// holders maps every lease the heartbeats ws list to its worker, whose
// row is on the Workers tab of queue name.
func (h *handler) holders(name string, ws []redisq.WorkerInfo) map[holderKey]holder {
	m := map[holderKey]holder{}
	tab := h.workersURL(name)
	for _, w := range ws {
		hd := holder{NameShown: shown(w.Name)}
		if tab != "" {
			hd.URL = tab + "#" + workerAnchor(w)
		}
		for _, l := range w.Leases {
			m[holderKey{w.Queue, l.ID}] = hd
		}
	}
	return m
}

// noWorker is the warning of a queue whose items are due while no worker
// is live ("" when some is, or nothing is due): the figures st, and for a
// partitioned queue its partitions' parts. ws are its live workers.
func noWorker(st redisq.Stats, parts []partRow, ws []redisq.WorkerInfo) (warning, badge string) {
	if st.DueBacklog == 0 {
		return "", ""
	}
	why := "no Worker of redisq has a live heartbeat on it (a Worker beats every 5 s by default and drops off three beats after its last): " +
		"every worker may be down. Consumers that call Take themselves, and Workers of redisq versions before the heartbeat, send none."
	if parts == nil {
		if len(ws) > 0 {
			return "", ""
		}
		return fmt.Sprintf("No live worker: %s due (the oldest for %s) and %s", itemsAre(st.DueBacklog), approx(st.OldestOverdue), why), "no live worker"
	}
	live := map[string]bool{}
	for _, w := range ws {
		live[w.Queue] = true
	}
	var idle []string
	var due int64
	for _, p := range parts {
		if p.Stats.DueBacklog > 0 && !live[p.Name] {
			idle = append(idle, fmt.Sprint(p.Index))
			due += p.Stats.DueBacklog
		}
	}
	if len(idle) == 0 {
		return "", ""
	}
	list := strings.Join(idle[:min(len(idle), 10)], ", ")
	if len(idle) > 10 {
		list += fmt.Sprintf(" and %d more", len(idle)-10)
	}
	badge = fmt.Sprintf("no live worker on %d/%d partitions", len(idle), len(parts))
	if len(ws) == 0 {
		badge = "no live worker"
	}
	return fmt.Sprintf("No live worker on %s with due items (%s; %s due): %s", count(int64(len(idle)), "partition"), list,
		itemsAre(due), strings.Replace(why, "on it", "on them", 1)), badge
}

// itemsAre is "1 item is", "3,272 items are".
func itemsAre(n int64) string {
	if n == 1 {
		return "1 item is"
	}
	return count(n, "item") + " are"
}

// workerRows formats the workers ws of queue name (parts: the partition
// names of a partitioned queue, nil otherwise) at Redis time now.
func (h *handler) workerRows(name string, ws []redisq.WorkerInfo, parts []string, now time.Time) []workerRow {
	index := map[string]int{}
	for i, pn := range parts {
		index[pn] = i
	}
	var out []workerRow
	for _, w := range ws {
		row := workerRow{Anchor: workerAnchor(w), NameShown: shown(w.Name), HostShown: shown(w.Host), IDShown: shown(w.ID), PID: w.PID,
			Started: at(w.Started, now), Beat: at(w.Beat, now), Expires: at(w.Expires, now),
			Concurrency: w.Concurrency, Running: w.Running, Held: w.Held, MoreLeases: w.MoreLeases}
		itemQueue := name
		if parts != nil {
			k, ok := index[w.Queue]
			row.HasPart, row.Part, row.PartShown = true, -1, shown(w.Queue)
			if ok {
				row.Part, row.PartURL = k, h.workersURL(w.Queue)
			}
			itemQueue = w.Queue
		}
		for i, l := range w.Leases {
			if i == leasesShown {
				row.MoreLeases += len(w.Leases) - i
				break
			}
			lr := leaseRow{IDShown: shown(l.ID), URL: h.itemURL(itemQueue, l.ID), Claimed: at(l.Claimed, now), Attempt: l.Attempt}
			lr.Long = len(lr.IDShown) > longID
			row.Leases = append(row.Leases, lr)
		}
		out = append(out, row)
	}
	return out
}

// workerTabLink is the Workers tab's link: its count, red with the
// warning as its tooltip when items are due and no worker is live, "?"
// when the workers cannot be read.
func (h *handler) workerTabLink(name string, n int, err error, warning string, current bool) tabLink {
	t := tabLink{Label: "Workers", State: workersTab, URL: h.workersURL(name), Count: int64(n), Current: current}
	switch {
	case err != nil:
		_, msg := h.redisStatus(err)
		t.Err = message("the workers cannot be read: " + msg)
	case warning != "":
		t.Alert, t.Title = true, message(warning)
	}
	return t
}

// workersList fills in the Workers tab: a page of PageSize workers.
func (h *handler) workersList(r *http.Request, t *target, ws []redisq.WorkerInfo, d *queueData) {
	var parts []string
	if t.p != nil {
		for i := range t.p.NumPartitions() {
			parts = append(parts, t.p.Partition(i).Name())
		}
	}
	total := int64(len(ws))
	off := offset(r, "offset")
	page := ws[min(off, total):min(off+PageSize, total)]
	d.WorkerRows = h.workerRows(d.Name, page, parts, d.Now)
	d.Pager = h.pager(r, "offset", off, int64(len(page)), total, PageSize)
}

// readWorkers reads the live workers of t.
func readWorkers(ctx context.Context, t *target) ([]redisq.WorkerInfo, error) {
	if t.p != nil {
		return t.p.Workers(ctx)
	}
	return t.q.Workers(ctx)
}
