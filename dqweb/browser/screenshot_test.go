package browser_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

var screenshots = flag.Bool("screenshots", false, "write the screenshots of the dashboard to docs/ (go test ./dqweb/browser -run TestScreenshots -screenshots)")

// TestScreenshots regenerates docs/dqweb-*.png from the fixture with more
// traffic: about a minute of deliveries (mostly acked, some nacked or
// dead-lettered, of varied lateness) read by the queue's page every 10 s,
// so that the rates, the error rate and the history show, and items due
// over the hour; then two Workers hold some of the due items (the Workers
// tab), while a queue "webhooks" has overdue items and no worker (the
// overview, sorted by oldest overdue, marks it).
func TestScreenshots(t *testing.T) {
	if !*screenshots {
		t.Skip("regenerates docs/dqweb-*.png with -screenshots")
	}
	f := webtest.NewFixture(t, dqweb.Options{Title: "redisq @ 127.0.0.1:6379", Refresh: -1})
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	other, err := redisq.New(ctx, f.C, "emails")
	must(err)
	defer other.Close()
	must(other.Pause(ctx)) // shown with its badge
	// A partitioned queue: one overview row, and a page of its own.
	reports, err := redisq.NewPartitioned(ctx, f.C, "reports", 3)
	must(err)
	defer reports.Close()
	for i := range 60 {
		_, err := reports.EnqueueAfter(ctx, fmt.Sprintf("report:%d", i), []byte(fmt.Sprintf(`{"report":%d}`, i)),
			time.Duration(i+1)*time.Minute)
		must(err)
	}
	// The fixture's three overdue items are delivered first (and come
	// back later).
	for range webtest.OverdueIDs {
		m, err := f.Q.Take(ctx)
		must(err)
		must(m.Ack(ctx))
	}
	// Items due over the hour, more of them soon, and an overdue backlog
	// (taken by nobody: the consumers below take only their own).
	for i := range 400 {
		x := float64(i) / 400
		_, err := f.Q.EnqueueAfter(ctx, fmt.Sprintf("order:%d", 5000+i), []byte(fmt.Sprintf(`{"order":%d}`, 5000+i)),
			time.Duration(x*x*float64(time.Hour)+float64(2*time.Minute)))
		must(err)
	}
	hooks, err := redisq.New(ctx, f.C, "webhooks")
	must(err)
	defer hooks.Close()
	for i := range 40 {
		must(hooks.Enqueue(ctx, fmt.Sprintf("hook:%d", i), []byte(`{"hook":1}`), time.Now().Add(-time.Duration(3+i/2)*time.Minute)))
	}
	b := newTab(t, 1280, 1000)
	b.open(f.Base)
	b.open(f.QueueURL("orders"))
	lateness := []time.Duration{0, 0, 0, 0, 0, time.Millisecond, time.Millisecond, 4 * time.Millisecond, 20 * time.Millisecond,
		200 * time.Millisecond, 2 * time.Second}
	n := 0
	for round := range 6 {
		start := time.Now()
		for i := range 30 + 15*(round%3) {
			late := lateness[i%len(lateness)]
			id := fmt.Sprintf("done:%d", n)
			n++
			must(f.Q.Enqueue(ctx, id, []byte(`{"n":1}`), time.Now().Add(-late)))
			m, err := f.Q.Take(ctx)
			must(err)
			switch {
			case i%17 == 3 && round > 1:
				_, err = m.DeadLetter(ctx, "smtp 550: mailbox unavailable")
			case i%9 == 4:
				err = m.Nack(ctx) // max attempts 1: dead
			default:
				err = m.Ack(ctx)
			}
			must(err)
			_, err = other.EnqueueAfter(ctx, id, nil, time.Hour)
			must(err)
		}
		if round == 4 {
			// The overdue backlog: the consumers above take only their own.
			for i, id := range append(webtest.OverdueIDs, "late:4", "late:5", "late:6", "late:7") {
				must(f.Q.Enqueue(ctx, id, []byte(`{"late":true}`), time.Now().Add(-time.Duration(i+1)*time.Minute)))
			}
		}
		if round == 5 {
			break // the queue's page, shot first, is the last reading
		}
		b.open(f.Base)
		b.open(f.QueueURL("orders"))
		time.Sleep(10*time.Second - time.Since(start))
	}
	// Who holds the work: two Workers on orders, each running 3 of its
	// due items; webhooks has items overdue and none.
	for _, name := range []string{"billing-1", "billing-2"} {
		webtest.StartWorker(t, f.Q, name, 3, 3)
	}
	dir := filepath.Join("..", "..", "docs")
	shot := func(name string, w, h int64, mobile bool, u string) {
		t.Helper()
		if mobile {
			b.run(chromedp.EmulateViewport(w, h, chromedp.EmulateMobile))
		} else {
			b.run(chromedp.EmulateViewport(w, h))
		}
		if u != "" {
			b.open(u)
		}
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		must(err)
		must(os.WriteFile(filepath.Join(dir, name), png, 0o644))
		t.Logf("wrote %s (%d bytes)", name, len(png))
	}
	shot("dqweb-queue.png", 1280, 1900, false, f.QueueURL("orders"))
	shot("dqweb-overview.png", 1280, 520, false, f.Base+"?sort=overdue")
	shot("dqweb-workers.png", 1280, 760, false, f.TabURL("orders", "workers"))
	shot("dqweb-partitioned.png", 1280, 1300, false, f.QueueURL("reports"))
	b.open(f.TabURL("orders", "dead"))
	for _, sel := range []string{`article.deaditem:nth-of-type(2) input[type=checkbox]`, `article.deaditem:nth-of-type(3) input[type=checkbox]`} {
		b.run(chromedp.Click(chromedp.CSS(sel)))
	}
	eval[bool](b, `(() => { window.scrollTo(0, 0); return true })()`)
	shot("dqweb-queue-dead.png", 1280, 1300, false, "")
	shot("dqweb-overview-phone.png", 390, 560, true, f.Base)
	shot("dqweb-queue-phone.png", 390, 1400, true, f.TabURL("orders", "scheduled"))
}
