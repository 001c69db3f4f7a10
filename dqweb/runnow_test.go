package dqweb_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// Run now never delays an item (issue 24, items 1 and 11): the dashboard
// ran RescheduleAfter(id, 0), which moved an overdue item behind every
// item due before now, and ran a recurring occurrence early, so that
// nothing ran at its time. It now runs RunNow and says what it did.

// runNow posts a confirmed run-now of ids on "orders", as the scheduled
// tab's selection does.
func runNow(t *testing.T, f *webtest.Fixture, c *http.Client, ids ...string) response {
	t.Helper()
	return action(t, f, c, url.Values{"op": {"run-now"}, "qx": {hex.EncodeToString([]byte("orders"))}, "state": {"scheduled"}, "idx": hexIDs(ids...)})
}

// TestRunNowKeepsAnOverdueItemsPlace (issue 24, item 11): Run now on an
// overdue item leaves it where it is, ahead of the items due after it,
// and says so; it used to go behind all of them.
func TestRunNowKeepsAnOverdueItemsPlace(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if err := f.Q.Enqueue(ctx, "mid", nil, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	before := webtest.ScheduledOrder(t, f.Q)
	if fmt.Sprint(before[:4]) != "[late:1 late:2 late:3 mid]" {
		t.Fatalf("order before: %v", before)
	}
	it, err := f.Q.Get(ctx, "late:1")
	if err != nil {
		t.Fatal(err)
	}
	c := client(t)
	r := runNow(t, f, c, "late:1")
	if r.status != http.StatusOK || !strings.Contains(r.body, "Item &#34;late:1&#34; of queue &#34;orders&#34; was already due: left in its place, ahead of the items due after it (nothing changed)") {
		t.Fatalf("run now of an overdue item: %d\n%s", r.status, r.body)
	}
	if after := webtest.ScheduledOrder(t, f.Q); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("order after run now of late:1:\n got %v\nwant %v", after, before)
	}
	if again, _ := f.Q.Get(ctx, "late:1"); !again.Due.Equal(it.Due) {
		t.Errorf("late:1 due %v, was %v", again.Due, it.Due)
	}
	// A future item becomes due now, behind the ones already due.
	r = runNow(t, f, c, "soon:1")
	if r.status != http.StatusOK || !strings.Contains(r.body, "Item &#34;soon:1&#34; of queue &#34;orders&#34; is due now: it was not yet due, and runs behind the items already due.") {
		t.Fatalf("run now of a future item: %d\n%s", r.status, r.body)
	}
	if after := webtest.ScheduledOrder(t, f.Q); fmt.Sprint(after[:5]) != "[late:1 late:2 late:3 mid soon:1]" {
		t.Errorf("order after run now of soon:1: %v", after)
	}
	// The question says what it does, on the item page and the tab.
	for _, u := range []string{f.ItemURL("orders", "late:2"), f.TabURL("orders", "scheduled")} {
		body := get(t, c, u).body
		if !strings.Contains(body, `data-confirm="Run item &#34;late:2&#34; of queue &#34;orders&#34; now? If it is not yet due, it becomes due now, behind the items already due; if it is already due, it keeps its place; a dead item is requeued."`) {
			t.Errorf("%s: the question of Run now", u)
		}
	}
	if note := section(t, get(t, c, f.ItemURL("orders", "late:2")).body, `id="runnow-note"`, "</p>"); !strings.Contains(note, "It is due already: Run now leaves it in its place") {
		t.Errorf("the item page's note: %s", note)
	}
	audit(t, f)
}

// TestRunNowOnAnOccurrenceAddsARun (issue 24, item 1): Run now on the
// pending occurrence of a recurring registration enqueues an extra run,
// due now, and leaves the occurrence at its time, so the schedule keeps
// its run; the result names both, the button says so beforehand, and the
// Recurring tab shows the true next (the occurrence) and last (the extra
// run) runs.
func TestRunNowOnAnOccurrenceAddsARun(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if _, err := f.Q.Register(ctx, "digest", redisq.EveryPhase(24*time.Hour, 8*time.Hour), []byte("d")); err != nil {
		t.Fatal(err)
	}
	g, err := f.Q.Registration(ctx, "digest")
	if err != nil {
		t.Fatal(err)
	}
	occ := g.EnqueuedID
	at := g.Next.UTC().Format("2006-01-02 15:04:05.000 UTC")
	c := client(t)
	// Before: the item page says what Run now does, near the button, and
	// the question says it too.
	page := get(t, c, f.ItemURL("orders", occ)).body
	if note := section(t, page, `id="runnow-note"`, "</p>"); !strings.Contains(note, `An occurrence of recurring &#34;digest&#34;, at `+at+`: Run now enqueues an extra run of it, due now, and keeps this occurrence at its time, so the schedule's run still happens.`) {
		t.Errorf("the note by the button: %s", note)
	}
	if !strings.Contains(page, `It is an occurrence of recurring &#34;digest&#34;: while it waits for its time (`+at+`), an extra run is enqueued, due now, and it stays, so the schedule&#39;s run still happens`) {
		t.Error("the question of Run now on an occurrence does not say it keeps the scheduled run")
	}
	if row := section(t, get(t, c, f.TabURL("orders", "scheduled")).body, `<tr data-id="`+occ+`">`, "</tr>"); !strings.Contains(row, `<span class="badge rec"`) {
		t.Errorf("the scheduled tab does not mark the occurrence: %s", row)
	}

	r := runNow(t, f, c, occ)
	m := regexp.MustCompile(`Extra run &#34;(rec:digest@[^&]*)&#34; of recurring &#34;digest&#34; enqueued in queue &#34;orders&#34;, due now; the scheduled run &#34;` + regexp.QuoteMeta(occ) + `&#34; at ` + regexp.QuoteMeta(at) + ` stays.`).FindStringSubmatch(r.body)
	if r.status != http.StatusOK || m == nil {
		t.Fatalf("run now of an occurrence: %d\n%s", r.status, r.body)
	}
	extra := m[1]
	now, _ := f.C.Time(ctx).Result()
	it, err := f.Q.Get(ctx, occ)
	if err != nil || it.State != redisq.StateScheduled || !it.Due.Equal(g.Next) {
		t.Fatalf("the occurrence after run now: %+v %v; want it scheduled at %v", it, err, g.Next)
	}
	x, err := f.Q.Get(ctx, extra)
	if err != nil || x.State != redisq.StateScheduled || x.Due.After(now) {
		t.Fatalf("the extra run %s: %+v %v", extra, x, err)
	}
	g2, err := f.Q.Registration(ctx, "digest")
	if err != nil || !g2.Next.Equal(g.Next) || g2.Last.IsZero() {
		t.Fatalf("registration after run now: next %v last %v (%v); want next %v", g2.Next, g2.Last, err, g.Next)
	}
	row := regRows(t, get(t, c, f.TabURL("orders", "recurring")).body)["digest"]
	next := section(t, row, `<td class="next"`, "</td>")
	last := regexp.MustCompile(`<td class="opt" data-label="Last">(<time[^>]*>[^<]*</time> <span class="abs">[^<]*</span>)</td><td class="opt seen" data-label="Seen">`).FindStringSubmatch(row)
	if !strings.Contains(next, `<span class="abs">`+at+`</span>`) || last == nil || !strings.Contains(last[1], `<span class="abs">`+g2.Last.UTC().Format("2006-01-02 15:04:05.000 UTC")+`</span>`) {
		t.Errorf("the Recurring tab's next and last:\n%s", row)
	}
	// From the Recurring tab, Run now goes back to it.
	form := formOf(t, row, "run-now")
	if form.Get("tab") != "recurring" || form.Get("idx") != hex.EncodeToString([]byte(occ)) {
		t.Fatalf("the Recurring tab's Run now: %v", form)
	}
	form.Set("confirmed", "yes")
	r = post(t, c, f.Base+"action", form)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Extra run &#34;rec:digest@") || !strings.Contains(r.body, `href="/dq/queue?q=orders&amp;state=recurring" id="back"`) {
		t.Errorf("Run now from the Recurring tab: %d\n%s", r.status, r.body)
	}
	if it, _ := f.Q.Get(ctx, occ); !it.Due.Equal(g.Next) {
		t.Errorf("the occurrence moved: due %v", it.Due)
	}
	audit(t, f)
}

// TestRunNowOnADeadItemIsARequeue (issue 24, item 11): Run now on a dead
// item (one that died after its page was shown) requeues it, and counts a
// requeue; it used to be refused as in flight.
func TestRunNowOnADeadItemIsARequeue(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	st, _ := f.Q.Stats(ctx)
	c := client(t)
	r := runNow(t, f, c, "mail:7")
	if r.status != http.StatusOK || !strings.Contains(r.body, "Item &#34;mail:7&#34; of queue &#34;orders&#34; was dead: requeued, due now, attempts reset (counted as a requeue).") {
		t.Fatalf("run now of a dead item: %d\n%s", r.status, r.body)
	}
	it, err := f.Q.Get(ctx, "mail:7")
	if err != nil || it.State != redisq.StateScheduled || it.Attempts != 0 {
		t.Fatalf("mail:7 after run now: %+v %v", it, err)
	}
	if st2, _ := f.Q.Stats(ctx); st2.Requeued != st.Requeued+1 || st2.Rescheduled != st.Rescheduled {
		t.Errorf("requeued %d → %d, rescheduled %d → %d; want one requeue", st.Requeued, st2.Requeued, st.Rescheduled, st2.Rescheduled)
	}
}

// TestRunNowSelection: Run now on a selection reports each outcome:
// moved, kept in place, requeued, an extra run, in flight.
func TestRunNowSelection(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if _, err := f.Q.Register(ctx, "digest", redisq.EveryPhase(24*time.Hour, 8*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	g, _ := f.Q.Registration(ctx, "digest")
	r := runNow(t, f, client(t), "soon:1", "soon:2", "late:1", "blob:1", g.EnqueuedID, "charge:1")
	checkPage(t, "result", r, 100<<10)
	for _, want := range []string{
		"Made 2 items of queue &#34;orders&#34; due now.",
		"Left 1 item of queue &#34;orders&#34; in place, already due (ahead of the items due after them): &#34;late:1&#34;.",
		"Requeued 1 item of queue &#34;orders&#34; that had died, due now (counted as requeues): &#34;blob:1&#34;.",
		"Enqueued 1 extra run of recurring occurrences, due now; the occurrences stay at their times: &#34;rec:digest@",
		"Nothing changed for 1 item, in flight: &#34;charge:1&#34;.",
	} {
		if !strings.Contains(html.UnescapeString(r.body), html.UnescapeString(want)) {
			t.Errorf("the result lacks %s\n%s", want, section(t, r.body, `<p class="result`, "</p>"))
		}
	}
	if it, _ := f.Q.Get(ctx, g.EnqueuedID); !it.Due.Equal(g.Next) || f.State(t, "blob:1") != redisq.StateScheduled {
		t.Error("the occurrence moved, or blob:1 was not requeued")
	}
}
