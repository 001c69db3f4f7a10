package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// The new views of issue 20 in Chromium: tabs, search, selection with
// counts, pause and resume, and the phone width.

// TestBrowserTabsAndSearch: the tabs are links (the URL says the state,
// so it can be bookmarked) with their counts; the search box opens an item
// by id, and says when there is none.
func TestBrowserTabsAndSearch(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	b := newTab(t, 1280, 900)
	b.open(f.QueueURL("orders"))
	for state, n := range map[string]int64{"scheduled": 11, "inflight": 2, "dead": 3} {
		if got := b.text(`nav.tabs a[data-state="` + state + `"] .count`); got != fmt.Sprint(n) {
			t.Errorf("tab %s count %q, want %d", state, got, n)
		}
	}
	b.run(chromedp.Click(chromedp.CSS(`nav.tabs a[data-state="dead"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`section#dead`)))
	if u := eval[string](b, `location.search`); !strings.Contains(u, "state=dead") {
		t.Errorf("the dead tab's URL %q does not say the state", u)
	}
	if got := eval[string](b, `document.querySelector('nav.tabs a[aria-current=page]').dataset.state`); got != "dead" {
		t.Errorf("current tab %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('article.deaditem').length`); n != 3 {
		t.Errorf("%d dead items on the dead tab", n)
	}
	// Opened from a bookmark: the same tab.
	b.open(f.TabURL("orders", "inflight"))
	if got := eval[[]string](b, `Array.from(document.querySelectorAll('section#inflight tr[data-id]')).map(r => r.dataset.id)`); fmt.Sprint(got) != "[charge:1 charge:2]" {
		t.Errorf("in-flight tab lists %v", got)
	}

	// Search: an id in any state opens its page.
	for _, id := range []string{"charge:2", "later:1", "blob:1"} {
		b.open(f.QueueURL("orders"))
		b.run(chromedp.SendKeys(chromedp.CSS(`#find`), id))
		b.run(chromedp.Submit(chromedp.CSS(`#find`)))
		b.run(chromedp.WaitVisible(chromedp.CSS(`dl.fields`)))
		if got := b.text("h1 .name"); got != id {
			t.Errorf("search %q opened %q", id, got)
		}
	}
	b.open(f.QueueURL("orders"))
	b.run(chromedp.SendKeys(chromedp.CSS(`#find`), "nope:1"))
	b.run(chromedp.Submit(chromedp.CSS(`#find`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
	if got := b.text("p.notice"); !strings.Contains(got, `No item "nope:1" in queue "orders", in any state`) {
		t.Errorf("search miss says %q", got)
	}
}

// TestBrowserSelection: on the dead tab, select two items: the page
// counts them, the confirmation says "Requeue 2 dead items of queue
// "orders"?", dismissing it changes nothing, accepting requeues exactly
// those two. "all on this page" selects every item, and a purge asks
// with the state and its count.
func TestBrowserSelection(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	b := newTab(t, 1280, 900)
	b.open(f.TabURL("orders", "dead"))
	requeue := `#sel button[data-op="requeue"]`
	if !eval[bool](b, `document.querySelector('`+requeue+`').disabled`) {
		t.Error("the selection's buttons are enabled with nothing selected")
	}
	b.run(chromedp.Click(chromedp.CSS(`article[data-id="mail:7"] input[type=checkbox]`)))
	b.run(chromedp.Click(chromedp.CSS(`article[data-id="blob:1"] input[type=checkbox]`)))
	if got := b.text("#sel .selected"); got != "2 selected" {
		t.Errorf("selection count %q", got)
	}
	b.click(requeue, false)
	if f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("a dismissed confirmation requeued")
	}
	b.click(requeue, true)
	if got := b.text("p.result"); got != `Requeued 2 dead items of queue "orders": they are due now.` {
		t.Fatalf("result %q", got)
	}
	if f.State(t, "mail:7") != redisq.StateScheduled || f.State(t, "blob:1") != redisq.StateScheduled || f.State(t, webtest.XSSID) != redisq.StateDead {
		t.Fatal("not exactly the selected items were requeued")
	}
	log := b.dialogLog()
	want := `confirm: Requeue 2 dead items of queue "orders"? They become due now, attempts reset.`
	if len(log) != 2 || log[0] != want || log[1] != want {
		t.Errorf("dialogs %q, want twice %q", log, want)
	}

	// All on this page: the scheduled tab's 11, run now.
	b.open(f.TabURL("orders", "scheduled"))
	b.run(chromedp.Click(chromedp.CSS(`#sel input.all`)))
	if got := b.text("#sel .selected"); got != "13 selected" {
		t.Errorf("all on this page: %q", got)
	}
	b.run(chromedp.Click(chromedp.CSS(`#sel input.all`)))
	if got := b.text("#sel .selected"); got != "select items to act on them" {
		t.Errorf("none selected: %q", got)
	}
	// The purge asks with the state and the count.
	b.click(`.whole button[data-op="purge"]`, false)
	if log := b.dialogLog(); log[len(log)-1] != `confirm: Purge 13 scheduled items of queue "orders"? They are deleted; this cannot be undone.` {
		t.Errorf("purge asks %q", log[len(log)-1])
	}
	if st, _ := f.Q.Stats(context.Background()); st.Scheduled != 13 {
		t.Fatalf("a dismissed purge changed the queue: %d scheduled", st.Scheduled)
	}
}

// TestBrowserWithoutJavaScript: with scripts off, the tabs still work
// (they are links), and a selection is confirmed on a page that says how
// many items, then done.
func TestBrowserWithoutJavaScript(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	b := newTab(t, 1280, 900)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.open(f.QueueURL("orders"))
	b.run(chromedp.Click(chromedp.CSS(`nav.tabs a[data-state="dead"]`), chromedp.NodeVisible))
	b.run(chromedp.WaitVisible(chromedp.CSS(`section#dead`)))
	b.run(chromedp.Click(chromedp.CSS(`article[data-id="mail:7"] input[type=checkbox]`)))
	b.run(chromedp.Click(chromedp.CSS(`article[data-id="blob:1"] input[type=checkbox]`)))
	b.run(chromedp.Click(chromedp.CSS(`#sel button[data-op="delete-dead"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`p.question`)))
	if got := b.text("p.question"); got != `Delete 2 dead items of queue "orders"? This cannot be undone.` {
		t.Fatalf("confirmation page asks %q", got)
	}
	if f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("changed before the confirmation")
	}
	b.run(chromedp.Click(chromedp.CSS(`form.confirm button`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`p.result`)))
	if got := b.text("p.result"); got != `Deleted 2 dead items of queue "orders".` {
		t.Fatalf("result %q", got)
	}
	if f.State(t, "mail:7") != 0 || f.State(t, "blob:1") != 0 || f.State(t, webtest.XSSID) != redisq.StateDead {
		t.Fatal("not exactly the selected items were deleted")
	}
}

// TestBrowserPauseResume: Pause asks, then the queue is paused and marked
// on its page and the overview; Resume undoes it.
func TestBrowserPauseResume(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	b := newTab(t, 1280, 900)
	ctx := context.Background()
	b.open(f.QueueURL("orders"))
	b.click(`button[data-op="pause"]`, true)
	if got := b.text("p.result"); got != `Paused queue "orders": consumers take nothing until it is resumed.` {
		t.Fatalf("pause: %q", got)
	}
	if p, err := f.Q.Paused(ctx); err != nil || !p {
		t.Fatalf("not paused: %v", err)
	}
	b.open(f.Base)
	if got := b.text(`tr[data-queue="orders"] .badge.paused`); got != "paused" {
		t.Errorf("overview badge %q", got)
	}
	b.open(f.QueueURL("orders"))
	if got := b.text(`h1 .badge.paused`); got != "paused" {
		t.Errorf("queue page badge %q", got)
	}
	b.click(`button[data-op="resume"]`, true)
	if p, _ := f.Q.Paused(ctx); p {
		t.Fatal("still paused")
	}
	if log := b.dialogLog(); len(log) != 2 || !strings.HasPrefix(log[0], `confirm: Pause queue "orders"?`) || !strings.HasPrefix(log[1], `confirm: Resume queue "orders"?`) {
		t.Errorf("dialogs %q", log)
	}
}

// TestBrowserPhone: at 390 px the overview's essential columns (queue,
// scheduled, due, in flight, dead) fit without a horizontal scroll, and
// ids on a list are not wrapped in mid-id.
func TestBrowserPhone(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	ctx := context.Background()
	// Realistic ids, and counts of six digits' width.
	for i := range 3 {
		if _, err := f.Q.EnqueueAfter(ctx, fmt.Sprintf("invoice:2026-12-01:%06d", i), nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	webtest.Fill(t, f.C, "emails", 250_000)
	b := newTab(t, 390, 844)
	b.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.open(f.Base)
	if w := eval[int](b, `window.innerWidth`); w != 390 {
		t.Fatalf("viewport %d px wide", w)
	}
	fits := `(sel) => Array.from(document.querySelectorAll(sel)).every(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth })`
	for _, k := range []string{"scheduled", "due", "inflight", "dead"} {
		if !eval[bool](b, `(`+fits+`)('table.queues [data-k="`+k+`"]')`) {
			t.Errorf("overview column %s is not within the phone's width", k)
		}
	}
	if !eval[bool](b, `(`+fits+`)('table.queues td.qname a')`) {
		t.Error("queue names are not within the phone's width")
	}
	if got := b.text(`tr[data-queue="emails"] [data-k="scheduled"]`); got != "250,001" {
		t.Errorf("emails scheduled %q", got)
	}
	if over := eval[int](b, `document.querySelector('.scroll').scrollWidth - document.querySelector('.scroll').clientWidth`); over > 0 {
		t.Errorf("the overview's table scrolls by %d px", over)
	}
	if over := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("the overview is %d px wider than the phone", over)
	}
	if n := eval[int](b, `Array.from(document.querySelectorAll('table.queues th.opt')).filter(e => e.getBoundingClientRect().width > 0).length`); n != 0 {
		t.Errorf("%d optional columns shown on a phone", n)
	}
	// The lists: every id on one line.
	for _, state := range []string{"scheduled", "inflight", "dead"} {
		b.open(f.TabURL("orders", state))
		lines := eval[[]int](b, `Array.from(document.querySelectorAll('section.list a[href*="item?"]:not(.showall)')).map(a => a.getClientRects().length)`)
		if len(lines) == 0 {
			t.Fatalf("no ids on the %s tab", state)
		}
		for i, n := range lines {
			if n != 1 {
				t.Errorf("%s tab: id %d is on %d lines", state, i, n)
			}
		}
		if over := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
			t.Errorf("the %s tab is %d px wider than the phone", state, over)
		}
	}
}

// TestBrowserReloadDoesNotRepeatAnAction (issue 24, item 14): an action's
// result page was the POST's response, so reloading it posted the action
// again. Now the POST is answered 303 See Other to a result page (GET):
// with the script's dialog or the confirmation page without script, the
// browser ends on it, and reloading it shows the same result and changes
// nothing.
func TestBrowserReloadDoesNotRepeatAnAction(t *testing.T) {
	chromiumPath(t)
	for _, script := range []bool{true, false} {
		f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
		b := newTab(t, 1280, 900)
		if !script {
			if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
				t.Fatal(err)
			}
		}
		b.open(f.TabURL("orders", "dead"))
		if script {
			b.click(`.whole button[data-op="delete-all-dead"]`, true)
		} else {
			b.run(chromedp.Click(chromedp.CSS(`.whole button[data-op="delete-all-dead"]`)))
			b.run(chromedp.WaitVisible(chromedp.CSS(`p.question`)))
			b.run(chromedp.Click(chromedp.CSS(`form.confirm button`)))
		}
		b.run(chromedp.WaitVisible(chromedp.CSS(`p.result`)))
		want := `Deleted 3 dead items of queue "orders".`
		if got := b.text("p.result"); got != want {
			t.Fatalf("script %v: result %q, want %q", script, got, want)
		}
		if p := eval[string](b, `location.pathname`); p != "/dq/result" {
			t.Fatalf("script %v: the result is shown at %s, the POST's response, not a page of its own", script, p)
		}
		webtest.DeadAgain(t, f, "fresh")
		b.run(chromedp.Reload())
		b.run(chromedp.WaitVisible(chromedp.CSS(`p.result`)))
		if got := b.text("p.result"); got != want {
			t.Errorf("script %v: after a reload the result says %q, want %q", script, got, want)
		}
		if f.State(t, "fresh") != redisq.StateDead {
			t.Fatalf("script %v: reloading the result page deleted a dead item again", script)
		}
	}
}

// TestBrowserOneCurrentTab (issue 24, item 14): on the Recurring tab both
// Summary and Recurring were marked current. Each tab, opened, is the
// only one marked.
func TestBrowserOneCurrentTab(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	if _, err := f.Q.Register(context.Background(), "hourly", redisq.Every(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, 1280, 900)
	for _, tab := range []struct{ state, label string }{{"", "Summary"}, {"scheduled", "Scheduled"}, {"inflight", "In flight"}, {"dead", "Dead"}, {"recurring", "Recurring"}} {
		u := f.QueueURL("orders")
		if tab.state != "" {
			u = f.TabURL("orders", tab.state)
		}
		b.open(u)
		got := eval[[]string](b, `Array.from(document.querySelectorAll('nav.tabs a[aria-current=page], nav.tabs a.current')).map(a => a.firstChild.textContent.trim())`)
		if len(got) != 1 || got[0] != tab.label {
			t.Errorf("tab %q: marked current %q, want only %q", tab.state, got, tab.label)
		}
	}
}

// TestBrowserDeleteAsksForTheState (issue 24, item 14): a scheduled row's
// Delete asked about in-flight items being marked. Each row's and item
// page's Delete now asks in the item's own state's words.
func TestBrowserDeleteAsksForTheState(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	b := newTab(t, 1280, 900)
	for _, c := range []struct{ page, button, want string }{
		{f.TabURL("orders", "scheduled"), `tr[data-id="soon:1"] button[data-op="delete"]`,
			`confirm: Delete scheduled item "soon:1" of queue "orders"? This cannot be undone.`},
		{f.ItemURL("orders", "soon:2"), `button[data-op="delete"]`,
			`confirm: Delete scheduled item "soon:2" of queue "orders"? This cannot be undone.`},
		{f.TabURL("orders", "inflight"), `tr[data-id="charge:1"] button[data-op="delete"]`,
			`confirm: Delete in-flight item "charge:1" of queue "orders"? It is marked: deleted when its consumer settles it, never retried.`},
		{f.ItemURL("orders", "charge:2"), `button[data-op="delete"]`,
			`confirm: Delete in-flight item "charge:2" of queue "orders"? It is marked: deleted when its consumer settles it, never retried.`},
	} {
		b.open(c.page)
		b.click(c.button, false)
		if log := b.dialogLog(); log[len(log)-1] != c.want {
			t.Errorf("%s asks %q, want %q", c.button, log[len(log)-1], c.want)
		}
	}
	if f.State(t, "soon:1") != redisq.StateScheduled || f.State(t, "charge:1") != redisq.StateInFlight {
		t.Fatal("a dismissed Delete changed an item")
	}
}
