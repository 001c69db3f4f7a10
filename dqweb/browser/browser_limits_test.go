package browser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// TestBrowserLimits: in Chromium, the summary's limits panel lists the
// limits; a limit typed in the "Set a limit" form is not lost to the
// auto-refresh, and is confirmed on the confirmation page with the limit
// as parsed; Remove asks with a dialog naming the key.
func TestBrowserLimits(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: time.Second})
	ctx := context.Background()
	if err := f.Q.SetRateLimit(ctx, "smtp", redisq.RateLimit{N: 2, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := f.Q.SetConcurrencyLimit(ctx, "acct", 1); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, 1280, 900)
	b.open(f.QueueURL("orders"))
	if got := b.text(`table.limits.rate tr[data-key="smtp"] td[data-k="limit"]`); got != "2 per 1m" {
		t.Errorf("smtp's limit shown as %q", got)
	}
	if got := b.text(`table.limits.conc tr[data-key="acct"] td[data-k="leased"]`); got != "0 of 1" {
		t.Errorf("acct's use shown as %q", got)
	}

	// The lookup of one key: typed in its form, its limits shown, and
	// kept by the auto-refresh (the URL has it).
	b.run(chromedp.SendKeys(chromedp.CSS(`form.limitfind input[name="limitkey"]`), "acct"))
	eval[bool](b, `window.__lookup = true`)
	b.run(chromedp.Click(chromedp.CSS(`form.limitfind button`)))
	b.waitNewPage("__lookup", "looking the key up")
	if got := b.text(`#lookup table.lookup-conc tr[data-key="acct"] td[data-k="leased"]`); got != "0 of 1" {
		t.Errorf("the lookup of acct shows %q", got)
	}
	eval[bool](b, `window.__looked = true`)
	b.waitNewPage("__looked", "waiting for the auto-refresh")
	if got := b.text(`#lookup h3`); got != `Limits of key "acct"` {
		t.Errorf("after a refresh the lookup shows %q", got)
	}
	b.open(f.QueueURL("orders"))

	// Typing a limit holds the auto-refresh (every second here).
	b.run(chromedp.Click(chromedp.CSS(`details.setlimit summary`)))
	form := `details.setlimit form.limit:first-of-type`
	b.run(chromedp.SendKeys(chromedp.CSS(form+` input[name="key"]`), "api"))
	typeLimit(b, form, "3/1s")
	if got := b.text("p.question"); !strings.HasPrefix(got, `Limit key "api" of queue "orders" to 3 per 1s?`) {
		t.Fatalf("the confirmation asks %q", got)
	}
	b.click(`form.confirm button`, true)
	if got := b.text("p.result"); got != `Set the rate limit of key "api" of queue "orders" to 3 per 1s: at most 3 of its items are claimed in any 1s.` {
		t.Fatalf("result %q", got)
	}
	if s, err := f.Q.RateLimitState(ctx, "api"); err != nil || s.Limit != (redisq.RateLimit{N: 3, Per: time.Second}) {
		t.Fatalf("api's limit: %+v %v", s, err)
	}

	// Untouched, the summary does reload.
	b.run(chromedp.Click(chromedp.CSS("#back")))
	b.run(chromedp.WaitVisible(chromedp.CSS(`section#limits`)))
	eval[bool](b, `window.__idle = true`)
	b.waitNewPage("__idle", "waiting for the auto-refresh")

	// Remove asks naming the key; dismissed, nothing changes.
	btn := `table.limits.rate tr[data-key="smtp"] button[data-op="rate-limit"].danger`
	b.click(btn, false)
	if s, _ := f.Q.RateLimitState(ctx, "smtp"); s.Limit.N != 2 {
		t.Fatal("a dismissed Remove removed the limit")
	}
	b.click(btn, true)
	if got := b.text("p.result"); !strings.HasPrefix(got, `Removed the rate limit of key "smtp" of queue "orders" (it was 2 per 1m)`) {
		t.Fatalf("result %q", got)
	}
	if s, _ := f.Q.RateLimitState(ctx, "smtp"); s.Limit.N != 0 {
		t.Fatal("Remove left the limit")
	}
	want := `confirm: Remove the rate limit of key "smtp" of queue "orders" (2 per 1m)? Its items are claimed as soon as they are due, however many.`
	if log := b.dialogLog(); len(log) != 2 || log[0] != want || log[1] != want {
		t.Errorf("dialogs %q, want twice %q", log, want)
	}
}

// typeLimit types rate in the rate limit form form, checks that the
// page's auto-refresh (every second) does not reload it meanwhile, and
// submits it.
func typeLimit(b *tab, form, rate string) {
	b.t.Helper()
	b.run(chromedp.SendKeys(chromedp.CSS(form+` input[name="rate"]`), rate))
	eval[bool](b, `window.__typing = true`)
	time.Sleep(2500 * time.Millisecond)
	if !eval[bool](b, `window.__typing === true && document.querySelector('`+form+` input[name="rate"]').value === "`+rate+`"`) {
		b.t.Fatal("the page reloaded under a limit being typed")
	}
	eval[bool](b, `window.__before = true`)
	b.run(chromedp.Click(chromedp.CSS(form + ` button[type="submit"]`)))
	b.waitNewPage("__before", "submitting the limit")
}

// TestBrowserQueueRateLimit: in Chromium, the rate limit of the whole
// queue is set from the "Set a limit" form (not lost to the
// auto-refresh), confirmed on the confirmation page, shown with its use,
// and removed with a dialog that names the queue.
func TestBrowserQueueRateLimit(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: time.Second})
	ctx := context.Background()
	b := newTab(t, 1280, 900)
	b.open(f.QueueURL("orders"))
	b.run(chromedp.Click(chromedp.CSS(`details.setlimit summary`)))
	form := `details.setlimit form.limit:has(button[data-op="queue-rate-limit"])`
	typeLimit(b, form, "2/1h")
	if got := b.text("p.question"); !strings.HasPrefix(got, `Limit the whole queue "orders" to 2 per 1h?`) {
		t.Fatalf("the confirmation asks %q", got)
	}
	b.click(`form.confirm button`, true)
	if got := b.text("p.result"); !strings.HasPrefix(got, `Set the rate limit of the whole queue "orders" to 2 per 1h`) {
		t.Fatalf("result %q", got)
	}
	if s, err := f.Q.QueueRateLimit(ctx); err != nil || s.Limit != (redisq.RateLimit{N: 2, Per: time.Hour}) {
		t.Fatalf("the queue's limit: %+v %v", s, err)
	}

	b.run(chromedp.Click(chromedp.CSS("#back")))
	b.run(chromedp.WaitVisible(chromedp.CSS(`table.limits.queue-rate`)))
	if got := b.text(`table.limits.queue-rate td[data-k="limit"]`); got != "2 per 1h" {
		t.Errorf("the queue's limit shown as %q", got)
	}
	btn := `table.limits.queue-rate button[data-op="queue-rate-limit"].danger`
	b.click(btn, false)
	if s, _ := f.Q.QueueRateLimit(ctx); s.Limit.N != 2 {
		t.Fatal("a dismissed Remove removed the limit")
	}
	b.click(btn, true)
	if got := b.text("p.result"); !strings.HasPrefix(got, `Removed the rate limit of the whole queue "orders" (it was 2 per 1h)`) {
		t.Fatalf("result %q", got)
	}
	if s, _ := f.Q.QueueRateLimit(ctx); s.Limit.N != 0 {
		t.Fatal("Remove left the limit")
	}
	if log := b.dialogLog(); len(log) != 2 || !strings.HasPrefix(log[0], `confirm: Remove the rate limit of the whole queue "orders" (2 per 1h, 0 claimed`) || log[1] != log[0] {
		t.Errorf("dialogs %q", log)
	}
}

// TestBrowserPauseRecurring: a registration's Pause asks, then pauses it
// (the row then offers Resume, which resumes it).
func TestBrowserPauseRecurring(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	ctx := context.Background()
	if _, err := f.Q.Register(ctx, "daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, 1280, 900)
	b.open(f.TabURL("orders", "recurring"))
	b.click(`tr[data-reg="daily"] button[data-op="pause-recurring"]`, true)
	if got := b.text("p.result"); !strings.HasPrefix(got, `Paused recurring "daily" of queue "orders": its pending occurrence was cancelled`) {
		t.Fatalf("pause: %q", got)
	}
	if g, err := f.Q.Registration(ctx, "daily"); err != nil || g.Paused.IsZero() {
		t.Fatalf("not paused: %+v %v", g, err)
	}
	b.open(f.TabURL("orders", "recurring"))
	b.click(`tr[data-reg="daily"] button[data-op="resume-recurring"]`, true)
	if got := b.text("p.result"); !strings.HasPrefix(got, `Resumed recurring "daily" of queue "orders": its first occurrence after now is enqueued`) {
		t.Fatalf("resume: %q", got)
	}
	if g, err := f.Q.Registration(ctx, "daily"); err != nil || !g.Paused.IsZero() {
		t.Fatalf("still paused: %+v %v", g, err)
	}
	log := b.dialogLog()
	if len(log) != 2 || !strings.HasPrefix(log[0], `confirm: Pause recurring "daily" of queue "orders"? No occurrence of it is enqueued until it is resumed`) ||
		!strings.HasPrefix(log[1], `confirm: Resume recurring "daily" of queue "orders"? Its first occurrence after now is enqueued`) {
		t.Errorf("dialogs %q", log)
	}
}
