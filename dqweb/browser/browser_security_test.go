package browser_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// TestBrowserRebinding is the DNS rebinding attack in Chromium: the name
// evil.example resolves to the dashboard's address, so a page loaded from
// it is same-origin with the dashboard. The dashboard refuses it: no page,
// no token, no payload, no action; the same server opened as localhost
// works.
func TestBrowserRebinding(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	u, _ := url.Parse(f.Base)
	port := u.Port()
	b := newTab(t, 1280, 900, chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"))

	evil := "http://evil.example:" + port + "/dq/"
	b.run(chromedp.Navigate(evil))
	text := eval[string](b, `document.body.innerText`)
	if !strings.Contains(text, `host "evil.example" is not allowed`) || !strings.Contains(text, "-allow-host evil.example") {
		t.Fatalf("the rebound page shows %q, want the refusal", text)
	}
	if n := eval[int](b, `document.querySelectorAll('form, input[name=csrf], main').length`); n != 0 {
		t.Fatalf("the rebound page has %d forms, token fields or a page body", n)
	}
	// What the attacker's script would do from that origin: read an item
	// and post an action. Both are refused.
	status := eval[int](b, `fetch("/dq/item?q=orders&id=mail:7").then(r => r.status)`)
	body := eval[string](b, `fetch("/dq/item?q=orders&id=mail:7").then(r => r.text())`)
	if status != 421 || strings.Contains(body, "u7@example.com") {
		t.Fatalf("item read from the rebound origin: %d %q", status, body)
	}
	post := eval[int](b, `fetch("/dq/action", {method: "POST", body: new URLSearchParams({op: "delete-all-dead", q: "orders", confirmed: "yes"})}).then(r => r.status)`)
	if post != 421 {
		t.Fatalf("POST from the rebound origin: %d, want 421", post)
	}
	cookies, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{evil}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) != 0 {
		t.Fatalf("the rebound origin got cookies: %v", cookies.Cookies)
	}
	if f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("the rebound origin changed the queue")
	}

	// The same server by a name that cannot be rebound.
	b.open("http://localhost:" + port + "/dq/item?q=orders&id=mail:7")
	if got := b.text("h1 .name"); got != "mail:7" {
		t.Fatalf("localhost: item page heading %q", got)
	}
}

// TestBrowserHostileNames: in Chromium, what the user sees of hostile
// names (title, heading, table, links, confirmation) is the escaped form,
// and never a raw bidi override that would reorder it; the links still
// open the right queue and item.
func TestBrowserHostileNames(t *testing.T) {
	chromiumPath(t)
	f := webtest.HostileFixture(t)
	b := newTab(t, 1280, 900)
	b.open(f.Base)
	b.noRawText("overview")
	link := `a[href="/dq/queue?q=rtl%E2%80%AEgnp.exe"]`
	if got := b.text(link); got != webtest.RTLShown {
		t.Errorf("overview link text %q, want %q", got, webtest.RTLShown)
	}
	if got := b.text(`td.qname`); got == "" {
		t.Error("no queue names in the table")
	}
	b.run(chromedp.Click(chromedp.CSS(link)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`h1 .name`)))
	b.noRawText("queue page")
	if got := eval[string](b, `document.title`); got != webtest.RTLShown+" · redisq" {
		t.Errorf("queue page title %q", got)
	}
	if got := b.text("h1"); got != "Queue "+webtest.RTLShown {
		t.Errorf("queue page heading %q", got)
	}
	b.run(chromedp.Click(chromedp.CSS(`nav.tabs a[data-state="dead"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`article.deaditem`)))
	b.noRawText("dead tab")
	if got := b.text(`article.deaditem .reason`); got != `"paid\u202e\u2066 deifirev\u2069"` {
		t.Errorf("dead reason shown as %q", got)
	}
	confirm := eval[string](b, `document.querySelector('article.deaditem form.act').getAttribute('data-confirm')`)
	if webtest.RawRunes.MatchString(confirm) || !strings.Contains(confirm, webtest.RTLShown) {
		t.Errorf("confirmation %q", confirm)
	}
	// The first dead item's link opens its page.
	b.run(chromedp.Click(chromedp.CSS(`article.deaditem a.id`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`dl.fields`)))
	b.noRawText("item page")
	if got := b.text("h1 .name"); got != `"inv\u202ecod.exe"` {
		t.Errorf("item page heading %q", got)
	}
	if got := eval[string](b, `document.title`); got != `Item "inv\u202ecod.exe" · redisq` {
		t.Errorf("item page title %q", got)
	}
}
