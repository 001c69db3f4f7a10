package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
)

// The views of issue 24, item 15, in Chromium: who holds the work.

// absVisible is a script that reports the first time element shown on
// the page whose absolute time is not shown beside it (its next sibling,
// span.abs, with the time of its title, laid out), or "".
const absVisible = `(() => {
  for (const t of document.querySelectorAll('time')) {
    if (t.getClientRects().length === 0) continue; // in a column the phone leaves out
    const a = t.nextElementSibling;
    if (!a || !a.classList.contains('abs') || a.textContent !== t.title || a.getClientRects().length === 0) return t.outerHTML;
  }
  return "";
})()`

// TestBrowserWorkers: a queue with due items and no live worker says so in
// red above its tabs, with or without the script; with a worker (a
// hostile name, shown escaped) the warning goes, the Workers tab lists it
// with its leases (each opens its item), every time with its absolute time
// beside it, and the in-flight tab's holder links to its row.
func TestBrowserWorkers(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	b := newTab(t, 1280, 900)
	for _, script := range []bool{true, false} {
		if !script {
			if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
				t.Fatal(err)
			}
		}
		b.open(f.QueueURL("orders"))
		if got := b.text("#noworker strong"); !strings.HasPrefix(got, "No live worker: 3 items are due") {
			t.Errorf("script %v: the warning says %q", script, got)
		}
		if c := eval[string](b, `getComputedStyle(document.querySelector('#noworker')).color`); c != "rgb(198, 40, 40)" {
			t.Errorf("script %v: the warning is %s, not red", script, c)
		}
		if got := b.text(`nav.tabs a[data-state="workers"] .count`); got != "0" {
			t.Errorf("script %v: Workers tab count %q", script, got)
		}
		b.open(f.Base)
		if got := b.text(`tr[data-queue="orders"] .badge.noworker`); got != "no live worker" {
			t.Errorf("script %v: the overview's badge %q", script, got)
		}
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false}); err != nil {
		t.Fatal(err)
	}

	w, _ := webtest.StartWorker(t, f.Q, webtest.HostileWorker, 2, 2)
	b.open(f.QueueURL("orders"))
	if n := eval[int](b, `document.querySelectorAll('#noworker').length`); n != 0 {
		t.Error("warned with a live worker")
	}
	b.run(chromedp.Click(chromedp.CSS(`nav.tabs a[data-state="workers"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`section#workers`)))
	b.noRawText("workers tab")
	if got := b.text(`article.worker .head .name`); got != `"wk\u202eevil\x1b\xff"` {
		t.Errorf("the worker's name shown as %q", got)
	}
	if got := b.text(`article.worker [data-k="running"]`); got != "handlers 2 of 2 running" {
		t.Errorf("running: %q", got)
	}
	if m := eval[string](b, absVisible); m != "" {
		t.Errorf("a time without its absolute time shown: %s", m)
	}
	if n := eval[int](b, `document.querySelectorAll('script').length`); n != 1 {
		t.Errorf("%d scripts: a worker's name ran", n)
	}
	leases := eval[[]string](b, `Array.from(document.querySelectorAll('article.worker tr[data-lease] a')).map(a => a.textContent)`)
	if fmt.Sprint(leases) != fmt.Sprint([]string{w.Leases[0].ID, w.Leases[1].ID}) {
		t.Errorf("leases %q, want %s and %s", leases, w.Leases[0].ID, w.Leases[1].ID)
	}
	b.run(chromedp.Click(chromedp.CSS(`article.worker tr[data-lease] a`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`dl.fields`)))
	if got := b.text("h1 .name"); got != w.Leases[0].ID || b.text(`dd[data-k="state"]`) != "inflight" {
		t.Errorf("the lease opened %q", got)
	}

	// The in-flight tab: the holder's link opens its row.
	b.open(f.TabURL("orders", "inflight"))
	b.noRawText("in-flight tab")
	if got := b.text(`tr[data-id="charge:1"] td.holder`); got != "–" {
		t.Errorf("charge:1 (taken by Take) held by %q", got)
	}
	b.run(chromedp.Click(chromedp.CSS(`tr[data-id="` + w.Leases[1].ID + `"] td.holder a`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`section#workers`)))
	if got := eval[string](b, `document.querySelector('article.worker:target') ? document.querySelector('article.worker:target').dataset.worker : ""`); got != `"wk\u202eevil\x1b\xff"` {
		t.Errorf("the holder's link opened %q, not its worker's row", got)
	}

	// On a phone: nothing wider than the screen, the absolute times shown.
	b.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.open(f.TabURL("orders", "workers"))
	if over := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("the Workers tab is %d px wider than the phone", over)
	}
	if m := eval[string](b, absVisible); m != "" {
		t.Errorf("phone: a time without its absolute time shown: %s", m)
	}
}

// TestBrowserRunNow (issue 24, items 1 and 11): Run now on an overdue item
// leaves it in its place; on a recurring occurrence the item page says,
// by the button, that it adds an extra run and keeps the scheduled one,
// and it does: the Recurring tab then shows the occurrence as next and
// the extra run as last, with their absolute times; an orphaned
// registration is marked there.
func TestBrowserRunNow(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	regs := webtest.RegisterAll(t, f)
	ctx := context.Background()
	d := regs["daily"]
	b := newTab(t, 1280, 900)
	before := webtest.ScheduledOrder(t, f.Q)

	b.open(f.ItemURL("orders", "late:2"))
	if got := b.text("#runnow-note"); got != "It is due already: Run now leaves it in its place, ahead of the items due after it." {
		t.Errorf("the note of an overdue item: %q", got)
	}
	b.click(`button[data-op="run-now"]`, true)
	if got := b.text("p.result"); !strings.Contains(got, `Item "late:2" of queue "orders" was already due: left in its place`) {
		t.Errorf("result %q", got)
	}
	if after := webtest.ScheduledOrder(t, f.Q); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the order changed:\n got %v\nwant %v", after, before)
	}

	b.open(f.ItemURL("orders", d.EnqueuedID))
	at := d.Next.UTC().Format("2006-01-02 15:04:05.000 UTC")
	if got := b.text("#runnow-note"); got != `An occurrence of recurring "daily", at `+at+`: Run now enqueues an extra run of it, due now, and keeps this occurrence at its time, so the schedule's run still happens.` {
		t.Errorf("the note by the button: %q", got)
	}
	if !eval[bool](b, `(() => { const n = document.querySelector('#runnow-note').getBoundingClientRect(), a = document.querySelector('button[data-op="run-now"]').getBoundingClientRect(); return n.width > 0 && Math.abs(n.top - a.bottom) < 80 })()`) {
		t.Error("the note is not shown by the button")
	}
	b.click(`button[data-op="run-now"]`, true)
	got := b.text("p.result")
	if !strings.HasPrefix(got, `Extra run "rec:daily@`) || !strings.HasSuffix(got, `due now; the scheduled run "`+d.EnqueuedID+`" at `+at+` stays.`) {
		t.Errorf("result %q", got)
	}
	log := b.dialogLog()
	if q := log[len(log)-1]; !strings.Contains(q, `It is an occurrence of recurring "daily": while it waits for its time (`+at+`), an extra run is enqueued, due now, and it stays`) {
		t.Errorf("the dialog asked %q", q)
	}
	if it, err := f.Q.Get(ctx, d.EnqueuedID); err != nil || !it.Due.Equal(d.Next) {
		t.Fatalf("the occurrence after Run now: %+v %v", it, err)
	}
	g, _ := f.Q.Registration(ctx, "daily")

	// Orphaned: "hourly" unseen for 10 minutes.
	now, _ := f.C.Time(ctx).Result()
	if err := f.C.HSet(ctx, "{dq:orders}:rec:hourly", "sn", now.Add(-10*60e9).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	b.open(f.TabURL("orders", "recurring"))
	if got := b.text(`tr[data-reg="daily"] td.next .abs`); got != at {
		t.Errorf("daily's next %q, want %q (the occurrence kept)", got, at)
	}
	if got := b.text(`tr[data-reg="daily"] td.opt .abs`); got != g.Last.UTC().Format("2006-01-02 15:04:05.000 UTC") {
		t.Errorf("daily's last %q, want the extra run's %v", got, g.Last)
	}
	if got := b.text(`tr[data-reg="hourly"] .badge.orphaned`); got != "orphaned" {
		t.Errorf("hourly's badge %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.badge.orphaned').length`); n != 1 {
		t.Errorf("%d orphaned badges, want 1", n)
	}
	if got := b.text("#orphaned"); !strings.HasPrefix(got, "1 registration orphaned: no live code registers it") || !strings.HasSuffix(got, "Unregister it once its code is gone.") {
		t.Errorf("the orphaned note: %q", got)
	}
	if m := eval[string](b, absVisible); m != "" {
		t.Errorf("a time without its absolute time shown: %s", m)
	}
	b.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.open(f.TabURL("orders", "recurring"))
	if got := b.text(`tr[data-reg="hourly"] .badge.orphaned`); got != "orphaned" {
		t.Errorf("phone: hourly's badge %q", got)
	}
	if m := eval[string](b, absVisible); m != "" {
		t.Errorf("phone: a time without its absolute time shown: %s", m)
	}
}
