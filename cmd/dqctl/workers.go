package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// Who holds the work: workers lists the live Workers of a queue from
// their heartbeats (redisq Queue.Workers), with the messages their
// handlers run, so that a big backlog can be told from "every worker is
// dead".

// leasesShown is how many leases of each worker workers prints unless
// -full.
const leasesShown = 10

// beatNote says what the list can show.
const beatNote = "(Every Worker writes a heartbeat, every 5s by default, and leaves this list when it stops, or 3 beats after its last " +
	"if it died; a consumer calling Take itself writes none.)"

// workerJSON is a worker in workers -json: redisq's WorkerInfo, with the
// partition it works on for a partitioned queue.
type workerJSON struct {
	redisq.WorkerInfo
	Partition *int `json:"partition,omitempty"`
}

func cmdWorkers(e *env) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	// The heartbeats before the stats: every beat is before the stats'
	// Redis TIME, against which they are shown.
	ws, err := t.Workers(e.ctx)
	if err != nil && !e.partitionedEmpty(err) {
		return err
	}
	st, err := t.Stats(e.ctx)
	if err != nil && !e.partitionedEmpty(err) {
		return err
	}
	part := map[string]int{} // a partition's queue name: its number
	if t.p != nil {
		for i := range t.p.NumPartitions() {
			part[t.p.Partition(i).Name()] = i
		}
	}
	if e.json {
		out := struct {
			Queue                string       `json:"queue"`
			Now                  time.Time    `json:"now"`
			Paused               bool         `json:"paused"`
			Due                  int64        `json:"due"`
			OldestOverdueSeconds float64      `json:"oldest_overdue_seconds"`
			InFlight             int64        `json:"inflight"`
			Workers              []workerJSON `json:"workers"`
		}{t.Name(), st.Now, st.Paused, st.DueBacklog, st.OldestOverdue.Seconds(), st.InFlight, []workerJSON{}}
		for _, w := range ws {
			j := workerJSON{WorkerInfo: w}
			if i, ok := part[w.Queue]; ok {
				j.Partition = &i
			}
			out.Workers = append(out.Workers, j)
		}
		return writeJSON(e.stdout, out)
	}
	e.printf("%s on %s at %s (Redis TIME)\n", t.label(), e.conn.where(), stamp(st.Now))
	if st.Paused {
		e.printf("  PAUSED: workers take nothing until the queue is resumed (dqctl resume)\n")
	}
	if len(ws) == 0 {
		if st.DueBacklog > 0 {
			e.printf("NO LIVE WORKER: %s due, oldest overdue %v, and no live worker\n", counted(st.DueBacklog, "item"), roundDur(st.OldestOverdue))
		} else {
			e.printf("no live worker (nothing is due)\n")
		}
		if st.InFlight > 0 {
			e.printf("%s", wrap("", "", strings.Fields(counted(st.InFlight, "item")+" in flight, held by no live worker: by consumers calling Take, "+
				"or by a process that died (its leases end, then the items are retried)"), ""))
		}
		e.printf("%s", wrap("", "", strings.Fields(beatNote), ""))
		return nil
	}
	head := []string{"NAME", "HOST", "PID", "STARTED", "LAST BEAT", "RUNNING", "HELD"}
	if t.p != nil {
		head = append([]string{head[0], "PARTITION"}, head[1:]...)
	}
	rows := [][]string{head}
	var running, slots, held int64
	for _, w := range ws {
		r := []string{cell(w.Name), cell(w.Host), strconv.Itoa(w.PID), when(w.Started, st.Now), rel(w.Beat, st.Now),
			fmt.Sprintf("%d/%d", w.Running, w.Concurrency), strconv.Itoa(w.Held)}
		if t.p != nil {
			r = append([]string{r[0], strconv.Itoa(part[w.Queue])}, r[1:]...)
		}
		rows = append(rows, r)
		running, slots, held = running+int64(w.Running), slots+int64(w.Concurrency), held+int64(w.Held)
	}
	if err := writeTable(e.stdout, rows); err != nil {
		return err
	}
	e.printf("%s: %s of %s running, %s held", counted(int64(len(ws)), "live worker"), num(running), counted(slots, "handler"), num(held))
	e.printf("; in flight %s, due %s", num(st.InFlight), num(st.DueBacklog))
	if st.DueBacklog > 0 {
		e.printf(" (oldest overdue %v)", roundDur(st.OldestOverdue))
	}
	e.printf("\n")
	for _, w := range ws {
		if err := printLeases(e, w, st.Now, t.p != nil); err != nil {
			return err
		}
	}
	return nil
}

// printLeases prints the messages the handlers of w run, as of its last
// beat: the first leasesShown unless -full, then how many more.
func printLeases(e *env, w redisq.WorkerInfo, now time.Time, partitioned bool) error {
	if len(w.Leases) == 0 && w.MoreLeases == 0 {
		return nil
	}
	in := ""
	if partitioned {
		in = " on " + quote(w.Queue)
	}
	e.printf("\n%s (host %s, pid %d, worker %s%s) runs:\n", cell(w.Name), cell(w.Host), w.PID, cell(w.ID), in)
	shown := w.Leases
	if !e.full && len(shown) > leasesShown {
		shown = shown[:leasesShown]
	}
	rows := [][]string{{"  ID", "CLAIMED", "ATTEMPT"}}
	for _, l := range shown {
		rows = append(rows, []string{"  " + cell(l.ID), when(l.Claimed, now), strconv.Itoa(l.Attempt)})
	}
	if err := writeTable(e.stdout, rows); err != nil {
		return err
	}
	cut, more := len(w.Leases)-len(shown), w.MoreLeases
	switch {
	case cut > 0 && more > 0:
		e.printf("  and %s more (-full: %s of them; its heartbeat had no room for the other %s)\n", num(int64(cut+more)), num(int64(cut)), num(int64(more)))
	case cut > 0:
		e.printf("  and %s more (-full: all)\n", num(int64(cut)))
	case more > 0:
		e.printf("  and %s more (its heartbeat had no room for them)\n", num(int64(more)))
	}
	return nil
}
