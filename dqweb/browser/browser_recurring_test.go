package browser_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// TestBrowserRecurring: in Chromium, the Recurring tab (a link with its
// count, red while a registration is behind) lists the registrations;
// one that no process keeps is shown in red with the tooltip "no process
// keeps it"; hostile names are shown escaped; a name opens its
// occurrence's page; Unregister asks naming the registration, changes
// nothing when dismissed, and unregisters when accepted.
func TestBrowserRecurring(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	regs := webtest.RegisterAll(t, f)
	ctx := context.Background()
	b := newTab(t, 1280, 900)
	b.open(f.QueueURL("orders"))
	tabSel := `nav.tabs a[data-state="recurring"]`
	if n := eval[int](b, `document.querySelectorAll('`+tabSel+`').length`); n != 1 {
		t.Fatalf("%d Recurring tabs, want 1", n)
	}
	if got := b.text(tabSel + ` .count`); got != "8" {
		t.Errorf("Recurring tab count %q, want 8", got)
	}
	red := "rgb(198, 40, 40)" // --dead
	if got := eval[string](b, `getComputedStyle(document.querySelector('`+tabSel+` .count')).color`); got != red {
		t.Errorf("the count of a tab with registrations behind is %s, want %s", got, red)
	}
	b.run(chromedp.Click(chromedp.CSS(tabSel)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`section#recurring`)))
	if u := eval[string](b, `location.search`); !strings.Contains(u, "state=recurring") {
		t.Errorf("the Recurring tab's URL %q does not say so", u)
	}
	seen := eval[string](b, `document.title + "\n" + document.body.innerText`)
	if m := webtest.RawRunes.FindString(seen); m != "" {
		t.Errorf("%+q shown raw", m)
	}
	if got := eval[[]string](b, `Array.from(document.querySelectorAll('section#recurring tr[data-reg] td.id')).map(td => td.textContent)`); !strings.Contains(strings.Join(got, "|"), `"rtl\u202egnp"|`) ||
		!strings.Contains(strings.Join(got, "|"), `"bad\xffname\n"`) || !strings.Contains(strings.Join(got, "|"), webtest.XSSReg) {
		t.Errorf("names shown as %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('script').length`); n != 1 {
		t.Errorf("%d scripts: a name's markup ran", n)
	}

	// Behind: red, with its tooltip; not behind: not red.
	next := `tr[data-reg="hourly"] td.next`
	if got := eval[string](b, `getComputedStyle(document.querySelector('`+next+`')).color`); got != red {
		t.Errorf("a next occurrence behind is %s, want %s", got, red)
	}
	if got := eval[string](b, `document.querySelector('`+next+` .badge.behind').title`); !strings.HasPrefix(got, "no process keeps it") {
		t.Errorf("the behind badge's tooltip %q", got)
	}
	if got := eval[string](b, `getComputedStyle(document.querySelector('tr[data-reg="daily"] td.next')).color`); got == red {
		t.Error("a next occurrence to come is red")
	}
	if got := b.text(`tr[data-reg="daily"] td.next .abs`); got != regs["daily"].Next.UTC().Format("2006-01-02 15:04:05.000 UTC") {
		t.Errorf("daily's next occurrence shown as %q", got)
	}

	// The name opens the item of its occurrence.
	b.run(chromedp.Click(chromedp.CSS(`tr[data-reg="daily"] td.id a`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`dl.fields`)))
	if got := b.text("h1 .name"); got != regs["daily"].EnqueuedID {
		t.Errorf("the name opened %q, want %q", got, regs["daily"].EnqueuedID)
	}

	// Unregister: dismissed, nothing changes; accepted, done.
	b.open(f.TabURL("orders", "recurring"))
	btn := `tr[data-reg="daily"] button[data-op="unregister"]`
	b.click(btn, false)
	if _, err := f.Q.Registration(ctx, "daily"); err != nil {
		t.Fatalf("a dismissed confirmation unregistered: %v", err)
	}
	b.click(btn, true)
	if got := b.text("p.result"); got != `Unregistered "daily" of queue "orders"; its scheduled occurrence was cancelled.` {
		t.Fatalf("result %q", got)
	}
	if _, err := f.Q.Registration(ctx, "daily"); err != redisq.ErrNotFound {
		t.Fatalf("daily still registered: %v", err)
	}
	want := `confirm: Unregister "daily" of queue "orders"? No occurrence of it is enqueued any more; its last one, if still scheduled, is cancelled.`
	if log := b.dialogLog(); len(log) != 2 || log[0] != want || log[1] != want {
		t.Errorf("dialogs %q, want twice %q", log, want)
	}
	// Back to the tab: one fewer.
	b.run(chromedp.Click(chromedp.CSS("#back")))
	b.run(chromedp.WaitVisible(chromedp.CSS(`section#recurring`)))
	if got := b.text(tabSel + ` .count`); got != "7" {
		t.Errorf("count after unregistering %q, want 7", got)
	}

	// On a phone the table fits: no horizontal scroll.
	b.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.open(f.TabURL("orders", "recurring"))
	if over := eval[int](b, `document.querySelector('section#recurring .scroll').scrollWidth - document.querySelector('section#recurring .scroll').clientWidth`); over > 0 {
		t.Errorf("the Recurring tab's table scrolls by %d px on a phone", over)
	}
}
