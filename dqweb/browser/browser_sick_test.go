package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// The views of issue 24, item 15, in Chromium: which queue is sick, and
// dead letters by cause.

// rowsShown is the overview's queues in the order shown.
func (b *tab) rowsShown() []string {
	b.t.Helper()
	return eval[[]string](b, `Array.from(document.querySelectorAll('table.queues tbody tr[data-queue]')).map(r => r.dataset.queue)`)
}

// TestBrowserSortableOverview: clicking a column's head sorts by it, worst
// first, and again turns it around; the URL keeps the sort (a bookmark
// opens it), and it works without the script; on a phone the "Sort by"
// line does it; a paused queue says since when, absolute time shown.
func TestBrowserSortableOverview(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	enqueued := webtest.SickQueues(t, f)
	emails, err := redisq.New(context.Background(), f.C, "emails")
	if err != nil {
		t.Fatal(err)
	}
	if err := emails.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, 1280, 900)
	odd := webtest.OddQueue
	for _, script := range []bool{true, false} {
		if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !script}); err != nil {
			t.Fatal(err)
		}
		b.open(f.Base)
		if got := b.rowsShown(); fmt.Sprint(got) != fmt.Sprint([]string{"alpha", "emails", "orders", odd, "zeta"}) {
			t.Errorf("script %v: by name %q", script, got)
		}
		b.run(chromedp.Click(chromedp.CSS(`th[data-sort="dead"] a`)))
		b.run(chromedp.WaitVisible(chromedp.CSS(`th[data-sort="dead"][aria-sort="descending"]`)))
		if got := b.rowsShown(); fmt.Sprint(got) != fmt.Sprint([]string{"zeta", "orders", "alpha", "emails", odd}) {
			t.Errorf("script %v: by dead %q", script, got)
		}
		if u := eval[string](b, `location.search`); !strings.Contains(u, "sort=dead") {
			t.Errorf("script %v: the URL %q does not keep the sort", script, u)
		}
		b.run(chromedp.Click(chromedp.CSS(`th[data-sort="dead"] a`)))
		b.run(chromedp.WaitVisible(chromedp.CSS(`th[data-sort="dead"][aria-sort="ascending"]`)))
		if got := b.rowsShown(); fmt.Sprint(got) != fmt.Sprint([]string{"alpha", "emails", odd, "orders", "zeta"}) {
			t.Errorf("script %v: by dead, ascending %q", script, got)
		}
		b.run(chromedp.Click(chromedp.CSS(`th[data-sort="overdue"] a`)))
		b.run(chromedp.WaitVisible(chromedp.CSS(`th[data-sort="overdue"][aria-sort="descending"]`)))
		if got := b.rowsShown(); got[0] != "alpha" || got[1] != "orders" {
			t.Errorf("script %v: by oldest overdue %q", script, got)
		}
		webtest.AlphaOverdue(t, b.text(`tr[data-queue="alpha"] [data-k="overdue"]`), enqueued)
	}
	// A bookmark of the sort.
	b.open(f.Base + "?sort=dead&dir=desc")
	if got := b.rowsShown(); got[0] != "zeta" {
		t.Errorf("bookmarked sort: %q", got)
	}
	// Paused since, shown.
	b.open(f.Base)
	since := b.text(`tr[data-queue="emails"] .since`)
	st, _ := emails.Stats(context.Background())
	if !strings.HasPrefix(since, "paused since ") || !strings.HasSuffix(since, st.PausedSince.UTC().Format("2006-01-02 15:04:05.000 UTC")) {
		t.Errorf("paused since: %q", since)
	}
	if m := eval[string](b, absVisible); m != "" {
		t.Errorf("a time without its absolute time shown: %s", m)
	}
	// A phone: the Sort by line.
	b.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.open(f.Base)
	if !eval[bool](b, `document.querySelector('.sortby').getClientRects().length > 0`) {
		t.Fatal("no Sort by line on a phone")
	}
	b.run(chromedp.Click(chromedp.CSS(`.sortby a[href*="sort=overdue"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`.sortby a[aria-current]`)))
	if got := b.rowsShown(); got[0] != "alpha" || got[1] != "orders" {
		t.Errorf("phone: by oldest overdue %q", got)
	}
	if over := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("the overview is %d px wider than the phone", over)
	}
}

// TestBrowserDeadReasons: the dead tab groups the dead items by cause,
// hostile causes shown escaped (no raw bidi, control or invalid byte, no
// markup run); a cause opens its list; "Requeue all" of a cause asks with
// its count and the cause escaped, changes nothing when dismissed, and
// requeues exactly its items when accepted; without the script, "Delete
// all" of a cause asks on a page of its own; a form posted from another
// origin is refused.
func TestBrowserDeadReasons(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	for i, why := range webtest.HostileReasons {
		webtest.DieOf(t, f, why, fmt.Sprintf("h%d:a", i), fmt.Sprintf("h%d:b", i))
	}
	b := newTab(t, 1280, 900)
	b.open(f.TabURL("orders", "dead"))
	b.noRawText("dead tab")
	if n := eval[int](b, `document.querySelectorAll('script').length + document.querySelectorAll('img').length`); n != 1 {
		t.Errorf("%d script and img elements: a cause's markup ran", n)
	}
	causes := eval[[]string](b, `Array.from(document.querySelectorAll('#reasons td.why .reason')).map(e => e.textContent)`)
	want := []string{`"bad\xffutf8\nline"`, `"ctl\x1b[31mred\a"`, `"paid\u202e\u2066 deifirev\u2069"`, webtest.XSSReason, "bad format", "max attempts: smtp 421"}
	if fmt.Sprint(causes) != fmt.Sprint(want) {
		t.Errorf("causes\n got %q\nwant %q", causes, want)
	}
	if m := eval[string](b, absVisible); m != "" {
		t.Errorf("a time without its absolute time shown: %s", m)
	}

	// The bidi cause: its list, then Requeue all, asked first.
	b.run(chromedp.Click(chromedp.CSS(`#reasons tr:nth-child(3) td.why a`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`#filter`)))
	b.noRawText("the list of a cause")
	if ids := eval[[]string](b, `Array.from(document.querySelectorAll('article.deaditem')).map(a => a.dataset.id)`); fmt.Sprint(ids) != "[h0:a h0:b]" {
		t.Errorf("the list of the bidi cause holds %q", ids)
	}
	btn := `.whole button[data-op="requeue-reason"]`
	b.click(btn, false)
	if f.State(t, "h0:a") != redisq.StateDead {
		t.Fatal("a dismissed confirmation requeued")
	}
	b.click(btn, true)
	if got := b.text("p.result"); got != `Requeued 2 dead items of queue "orders" that died of "paid\u202e\u2066 deifirev\u2069": they are due now.` {
		t.Errorf("result %q", got)
	}
	ask := `confirm: Requeue all 2 dead items of queue "orders" that died of "paid\u202e\u2066 deifirev\u2069"? They become due now, attempts reset.`
	if log := b.dialogLog(); len(log) != 2 || log[0] != ask || log[1] != ask {
		t.Errorf("dialogs %q, want twice %q", log, ask)
	}
	for id, st := range map[string]redisq.State{"h0:a": redisq.StateScheduled, "h0:b": redisq.StateScheduled, "h1:a": redisq.StateDead, "h2:b": redisq.StateDead, "mail:7": redisq.StateDead} {
		if got := f.State(t, id); got != st {
			t.Errorf("%s: %v, want %v", id, got, st)
		}
	}

	// Without the script: Delete all of the invalid-UTF-8 cause, asked on
	// a page of its own.
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.open(f.TabURL("orders", "dead"))
	b.run(chromedp.Click(chromedp.CSS(`#reasons tr:nth-child(1) button[data-op="delete-reason"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`p.question`)))
	b.noRawText("the confirmation page")
	if got := b.text("p.question"); got != `Delete all 2 dead items of queue "orders" that died of "bad\xffutf8\nline"? This cannot be undone.` {
		t.Fatalf("the confirmation page asks %q", got)
	}
	if f.State(t, "h2:a") != redisq.StateDead {
		t.Fatal("deleted before the confirmation")
	}
	b.run(chromedp.Click(chromedp.CSS(`form.confirm button`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`p.result`)))
	if got := b.text("p.result"); got != `Deleted 2 dead items of queue "orders" that died of "bad\xffutf8\nline".` {
		t.Errorf("result %q", got)
	}
	if f.State(t, "h2:a") != 0 || f.State(t, "h2:b") != 0 || f.State(t, "h1:a") != redisq.StateDead {
		t.Fatal("not exactly the items of the cause were deleted")
	}

	// From another origin: a page that posts the same form to the
	// dashboard. The browser sends it cross-site (and without the
	// SameSite=Strict cookie); the dashboard refuses it.
	action := f.Base + "action"
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><main><form method="post" action="%s"><input type="hidden" name="op" value="delete-reason"><input type="hidden" name="q" value="orders"><input type="hidden" name="reasonx" value="%x"><input type="hidden" name="csrf" value="%s"><input type="hidden" name="confirmed" value="yes"><button id="go">go</button></form></main>`,
			action, webtest.HostileReasons[1], strings.Repeat("A", 43))
	}))
	t.Cleanup(evil.Close)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false}); err != nil {
		t.Fatal(err)
	}
	b.open(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1))
	b.click(`#go`, true) // waits for the dashboard's answer
	if got := b.text("main"); !strings.Contains(got, "refused") || eval[string](b, `document.title`) != "Forbidden · redisq" {
		t.Errorf("the cross-origin post got %q", got)
	}
	if f.State(t, "h1:a") != redisq.StateDead {
		t.Fatal("a cross-origin post deleted")
	}
}
