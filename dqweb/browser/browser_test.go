package browser_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

func TestMain(m *testing.M) { webtest.Main(m) }

// The browser tests drive headless Chromium (Debian's chromium package;
// `make test` installs it when run as root) against the dashboard and a
// real redis-server. They skip only when no Chromium is found.

// chromiumPath finds Chromium: $DQWEB_CHROMIUM, else on PATH.
func chromiumPath(t testing.TB) string {
	if p := os.Getenv("DQWEB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("dqweb browser tests skipped: Chromium not found (apt-get install -y chromium, or set DQWEB_CHROMIUM)")
	return ""
}

// tab is one headless Chromium tab. It answers every JavaScript dialog
// (accepting confirms when accept is set) and records them.
type tab struct {
	t   testing.TB
	ctx context.Context

	mu      sync.Mutex
	accept  bool     // guarded by mu
	dialogs []string // guarded by mu: "type: message"
}

func newTab(t testing.TB, width, height int64, extra ...chromedp.ExecAllocatorOption) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.WindowSize(int(width), int(height)), chromedp.Flag("disable-dev-shm-usage", true))
	opts = append(opts, extra...)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to sandbox as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	b := &tab{t: t, ctx: ctx}
	if err := chromedp.Listen(ctx, func(ev any) {
		e, ok := ev.(*page.EventJavascriptDialogOpening)
		if !ok {
			return
		}
		b.mu.Lock()
		b.dialogs = append(b.dialogs, fmt.Sprintf("%s: %s", e.Type, e.Message))
		accept := b.accept && e.Type == page.DialogTypeConfirm
		b.mu.Unlock()
		// Not from the listener itself: it runs on the connection's reader.
		go func() {
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
		}()
	}); err != nil {
		t.Fatal(err)
	}
	b.run(chromedp.EmulateViewport(width, height))
	return b
}

func (b *tab) run(a chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, a); err != nil {
		b.t.Fatal(err)
	}
}

func (b *tab) open(url string) {
	b.t.Helper()
	b.run(chromedp.Steps(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("main"))))
}

func eval[T any](b *tab, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// text returns the text of the first element matching sel.
func (b *tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("%s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// click clicks sel, answering the confirmation as accept says, and waits
// until the page has changed when accepted.
func (b *tab) click(sel string, accept bool) {
	b.t.Helper()
	b.mu.Lock()
	b.accept = accept
	b.mu.Unlock()
	eval[bool](b, `window.__before = true`)
	b.run(chromedp.Click(chromedp.CSS(sel)))
	if accept {
		b.waitNewPage("__before", "clicking "+sel)
	}
}

// waitNewPage waits until the page holding window[marker] has been
// replaced by another, fully loaded, after what. A check that lands during
// the navigation fails and is retried; the deadline is generous.
func (b *tab) waitNewPage(marker, what string) {
	b.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		done, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.`+marker+` === undefined && document.readyState === "complete"`))
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("no new page in 20s after %s: %v", what, err)
		}
	}
}

// noRawText fails if what the page shows holds a raw control or bidi
// character.
func (b *tab) noRawText(where string) {
	b.t.Helper()
	seen := eval[string](b, `document.title + "\n" + document.body.innerText`)
	if m := webtest.RawRunes.FindString(seen); m != "" {
		b.t.Errorf("%s: %+q shown raw", where, m)
	}
}

func (b *tab) dialogLog() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

func TestBrowser(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: time.Second})
	b := newTab(t, 1280, 900)

	// Overview: the counts of the fixture, dead highlighted.
	b.open(f.Base)
	for k, want := range webtest.FixtureCount {
		if got := b.text(`tr[data-queue="orders"] [data-k="` + k + `"]`); got != fmt.Sprint(want) {
			t.Errorf("overview %s: %s, want %d", k, got, want)
		}
	}
	if bg := eval[string](b, `getComputedStyle(document.querySelector('tr[data-queue="orders"] td.dead')).backgroundColor`); bg == "rgba(0, 0, 0, 0)" {
		t.Error("the dead count is not highlighted")
	}
	// The odd queue name is text, and its link opens its page.
	if got := eval[string](b, `document.querySelector('tr[data-queue="we<ird>\\"q"] a').textContent`); got != webtest.OddQueue {
		t.Errorf("odd queue name shown as %q", got)
	}
	b.run(chromedp.Click(chromedp.CSS(`tr[data-queue="we<ird>\"q"] a`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`h1 .name`)))
	if got := b.text("h1 .name"); got != webtest.OddQueue {
		t.Errorf("odd queue page heading %q", got)
	}

	// Auto-refresh reloads the page; the button pauses it (for the rest of
	// the test, which clicks).
	b.open(f.QueueURL("orders"))
	eval[bool](b, `window.__marker = true`)
	b.waitNewPage("__marker", "the auto-refresh (1s)")
	b.run(chromedp.Click(chromedp.CSS("#refresh")))
	if got := b.text("#refresh"); got != "auto-refresh paused" {
		t.Fatalf("refresh button says %q after a click", got)
	}

	// Queue page: counts, and the chart drawn from what the fixture enqueued.
	b.open(f.QueueURL("orders"))
	for k, want := range webtest.FixtureCount {
		if got := b.text(`.cards [data-k="` + k + `"]`); got != fmt.Sprint(want) {
			t.Errorf("queue page %s: %s, want %d", k, got, want)
		}
	}
	bars := eval[[]float64](b, `Array.from(document.querySelector('svg.chart:not(.lines)').querySelectorAll('rect.bar')).map(r => r.getBBox().height)`)
	if len(bars) != 61 || bars[0] <= 0 || bars[11] <= 0 || bars[46] <= 0 || bars[11] <= bars[46] {
		t.Errorf("due chart bar heights %v: want the overdue bar, the 11th minute (5 items) taller than the 46th (2)", bars)
	}
	for i, h := range bars {
		if h != 0 && i != 0 && i != 11 && i != 46 {
			t.Errorf("bar %d has height %v, want 0", i, h)
		}
	}

	// The XSS payload, reason and id are inert text (on the dead tab).
	b.run(chromedp.Click(chromedp.CSS(`nav.tabs a[data-state="dead"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`article.deaditem`)))
	xss := `article.deaditem:nth-of-type(2)`
	if got := eval[string](b, `document.querySelector('`+xss+` pre.payload').textContent`); got != webtest.XSSPayload {
		t.Errorf("XSS payload shown as %q", got)
	}
	if got := eval[string](b, `document.querySelector('`+xss+` .reason').textContent`); got != webtest.XSSReason {
		t.Errorf("XSS reason shown as %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('script').length + document.querySelectorAll('img').length`); n != 1 {
		t.Errorf("%d script and img elements, want only our script", n)
	}
	// The browser enforces the CSP: an inline script added to the page
	// does not run.
	if ran := eval[bool](b, `(() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.append(s); return window.__inline === 1 })()`); ran {
		t.Error("an inline script ran despite the Content-Security-Policy")
	}

	// Requeue mail:7 with its button: dismissed, nothing changes; accepted,
	// it is requeued and the result says so.
	btn := `article[data-id="mail:7"] button[data-op="requeue"]`
	b.click(btn, false)
	if f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("dismissing the confirmation requeued the item")
	}
	b.click(btn, true)
	if got := b.text("p.result"); !strings.Contains(got, `Requeued dead item "mail:7"`) {
		t.Fatalf("result %q", got)
	}
	if f.State(t, "mail:7") != redisq.StateScheduled {
		t.Fatal("mail:7 not requeued")
	}

	// Delete the XSS item from its own page.
	b.open(f.ItemURL("orders", webtest.XSSID))
	if got := b.text("h1 .name"); got != webtest.XSSID {
		t.Errorf("item page heading %q, want the id as text", got)
	}
	b.click(`button[data-op="delete-dead"]`, true)
	if got := b.text("p.result"); !strings.HasPrefix(got, "Deleted dead item") || f.State(t, webtest.XSSID) != 0 {
		t.Fatalf("delete: %q, state %v", got, f.State(t, webtest.XSSID))
	}

	// Back to the queue: one dead item left; delete all dead with the
	// dead tab's button.
	b.run(chromedp.Click(chromedp.CSS("#back")))
	b.run(chromedp.WaitVisible(chromedp.CSS(`.cards [data-k="dead"]`)))
	if got := b.text(`.cards [data-k="dead"]`); got != "1" {
		t.Fatalf("dead after two actions: %s, want 1", got)
	}
	b.open(f.TabURL("orders", "dead"))
	b.click(`.whole button[data-op="delete-all-dead"]`, true)
	if got := b.text("p.result"); got != `Deleted 1 dead item of queue "orders".` {
		t.Fatalf("delete all dead: %q", got)
	}
	b.open(f.QueueURL("orders"))
	if got := b.text(`.cards [data-k="dead"]`); got != "0" {
		t.Fatalf("dead after delete all: %s", got)
	}

	// Every dialog was one of our confirmations: no alert ever fired.
	log := b.dialogLog()
	if len(log) != 4 {
		t.Errorf("%d dialogs, want 4 confirmations: %q", len(log), log)
	}
	for _, d := range log {
		if !strings.HasPrefix(d, "confirm: ") {
			t.Errorf("unexpected dialog %q", d)
		}
	}
	if !strings.Contains(log[0], `"mail:7"`) {
		t.Errorf("the confirmation does not name the item: %q", log[0])
	}
}

func TestBrowserReadOnly(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{ReadOnly: true, Refresh: -1})
	b := newTab(t, 1280, 900)
	for _, u := range []string{f.Base, f.QueueURL("orders"), f.TabURL("orders", "dead"), f.TabURL("orders", "scheduled"), f.ItemURL("orders", "mail:7")} {
		b.open(u)
		if n := eval[int](b, `document.querySelectorAll('form[method=post], input[name=csrf], input[name=idx], button[data-op]').length`); n != 0 {
			t.Errorf("%s: %d forms or buttons in read-only mode", u, n)
		}
		if got := b.text(".badge.ro"); got != "read-only" {
			t.Errorf("%s: read-only badge %q", u, got)
		}
	}
	// A POST from the page itself (same origin) is refused.
	status := eval[int](b, `fetch("/dq/action", {method: "POST", body: new URLSearchParams({op: "delete-all-dead", q: "orders", confirmed: "yes"})}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("POST in read-only mode: %d, want 403", status)
	}
	if f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("read-only dashboard changed the queue")
	}
}
