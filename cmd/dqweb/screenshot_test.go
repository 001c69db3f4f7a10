package dqweb_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/dq-go/delayqueue/cmd/dqweb"
)

var screenshots = flag.Bool("screenshots", false, "write the README's screenshots of the dashboard to docs/ (go test ./cmd/dqweb -run TestScreenshots -screenshots)")

// TestScreenshots regenerates docs/dqweb-*.png from the fixture with more
// traffic: deliveries of varied lateness, items due over the hour, and a
// few seconds of activity so that the rates show.
func TestScreenshots(t *testing.T) {
	if !*screenshots {
		t.Skip("regenerates docs/dqweb-*.png with -screenshots")
	}
	f := newFixture(t, dqweb.Options{Title: "redisq @ 127.0.0.1:6379"})
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The fixture's three overdue items are delivered first (and come
	// back later), then a first reading, then traffic for the rates:
	// deliveries of varied lateness (items due in the past, taken and
	// acked) and items due over the hour, more of them soon.
	for range overdueIDs {
		m, err := f.q.Take(ctx)
		must(err)
		must(m.Ack(ctx))
	}
	b := newTab(t, 1280, 1000)
	b.open(f.base)
	b.open(f.queueURL("orders"))
	start := time.Now()
	lateness := map[time.Duration]int{0: 140, time.Millisecond: 60, 4 * time.Millisecond: 30, 20 * time.Millisecond: 12,
		200 * time.Millisecond: 6, 2 * time.Second: 3, 40 * time.Second: 1}
	for late, n := range lateness {
		for i := range n {
			must(f.q.Enqueue(ctx, fmt.Sprintf("done:%v:%d", late, i), nil, time.Now().Add(-late)))
			m, err := f.q.Take(ctx)
			must(err)
			must(m.Ack(ctx))
		}
	}
	for i := range 400 {
		x := float64(i) / 400
		_, err := f.q.EnqueueAfter(ctx, fmt.Sprintf("order:%d", 5000+i), []byte(fmt.Sprintf(`{"order":%d}`, 5000+i)),
			time.Duration(x*x*float64(time.Hour)))
		must(err)
	}
	for i, id := range append(overdueIDs, "late:4", "late:5", "late:6", "late:7") {
		must(f.q.Enqueue(ctx, id, []byte(`{"late":true}`), time.Now().Add(-time.Duration(i+1)*time.Minute)))
	}
	time.Sleep(3*time.Second - time.Since(start)) // rates over about 3s
	dir := filepath.Join("..", "..", "docs")
	shot := func(name string, full bool) {
		t.Helper()
		a := chromedp.CaptureScreenshot()
		if full {
			a = chromedp.FullScreenshot(100)
		}
		png, err := chromedp.Run(b.ctx, a)
		must(err)
		must(os.WriteFile(filepath.Join(dir, name), png, 0o644))
		t.Logf("wrote %s (%d bytes)", name, len(png))
	}
	b.open(f.base)
	b.run(chromedp.EmulateViewport(1280, 420))
	shot("dqweb-overview.png", false)
	b.run(chromedp.EmulateViewport(1280, 1500))
	b.open(f.queueURL("orders"))
	shot("dqweb-queue.png", false)
	b.run(chromedp.EmulateViewport(390, 1400, chromedp.EmulateMobile))
	b.open(f.queueURL("orders"))
	shot("dqweb-queue-phone.png", false)
}
