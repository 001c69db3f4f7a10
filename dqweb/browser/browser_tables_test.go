package browser_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// wideRows fills the fixture's queue "orders" with the widest rows the
// Recurring tab and the limits panel show: registrations with every
// column set (a name just short of wrapping anywhere, a cron spec with a
// long zone, a policy, skips, a 1 MiB payload, a pause) besides
// webtest.RegisterAll's, rate and concurrency limits of large values
// on long keys, full, with items waiting, and a full rate limit of the
// whole queue.
func wideRows(t *testing.T, f *webtest.Fixture) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	webtest.RegisterAll(t, f)
	spec, err := redisq.Cron("CRON_TZ=America/Argentina/Buenos_Aires 30 9 * * 1-5")
	must(err)
	for _, n := range []string{"billing:monthly-invoice-reminders:eu-wes", "billing:monthly-invoice-reminders:eu-wet"} {
		_, err := f.Q.Register(ctx, n, spec, make([]byte, 1<<20), redisq.Overlap(redisq.OverlapSkip), redisq.CatchUpWindow(10*time.Minute),
			redisq.RegistrationVersion(1234567), redisq.CatchUp(100))
		must(err)
		must(f.C.HSet(ctx, "{dq:orders}:rec:"+n, "sk", 123456, "lw", "overlap").Err())
	}
	_, err = f.Q.PauseRecurring(ctx, "billing:monthly-invoice-reminders:eu-wet")
	must(err)
	for i, k := range []string{"smtp", "tenant:eu-west-1:acme-corporation-4711-x", webtest.RTLReg} {
		must(f.Q.SetRateLimit(ctx, "r"+k, redisq.RateLimit{N: 1, Per: 10*time.Minute + 30*time.Second}))
		must(f.Q.SetRateLimit(ctx, "rbig"+k, redisq.RateLimit{N: 1000000, Per: 10*time.Minute + 30*time.Second}))
		must(f.Q.SetConcurrencyLimit(ctx, "c"+k, 1))
		must(f.Q.SetConcurrencyLimit(ctx, "cbig"+k, 1000000))
		for j := range 3 {
			for _, p := range []string{"r", "c"} {
				_, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprint(p, i, j), At: time.Unix(1, 0), Job: redisq.Job{LimitKey: p + k}})
				must(err)
			}
		}
	}
	claimDue := func() { // claim what is due: one of each limited key, the others wait
		for {
			tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err := f.Q.TakeBatch(tctx, 100)
			cancel()
			if err != nil {
				return
			}
		}
	}
	claimDue()
	// The whole queue's limit, set last so that the keys' items were
	// claimed, then used up by one claim.
	must(f.Q.SetQueueRateLimit(ctx, redisq.RateLimit{N: 1, Per: 10*time.Minute + 30*time.Second}))
	_, err = f.Q.EnqueueAfter(ctx, "q0", nil, 0)
	must(err)
	claimDue()
}

// TestBrowserWideTables (issue 41, item 14): the Recurring tab's and the
// limits' tables hid columns and buttons: at 1280 px they ran past their
// scroll box (whose bar is below a long table), and on a phone their
// optional columns were left out. Now at 1280x800 every column head and
// every action is within the table's box with nothing to scroll, and on
// a phone each row is a card whose every field shows with its label, the
// page no wider than the phone.
func TestBrowserWideTables(t *testing.T) {
	chromiumPath(t)
	f := webtest.NewFixture(t, dqweb.Options{Refresh: -1})
	wideRows(t, f)
	// reach lists, for the table sel, what cannot be seen without a
	// horizontal scroll or at all: the elements of what (desktop: the
	// heads, phone: the labelled cells, and the actions) not displayed
	// or not within the table's box, a box or page that scrolls
	// sideways, and a cell whose label does not show.
	const reach = `(sel, what, labels) => { const tb = document.querySelector(sel); if (!tb) return ['no ' + sel];
	  const box = tb.closest('.scroll').getBoundingClientRect(), out = [];
	  const sb = tb.closest('.scroll'); if (sb.scrollWidth > sb.clientWidth) out.push('the box scrolls by ' + (sb.scrollWidth - sb.clientWidth) + ' px');
	  if (document.documentElement.scrollWidth > window.innerWidth) out.push('the page is wider than the window');
	  for (const e of tb.querySelectorAll(what + ', tbody button, tbody input:not([type=hidden])')) {
	    const r = e.getBoundingClientRect(), name = e.tagName + ' ' + (e.dataset.label || e.textContent.trim().slice(0, 20));
	    if (r.width == 0 || r.height == 0) out.push(name + ' is not shown');
	    else if (r.left < box.left - 1 || r.right > box.right + 1) out.push(name + ' is outside the box (' + Math.round(r.left) + '-' + Math.round(r.right) + ')');
	    if (labels && e.dataset.label && !getComputedStyle(e, '::before').content.includes(e.dataset.label)) out.push(name + ' has no label');
	  }
	  return out; }`
	tables := map[string][]string{"recurring": {"section#recurring table.regs"}, "": {"table.limits.rate", "table.limits.conc", "table.limits.queue-rate"}}
	rows := map[string]int{"table.limits.queue-rate": 1} // the others' widest rows are 6 or more
	for _, size := range []struct {
		w, h   int64
		phone  bool
		heads  string
		labels bool
	}{{1280, 800, false, "thead th", false}, {390, 844, true, "tbody td[data-label]", true}} {
		b := newTab(t, size.w, size.h)
		if size.phone {
			b.run(chromedp.EmulateViewport(size.w, size.h, chromedp.EmulateMobile))
		}
		for tab, sels := range tables {
			u := f.QueueURL("orders")
			if tab != "" {
				u = f.TabURL("orders", tab)
			}
			b.open(u)
			for _, sel := range sels {
				if n := eval[int](b, `document.querySelectorAll('`+sel+` tbody tr').length`); n < cmp.Or(rows[sel], 6) {
					t.Fatalf("%s: %d rows", sel, n)
				}
				if bad := eval[[]string](b, fmt.Sprintf("(%s)(%q, %q, %v)", reach, sel, size.heads, size.labels)); len(bad) > 0 {
					t.Errorf("%dx%d %s: %d not reachable:\n  %s", size.w, size.h, sel, len(bad), strings.Join(bad[:min(len(bad), 12)], "\n  "))
				}
			}
		}
	}
}
