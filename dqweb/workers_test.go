package dqweb_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// Who holds the work (issue 24, item 15): the Workers tab, the holder of
// each lease on the in-flight tab, and "no live worker" on a queue whose
// items are due while no Worker beats.

// overviewRowOf is the overview's row of queue name (as shown).
func overviewRowOf(t *testing.T, body, name string) string {
	t.Helper()
	return section(t, body, `data-queue="`+html.EscapeString(name)+`"`, "</tr>")
}

// TestNoLiveWorker: a queue with due items and no live worker says so
// above its tabs, in red on its Workers tab and on its overview row ("all
// workers dead", told from a big backlog); a queue with nothing due, or
// with a live worker, does not.
func TestNoLiveWorker(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	qp := get(t, c, f.QueueURL("orders")).body
	warn := section(t, qp, `<p class="warning" id="noworker"`, "</p>")
	if !strings.Contains(warn, "No live worker: 3 items are due (the oldest for 2m") || !strings.Contains(warn, "every worker may be down") ||
		!strings.Contains(warn, `<a href="/dq/queue?q=orders&amp;state=workers">Workers</a>`) {
		t.Errorf("the warning:\n%s", warn)
	}
	nav := section(t, qp, `<nav class="tabs"`, "</nav>")
	if !regexp.MustCompile(`data-state="workers" title="No live worker: 3 items are due[^"]*">Workers <span class="count dead" data-count="0">0</span>`).MatchString(nav) {
		t.Errorf("the Workers tab is not red with the warning:\n%s", nav)
	}
	for _, tab := range []string{"scheduled", "dead", "workers"} {
		if body := get(t, c, f.TabURL("orders", tab)).body; !strings.Contains(body, `id="noworker"`) {
			t.Errorf("the %s tab lacks the warning", tab)
		}
	}
	ov := get(t, c, f.Base).body
	if row := overviewRowOf(t, ov, "orders"); !strings.Contains(row, `<span class="badge noworker" title="No live worker: 3 items are due`) || !strings.Contains(row, ">no live worker</span>") {
		t.Errorf("the overview's row lacks the badge:\n%s", row)
	}
	if strings.Contains(overviewRowOf(t, ov, "emails"), "noworker") || strings.Contains(get(t, c, f.QueueURL("emails")).body, `id="noworker"`) {
		t.Error("a queue with nothing due is marked")
	}

	// One live worker, busy with one of the 3: two are due, and it is no
	// outage.
	_, stop := webtest.StartWorker(t, f.Q, "billing-1", 1, 1)
	qp = get(t, c, f.QueueURL("orders")).body
	if count(t, qp, "due") != "2" || strings.Contains(qp, `id="noworker"`) ||
		!strings.Contains(section(t, qp, `<nav class="tabs"`, "</nav>"), `data-state="workers">Workers <span class="count" data-count="1">1</span>`) {
		t.Errorf("with a live worker: due %s, warned or the tab's count is not 1:\n%s", count(t, qp, "due"), section(t, qp, `<nav class="tabs"`, "</nav>"))
	}
	if row := overviewRowOf(t, get(t, c, f.Base).body, "orders"); strings.Contains(row, "noworker") {
		t.Errorf("the overview marks a queue with a live worker:\n%s", row)
	}
	// It stops: it leaves the list at once, its item is released, and the
	// warning is back.
	stop()
	if qp = get(t, c, f.QueueURL("orders")).body; !strings.Contains(qp, "No live worker: 3 items are due") {
		t.Errorf("after the worker stopped: %s", section(t, qp, `<nav class="tabs"`, "</nav>"))
	}
}

// TestWorkersTab: the Workers tab lists each live worker (name, host,
// pid, started, last beat, running/concurrency, held) with the leases its
// handlers run, each linking to its item, with its claim time and attempt;
// the in-flight tab names the holder of each lease a heartbeat lists, and
// links to its row. A hostile worker name is shown escaped.
func TestWorkersTab(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	w, _ := webtest.StartWorker(t, f.Q, webtest.HostileWorker, 2, 2)
	held := []string{w.Leases[0].ID, w.Leases[1].ID}
	r := get(t, c, f.TabURL("orders", "workers"))
	checkPage(t, "workers tab", r, 200<<10)
	tab := section(t, r.body, `<section id="workers"`, "</section>")
	host, _ := os.Hostname()
	anchor := fmt.Sprintf("w-%x-%x", "orders", w.ID)
	for _, want := range []string{
		`<article class="worker" id="` + anchor + `" data-worker="` + html.EscapeString(`"wk\u202eevil\x1b\xff"`) + `">`,
		`<span class="name">` + html.EscapeString(`"wk\u202eevil\x1b\xff"`) + `</span> <span class="muted">on ` + html.EscapeString(dqweb.Shown(host)) + fmt.Sprintf(", pid %d</span>", os.Getpid()),
		`<li data-k="running"><span class="k">handlers</span> 2 of 2 running</li>`,
		`<span class="k">last beat</span> <time datetime="` + w.Beat.UTC().Format(time.RFC3339Nano)[:10],
		`<span class="k">started</span> <time datetime="` + w.Started.UTC().Format(time.RFC3339Nano) + `" title="` + w.Started.UTC().Format("2006-01-02 15:04:05.000 UTC") + `">`,
		`<span class="abs">` + w.Started.UTC().Format("2006-01-02 15:04:05.000 UTC") + `</span>`,
		`<span class="name">` + w.ID + `</span>`,
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("the Workers tab lacks %s\n%s", want, tab)
		}
	}
	for _, l := range w.Leases {
		row := section(t, tab, `<tr data-lease="`+l.ID+`">`, "</tr>")
		if !strings.Contains(row, `<a href="`+html.EscapeString(strings.TrimPrefix(f.ItemURL("orders", l.ID), f.Srv.URL))+`">`+l.ID+`</a>`) ||
			!strings.Contains(row, `<span class="abs">`+l.Claimed.UTC().Format("2006-01-02 15:04:05.000 UTC")+`</span>`) || !strings.Contains(row, `<td class="n">1</td>`) {
			t.Errorf("lease %s: %s", l.ID, row)
		}
	}
	// The in-flight tab: the worker's leases name it, the fixture's own
	// leases (taken by Take, no heartbeat) name none.
	inflight := get(t, c, f.TabURL("orders", "inflight"))
	checkPage(t, "in-flight tab", inflight, 200<<10)
	link := `<td class="holder"><a href="/dq/queue?q=orders&amp;state=workers#` + anchor + `">` + html.EscapeString(`"wk\u202eevil\x1b\xff"`) + `</a></td>`
	for _, id := range held {
		if row := section(t, inflight.body, `<tr data-id="`+id+`">`, "</tr>"); !strings.Contains(row, link) {
			t.Errorf("in-flight %s does not name its holder:\n%s", id, row)
		}
	}
	for _, id := range webtest.InFlightIDs {
		if row := section(t, inflight.body, `<tr data-id="`+id+`">`, "</tr>"); !strings.Contains(row, `<td class="holder"><span class="muted">–</span></td>`) {
			t.Errorf("in-flight %s names a holder:\n%s", id, row)
		}
	}
	// Read-only, the same.
	ro := serve(t, f.C, dqweb.Options{ReadOnly: true})
	if r := get(t, client(t), ro+"queue?q=orders&state=workers"); r.status != http.StatusOK || !strings.Contains(r.body, `id="`+anchor+`"`) {
		t.Errorf("read-only Workers tab: %d", r.status)
	}
}

// cmdHook counts every command sent.
type cmdHook struct{ n *atomic.Int64 }

func (cmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h cmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h cmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestHoldersCostNoReadPerRow: the in-flight tab names the holders of its
// leases from the heartbeats it reads once for the page: as many commands
// for a page of 50 in-flight items, 3 of them held by a worker, as for 5.
func TestHoldersCostNoReadPerRow(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	w, _ := webtest.StartWorker(t, f.Q, "billing-1", 3, 3)
	hooked := redis.NewClient(f.C.Options())
	t.Cleanup(func() { _ = hooked.Close() })
	h := cmdHook{new(atomic.Int64)}
	hooked.AddHook(h)
	base := serve(t, hooked, dqweb.Options{})
	c := client(t)
	page := func() (int64, string) {
		t.Helper()
		h.n.Store(0)
		r := get(t, c, base+"queue?q=orders&state=inflight")
		if r.status != http.StatusOK {
			t.Fatalf("in-flight tab: %d", r.status)
		}
		return h.n.Load(), r.body
	}
	page() // the first loads the scripts
	few, body := page()
	for _, l := range w.Leases {
		if !strings.Contains(section(t, body, `<tr data-id="`+l.ID+`">`, "</tr>"), ">billing-1</a>") {
			t.Errorf("%s does not name its holder", l.ID)
		}
	}
	for i := range 45 {
		if _, err := f.Q.EnqueueAfter(ctx, fmt.Sprint("more:", i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	var ms []*redisq.Message
	for len(ms) < 45 {
		m, err := f.Q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	many, body := page()
	if n := strings.Count(body, `<td class="holder">`); n != 50 {
		t.Fatalf("%d rows on the in-flight tab, want 50", n)
	}
	if many != few {
		t.Errorf("the in-flight tab sent %d commands for 50 rows, %d for 5: a read per row", many, few)
	}
}

// TestPartitionedWorkers: a partitioned queue's Workers tab lists the
// workers of every partition with their partition; its partitions table
// counts each one's workers, red where items are due and none is live;
// the warning names the partitions with due items and no worker.
func TestPartitionedWorkers(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	ctx := context.Background()
	c := client(t)
	// Two due items on each partition.
	var due [3]int
	for k := 0; due[0]+due[1]+due[2] < 6; k++ {
		id := fmt.Sprint("due:", k)
		if i := f.p.PartitionOf(id); due[i] < 2 {
			if err := f.p.Enqueue(ctx, id, nil, time.Unix(1, 0)); err != nil {
				t.Fatal(err)
			}
			due[i]++
		}
	}
	w, _ := webtest.StartWorker(t, f.p.Partition(1), "part-1", 1, 1)
	r := get(t, c, f.QueueURL(pname))
	checkPage(t, "partitioned queue page", r, 300<<10)
	if warn := section(t, r.body, `id="noworker"`, "</p>"); !strings.Contains(warn, "No live worker on 2 partitions with due items (0, 2; 4 items are due)") {
		t.Errorf("the warning: %s", warn)
	}
	parts := section(t, r.body, `<section id="partitions">`, "</section>")
	for i, want := range []string{`<td class="n dead" data-k="workers">0</td>`, `<td class="n" data-k="workers">1</td>`, `<td class="n dead" data-k="workers">0</td>`} {
		if row := section(t, parts, fmt.Sprintf(`<tr data-part="%d"`, i), "</tr>"); !strings.Contains(row, want) {
			t.Errorf("partition %d: %s", i, row)
		}
	}
	tab := get(t, c, f.TabURL(pname, "workers")).body
	p1 := f.p.Partition(1).Name()
	if a := section(t, tab, `<article class="worker"`, "</article>"); !strings.Contains(a, `data-worker="part-1"`) ||
		!strings.Contains(a, `partition <a href="`+html.EscapeString(strings.TrimPrefix(f.TabURL(p1, "workers"), f.Srv.URL))+`" title="`+p1+`">1</a>`) ||
		!strings.Contains(a, `<a href="`+html.EscapeString(strings.TrimPrefix(f.ItemURL(p1, w.Leases[0].ID), f.Srv.URL))+`">`) {
		t.Errorf("the worker of partition 1:\n%s", a)
	}
	// The merged in-flight tab names the holder of its lease.
	if row := section(t, get(t, c, f.TabURL(pname, "inflight")).body, `<tr data-id="`+w.Leases[0].ID+`">`, "</tr>"); !strings.Contains(row, ">part-1</a>") {
		t.Errorf("the in-flight row of %s: %s", w.Leases[0].ID, row)
	}
	if row := overviewRowOf(t, get(t, c, f.Base).body, pname); !strings.Contains(row, ">no live worker on 2/3 partitions</span>") {
		t.Errorf("the overview's row: %s", row)
	}
}
