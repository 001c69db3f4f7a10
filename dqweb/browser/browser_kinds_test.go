package browser_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// TestBrowserKinds: in Chromium with scripts disabled, the Kind column's
// link of a hostile kind (a bidi override) shows it escaped and opens the
// list of exactly that kind, whose filter shows it isolated (<bdi>) and
// links back to all kinds; the item page shows the kind and the headers
// escaped, never a raw bidi character; on a phone the list is no wider
// than the screen.
func TestBrowserKinds(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	ctx := context.Background()
	const kind = "refund\u202egnp.exe"
	for i, it := range []redisq.EnqueueItem{
		{ID: "k:1", After: 3 * time.Hour, Job: redisq.Job{Kind: kind, Headers: map[string]string{"trace\u202e": "v\u2066<b>x</b>", "tenant": "acme"}}},
		{ID: "k:2", After: 3*time.Hour + time.Second, Job: redisq.Job{Kind: "digest"}},
		{ID: "k:3", After: 3*time.Hour + 2*time.Second, Job: redisq.Job{Kind: kind + "x"}},
	} {
		if _, err := f.Q.Add(ctx, it); err != nil {
			t.Fatal(i, err)
		}
	}
	b := newTab(t, 1280, 900)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.open(f.TabURL("orders", "scheduled"))
	b.noRawText("scheduled tab")
	cell := `tr[data-id="k:1"] td.kind a.kind`
	if got := b.text(cell); got != `"refund\u202egnp.exe"` {
		t.Errorf("the kind shown as %q", got)
	}
	if got := b.text(`tr[data-id="late:1"] td.kind`); got != "–" {
		t.Errorf("an item of no kind: %q", got)
	}
	b.run(chromedp.Click(chromedp.CSS(cell)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`#kindfilter`)))
	b.noRawText("the list of the kind")
	loc := eval[string](b, `location.href`)
	if u, err := url.Parse(loc); err != nil || u.Query().Get("kind") != kind || u.Query().Get("state") != "scheduled" {
		t.Errorf("the kind's list is at %s", loc)
	}
	if ids := eval[[]string](b, `Array.from(document.querySelectorAll('section.list tr[data-id]')).map(r => r.dataset.id)`); strings.Join(ids, " ") != "k:1" {
		t.Errorf("the list of the kind holds %q", ids)
	}
	if got := b.text(`#kindfilter bdi.kind`); got != `"refund\u202egnp.exe"` {
		t.Errorf("the filter shows the kind as %q", got)
	}
	if got := eval[string](b, `getComputedStyle(document.querySelector('#kindfilter bdi.kind')).unicodeBidi`); got != "isolate" {
		t.Errorf("the filter's kind is not isolated: unicode-bidi %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.actions.whole, button[data-op="purge"]').length`); n != 0 {
		t.Errorf("the list of a kind offers %d actions on the whole state", n)
	}
	b.run(chromedp.Click(chromedp.CSS(`#allkinds`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`button[data-op="purge"]`)))
	if n := eval[int](b, `document.querySelectorAll('section.list tr[data-id]').length`); n != 14 {
		t.Errorf("all kinds: %d items, want 14", n)
	}

	b.open(f.ItemURL("orders", "k:1"))
	b.noRawText("item page")
	if got := b.text(`dd[data-k="kind"]`); got != `"refund\u202egnp.exe"` {
		t.Errorf("the item's kind shown as %q", got)
	}
	hs := eval[[]string](b, `Array.from(document.querySelectorAll('#headers tbody tr')).map(r => r.cells[0].textContent + "=" + r.cells[1].textContent)`)
	if strings.Join(hs, " | ") != `tenant=acme | "trace\u202e"="v\u2066<b>x</b>"` {
		t.Errorf("headers shown as %q", hs)
	}
	if n := eval[int](b, `document.querySelectorAll('main b').length`); n != 0 {
		t.Error("a header's markup became an element")
	}

	// A phone: the list with its Kind column fits.
	p := newTab(t, 390, 844)
	p.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	p.open(f.TabURL("orders", "scheduled"))
	if over := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("the scheduled tab is %d px wider than the phone", over)
	}
}
