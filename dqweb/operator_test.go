package dqweb_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// The operator's points of issue 20 on the dashboard, without a browser
// (dqweb/browser/browser_operator_test.go drives the same in Chromium).

// section returns the part of body from the first match of start to the
// next end.
func section(t *testing.T, body, start, end string) string {
	t.Helper()
	i := strings.Index(body, start)
	if i < 0 {
		t.Fatalf("no %q in\n%.3000s", start, body)
	}
	s := body[i:]
	if j := strings.Index(s, end); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestQueueTabs: the queue page is a summary and a tab per state, each a
// link carrying its count; a tab lists only its state, with the actions
// that fit it, and the confirmation of an action on a whole state names
// the state and the count.
func TestQueueTabs(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	sum := get(t, c, f.QueueURL("orders"))
	if sum.status != http.StatusOK {
		t.Fatalf("summary: %d", sum.status)
	}
	nav := section(t, sum.body, `<nav class="tabs"`, "</nav>")
	for state, n := range map[string]int64{"scheduled": 11, "inflight": 2, "dead": 3} {
		want := fmt.Sprintf(`<a href="/dq/queue?q=orders&amp;state=%s" data-state="%s">`, state, state)
		if !strings.Contains(nav, want) || !strings.Contains(nav, fmt.Sprintf(`data-count="%d">%d<`, n, n)) {
			t.Errorf("tabs lack the link or count of %s:\n%s", state, nav)
		}
	}
	if !strings.Contains(nav, `aria-current="page" class="current">Summary`) {
		t.Errorf("the summary is not the current tab:\n%s", nav)
	}
	if strings.Contains(sum.body, "data-id=") || strings.Contains(sum.body, "deaditem") {
		t.Error("the summary lists items")
	}
	for _, want := range []string{`<section id="counters">`, `<section id="history">`, "Due over the next hour"} {
		if !strings.Contains(sum.body, want) {
			t.Errorf("the summary lacks %s", want)
		}
	}

	for state, want := range map[string][]string{
		"scheduled": {`data-op="run-now"`, `data-op="delete"`, `data-confirm="Purge 11 scheduled items of queue &#34;orders&#34;? They are deleted; this cannot be undone."`,
			`data-many="Run {n} scheduled items of queue &#34;orders&#34; now? Those not yet due become due now, behind the items already due; those already due keep their place; a recurring occurrence waiting for its time stays, and an extra run of it is enqueued, due now."`},
		"inflight": {`data-op="delete"`, `data-confirm="Purge 2 in-flight items of queue &#34;orders&#34;? They are marked: deleted when their consumers settle them, never retried."`},
		"dead": {`data-op="requeue"`, `data-op="delete-dead"`, `data-confirm="Requeue all 3 dead items of queue &#34;orders&#34;? They become due now, attempts reset."`,
			`data-confirm="Delete all 3 dead items of queue &#34;orders&#34;? This cannot be undone."`,
			`data-many="Requeue {n} dead items of queue &#34;orders&#34;? They become due now, attempts reset."`},
	} {
		r := get(t, c, f.TabURL("orders", state))
		if r.status != http.StatusOK || !strings.Contains(r.body, `aria-current="page" class="current" data-state="`+state+`"`) {
			t.Fatalf("tab %s: %d, not current", state, r.status)
		}
		for _, w := range want {
			if !strings.Contains(r.body, w) {
				t.Errorf("tab %s lacks %s", state, w)
			}
		}
		if strings.Contains(r.body, "data-refresh") {
			t.Errorf("tab %s reloads itself under a selection", state)
		}
		// One checkbox per item, in the selection form.
		if n := strings.Count(r.body, `<input type="checkbox" name="idx" value="`); n != int(webtest.FixtureCount[state]) {
			t.Errorf("tab %s: %d checkboxes", state, n)
		}
	}
	if r := get(t, c, f.QueueURL("orders")+"&state=sleeping"); r.status != http.StatusBadRequest {
		t.Errorf("unknown tab: %d, want 400", r.status)
	}
	// Without the script, the confirmation page of a purge names the state
	// and the count too.
	tok := token(t, c, f.QueueURL("orders"))
	r := post(t, c, f.Base+"action", url.Values{"op": {"purge"}, "q": {"orders"}, "state": {"dead"}, "csrf": {tok}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Purge 3 dead items of queue &#34;orders&#34;?") {
		t.Errorf("purge confirmation: %d\n%s", r.status, r.body)
	}
}

// TestFindByID: the search box finds an item by its exact id in any state
// and opens its page; spaces around a pasted id are forgiven; a miss says
// so (404) on the queue page.
func TestFindByID(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	for _, id := range []string{"soon:3", "charge:2", "mail:7", webtest.XSSID} {
		u := f.QueueURL("orders") + "&" + url.Values{"find": {id}}.Encode()
		r := get(t, c, u)
		want := "/dq/item?" + url.Values{"q": {"orders"}, "id": {id}}.Encode()
		if loc := r.header.Get("Location"); r.status != http.StatusSeeOther || loc != want {
			t.Errorf("find %q: %d to %q", id, r.status, loc)
		}
	}
	r := get(t, c, f.QueueURL("orders")+"&find=+mail%3A7+")
	if r.status != http.StatusSeeOther || !strings.Contains(r.header.Get("Location"), "id=mail%3A7") {
		t.Errorf("find with spaces around: %d %q", r.status, r.header.Get("Location"))
	}
	r = get(t, c, f.QueueURL("orders")+"&find=mail:8")
	if r.status != http.StatusNotFound || !strings.Contains(r.body, "No item &#34;mail:8&#34; in queue &#34;orders&#34;, in any state") ||
		!strings.Contains(r.body, `value="mail:8"`) {
		t.Errorf("find a missing id: %d\n%.2000s", r.status, r.body)
	}
	// The search form names the queue hex-encoded, so that any name works.
	if !strings.Contains(r.body, `<input type="hidden" name="qx" value="`+hex.EncodeToString([]byte("orders"))+`">`) {
		t.Error("the search form does not carry the queue as qx")
	}
	odd := f.Base + "queue?" + url.Values{"qx": {hex.EncodeToString([]byte(webtest.OddQueue))}, "find": {"one"}}.Encode()
	if r := get(t, c, odd); r.status != http.StatusSeeOther {
		t.Errorf("find in %q by qx: %d", webtest.OddQueue, r.status)
	}
}

// hexIDs is ids hex-encoded, as the pages' forms send them.
func hexIDs(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, hex.EncodeToString([]byte(id)))
	}
	return out
}

// TestSelectionActions: an action on selected items asks with their
// number ("Requeue 2 dead items of queue "orders"?"), then acts on exactly
// those; run now makes scheduled items due now; a selection is at most a
// page; ids gone or in another state are reported.
func TestSelectionActions(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	ctx := context.Background()
	tok := token(t, c, f.TabURL("orders", "dead"))
	form := func(op, state string, confirmed bool, ids ...string) url.Values {
		v := url.Values{"op": {op}, "qx": {hex.EncodeToString([]byte("orders"))}, "state": {state}, "csrf": {tok}, "idx": hexIDs(ids...)}
		if confirmed {
			v.Set("confirmed", "yes")
		}
		return v
	}
	r := post(t, c, f.Base+"action", form("requeue", "dead", false, "mail:7", "blob:1"))
	if r.status != http.StatusOK || !strings.Contains(r.body, "Requeue 2 dead items of queue &#34;orders&#34;? They become due now, attempts reset.") ||
		strings.Count(r.body, `name="idx"`) != 2 {
		t.Fatalf("confirmation of a selection: %d\n%s", r.status, r.body)
	}
	if f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("an unconfirmed selection changed an item")
	}
	r = post(t, c, f.Base+"action", form("requeue", "dead", true, "mail:7", "blob:1"))
	if r.status != http.StatusOK || !strings.Contains(r.body, "Requeued 2 dead items of queue &#34;orders&#34;: they are due now.") {
		t.Fatalf("requeue 2: %d\n%s", r.status, r.body)
	}
	if f.State(t, "mail:7") != redisq.StateScheduled || f.State(t, "blob:1") != redisq.StateScheduled || f.State(t, webtest.XSSID) != redisq.StateDead {
		t.Fatal("requeue of a selection did not change exactly the selected items")
	}
	if !strings.Contains(r.body, `href="/dq/queue?q=orders&amp;state=dead" id="back"`) {
		t.Errorf("the result does not lead back to the tab:\n%s", r.body)
	}

	// Run now: soon:1 and soon:2 become due, later:1 stays.
	r = post(t, c, f.Base+"action", form("run-now", "scheduled", true, "soon:1", "soon:2"))
	if r.status != http.StatusOK || !strings.Contains(r.body, "Made 2 items of queue &#34;orders&#34; due now.") {
		t.Fatalf("run now: %d\n%s", r.status, r.body)
	}
	now, err := f.C.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for id, due := range map[string]bool{"soon:1": true, "soon:2": true, "soon:3": false} {
		it, err := f.Q.Get(ctx, id)
		if err != nil || (it.Due.After(now.Add(time.Millisecond))) == due || it.State != redisq.StateScheduled {
			t.Errorf("%s after run now: due %v (now %v) %v", id, it.Due, now, err)
		}
	}
	// Run now of an in-flight item changes nothing.
	r = post(t, c, f.Base+"action", form("run-now", "scheduled", true, "charge:1"))
	if r.status != http.StatusConflict || !strings.Contains(r.body, "is in flight") {
		t.Errorf("run now in flight: %d\n%s", r.status, r.body)
	}

	// Delete a mix: a scheduled item, an in-flight one (marked), one gone.
	r = post(t, c, f.Base+"action", form("delete", "", true, "soon:3", "charge:2", "nope"))
	if r.status != http.StatusOK || !strings.Contains(r.body, "Deleted 1 item of queue &#34;orders&#34;. Marked 1 in-flight item") ||
		!strings.Contains(r.body, "Gone meanwhile (acked or deleted): &#34;nope&#34;.") {
		t.Fatalf("delete a mix: %d\n%s", r.status, r.body)
	}
	if f.State(t, "soon:3") != 0 || f.State(t, "charge:2") != redisq.StateInFlight {
		t.Fatal("delete of a mix")
	}
	// Requeue of items that are not dead: nothing changes, 409.
	r = post(t, c, f.Base+"action", form("requeue", "dead", true, "soon:4", "soon:5"))
	if r.status != http.StatusConflict || !strings.Contains(r.body, "Nothing changed for 2 items, not dead (any more): &#34;soon:4&#34;, &#34;soon:5&#34;.") {
		t.Errorf("requeue of scheduled items: %d\n%s", r.status, r.body)
	}

	// At most a page at once; none is a 400 too.
	many := make([]string, dqweb.MaxSelect+1)
	for i := range many {
		many[i] = fmt.Sprint("x", i)
	}
	if r := post(t, c, f.Base+"action", form("delete", "", true, many...)); r.status != http.StatusBadRequest || !strings.Contains(r.body, "at most 50 at once") {
		t.Errorf("%d ids: %d\n%s", len(many), r.status, r.body)
	}
	if r := post(t, c, f.Base+"action", form("delete", "", true)); r.status != http.StatusBadRequest || !strings.Contains(r.body, "select one or more items") {
		t.Errorf("no ids: %d", r.status)
	}
	audit(t, f)
}

func audit(t *testing.T, f *webtest.Fixture) {
	t.Helper()
	r, err := f.Q.Audit(context.Background())
	if err != nil || !r.OK() {
		t.Fatalf("audit: %v %v", err, r.Problems)
	}
}

// TestPauseResumeOnTheDashboard: a paused queue is marked on the overview
// and its page, which offers Resume instead of Pause; both ask first and
// are refused in read-only mode.
func TestPauseResumeOnTheDashboard(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	ctx := context.Background()
	qp := get(t, c, f.QueueURL("orders")).body
	if !strings.Contains(qp, `data-op="pause"`) || strings.Contains(qp, `class="badge paused"`) {
		t.Fatal("a running queue: no Pause button, or marked paused")
	}
	if !strings.Contains(qp, `data-confirm="Pause queue &#34;orders&#34;? Consumers take nothing until it is resumed; enqueues, acks and admin actions go on."`) {
		t.Error("the Pause button does not ask")
	}
	tok := token(t, c, f.QueueURL("orders"))
	r := post(t, c, f.Base+"action", url.Values{"op": {"pause"}, "q": {"orders"}, "csrf": {tok}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Pause queue &#34;orders&#34;?") {
		t.Fatalf("pause unconfirmed: %d", r.status)
	}
	if p, _ := f.Q.Paused(ctx); p {
		t.Fatal("paused unconfirmed")
	}
	r = post(t, c, f.Base+"action", url.Values{"op": {"pause"}, "q": {"orders"}, "csrf": {tok}, "confirmed": {"yes"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Paused queue &#34;orders&#34;") {
		t.Fatalf("pause: %d\n%s", r.status, r.body)
	}
	if p, err := f.Q.Paused(ctx); err != nil || !p {
		t.Fatalf("not paused: %v", err)
	}
	row := section(t, get(t, c, f.Base).body, `data-queue="orders"`, "</tr>")
	if !strings.Contains(row, `<span class="badge paused"`) {
		t.Errorf("the overview does not mark the queue paused:\n%s", row)
	}
	qp = get(t, c, f.QueueURL("orders")).body
	if !strings.Contains(qp, `<span class="badge paused"`) || !strings.Contains(qp, `data-op="resume"`) || strings.Contains(qp, `data-op="pause"`) {
		t.Error("the page of a paused queue: no badge or no Resume button")
	}
	if r := post(t, c, f.Base+"action", url.Values{"op": {"pause"}, "q": {"orders"}, "csrf": {tok}, "confirmed": {"yes"}}); !strings.Contains(r.body, "is already paused; nothing changed") {
		t.Errorf("pause again: %s", r.body)
	}
	r = post(t, c, f.Base+"action", url.Values{"op": {"resume"}, "q": {"orders"}, "csrf": {tok}, "confirmed": {"yes"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Resumed queue &#34;orders&#34;") {
		t.Fatalf("resume: %d\n%s", r.status, r.body)
	}
	if p, _ := f.Q.Paused(ctx); p {
		t.Fatal("still paused")
	}
	// Cross-site, it is refused like every action.
	req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(url.Values{"op": {"pause"}, "q": {"orders"}, "csrf": {tok}, "confirmed": {"yes"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := do(t, c, req); r.status != http.StatusForbidden {
		t.Errorf("cross-site pause: %d", r.status)
	}
	if p, _ := f.Q.Paused(ctx); p {
		t.Fatal("paused cross-site")
	}
}

// TestPagerPastTheEnd: an offset past the end (up to 2^63-1) says so,
// and every link of the pager is an offset within the list.
func TestPagerPastTheEnd(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	for i := range 120 {
		if _, err := f.Q.EnqueueAfter(ctx, fmt.Sprintf("p%03d", i), nil, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	offsets := regexp.MustCompile(`href="[^"]*offset=(-?\d+)[^"]*" rel="(\w+)"`)
	for _, off := range []int64{5000, 131, math.MaxInt64, math.MaxInt64 - 10, 130, 0, 60} {
		r := get(t, c, f.TabURL("orders", "scheduled")+"&offset="+strconv.FormatInt(off, 10))
		if r.status != http.StatusOK {
			t.Fatalf("offset %d: %d", off, r.status)
		}
		p := section(t, r.body, `<p class="pager">`, "</p>")
		links := map[string]int64{}
		for _, m := range offsets.FindAllStringSubmatch(p, -1) {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil || n < 0 || n > 130 {
				t.Errorf("offset %d: link %s to offset %s", off, m[2], m[1])
			}
			links[m[2]] = n
		}
		if off >= 131 {
			if !strings.Contains(p, "past the end: 131 in all") || strings.Contains(p, "of 131") {
				t.Errorf("offset %d: pager %q", off, p)
			}
			if _, ok := links["last"]; links["prev"] != 100 || ok || links["first"] != 0 {
				t.Errorf("offset %d: links %v, want first 0 and prev 100 (the last page)", off, links)
			}
			if _, ok := links["next"]; ok {
				t.Errorf("offset %d: a next link past the end", off)
			}
		}
	}
	// Pages within the list: 61-110 of 131, next 110, last 100.
	r := get(t, c, f.TabURL("orders", "scheduled")+"&offset=60")
	if p := section(t, r.body, `<p class="pager">`, "</p>"); !strings.Contains(p, "61–110 of 131") {
		t.Errorf("pager %q", p)
	}
}

// TestWording: "1 byte", "after 1 attempt", and a lateness bar of the
// first bucket is "on time", not "late by at most 0".
func TestWording(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	ctx := context.Background()
	if err := f.Q.Enqueue(ctx, "tiny", []byte("x"), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	m, err := f.Q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.DeadLetter(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	it := get(t, c, f.ItemURL("orders", "tiny")).body
	if !strings.Contains(it, `data-k="size">1 byte, text<`) {
		t.Errorf("item page: %s", section(t, it, `data-k="size"`, "</dd>"))
	}
	dead := get(t, c, f.TabURL("orders", "dead")).body
	if strings.Contains(dead, "1 attempts") || !strings.Contains(dead, "after 1 attempt</span>") {
		t.Errorf("dead tab says %q", regexp.MustCompile(`after \d+ attempts?`).FindAllString(dead, -1))
	}
	// Deliveries on time: the first bucket of the lateness chart.
	if _, err := f.Q.EnqueueAfter(ctx, "ontime", nil, 0); err != nil {
		t.Fatal(err)
	}
	sum := get(t, c, f.QueueURL("orders")).body
	if strings.Contains(sum, "at most 0<") || !regexp.MustCompile(`<title>\d+ deliver(y|ies) on time \(to the millisecond\)</title>`).MatchString(sum) {
		t.Errorf("lateness tooltips: %q", regexp.MustCompile(`<title>[^<]*deliver[^<]*</title>`).FindAllString(sum, 3))
	}
}

// TestCountersAndErrorRate: the summary shows every counter with its
// rate, and the error rate: of the leases that ended between two readings,
// the share not acked. Here 5 deliveries: 2 acked, 1 nacked, 1
// dead-lettered, and 1 snoozed, which is no failure: 50%.
func TestCountersAndErrorRate(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	ctx := context.Background()
	first := get(t, c, f.QueueURL("orders")).body
	for _, k := range []string{"enqueued", "delivered", "acked", "nacked", "expired", "dead-lettered", "cancelled", "rescheduled", "requeued", "deleted", "skipped", "snoozed", "failed"} {
		if !strings.Contains(first, `<tr data-counter="`+k+`">`) {
			t.Errorf("no counter %s", k)
		}
	}
	if got := count(t, first, "errors"); got != "–" {
		t.Errorf("error rate from one reading: %q", got)
	}
	for i := range 5 {
		if _, err := f.Q.EnqueueAfter(ctx, fmt.Sprint("job:", i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	var ms []*redisq.Message
	for len(ms) < 5 {
		m, err := f.Q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(m.ID, "job:") {
			ms = append(ms, m)
		} else if err := m.Ack(ctx); err != nil { // an overdue fixture item
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // rates need readings a second apart
	for _, m := range ms[:2] {
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms[2].Nack(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ms[3].DeadLetter(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := ms[4].Snooze(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	// The window starts at the first reading: over it, 5+3 deliveries
	// (the fixture's 3 overdue items, acked), 2+3 acks, 1 snooze, in
	// flight unchanged: 2 failed of 7 ended (37.5% if the snooze
	// counted as a failure).
	body := get(t, c, f.QueueURL("orders")).body
	if got := count(t, body, "errors"); got != "28.6%" {
		t.Errorf("error rate %q, want 28.6%% (2 failed of 7 ended)", got)
	}
	row := section(t, get(t, c, f.Base).body, `data-queue="orders"`, "</tr>")
	if got := count(t, row, "errors"); got != "28.6%" {
		t.Errorf("overview error rate %q", got)
	}
	if r := section(t, body, `<tr data-counter="snoozed">`, "</tr>"); !strings.Contains(r, `data-k="total">1<`) {
		t.Errorf("the snoozed counter: %s", r)
	}
	for _, k := range []string{"acked", "nacked", "dead-lettered", "snoozed", "failed"} {
		r := section(t, body, `<tr data-counter="`+k+`">`, "</tr>")
		if !regexp.MustCompile(`data-k="rate">\d+\.\d/s<`).MatchString(r) || strings.Contains(r, `data-k="rate">0.0/s<`) {
			t.Errorf("counter %s has no rate: %s", k, r)
		}
	}
	// The history charts have the readings.
	hist := section(t, body, `<section id="history">`, "</section>")
	if !regexp.MustCompile(`data-series="delivered" data-points="[1-9]`).MatchString(hist) || !strings.Contains(hist, `data-series="dead" data-points="`) {
		t.Errorf("history:\n%s", hist)
	}
}

// TestRatesHistory: the history keeps a point at most every 10 s over
// the last 10 minutes; a line breaks where no reading was kept for 30 s;
// the error rate is failed / (acked + failed), with failed the deliveries
// less the acks and the growth of the in-flight set.
func TestRatesHistory(t *testing.T) {
	r := dqweb.NewRates()
	t0 := time.Unix(2_000_000, 0)
	st := func(at time.Duration, delivered, acked, inFlight int64) redisq.Stats {
		s := redisq.Stats{Now: t0.Add(at), InFlight: inFlight}
		s.Delivered, s.Acked, s.Enqueued = delivered, acked, delivered
		s.Lateness = redisq.Lateness{Bounds: redisq.LatenessBounds(), Counts: make([]int64, len(redisq.LatenessBounds())+1)}
		return s
	}
	r.ObserveView("q", st(0, 100, 90, 10))
	// 20 more deliveries, 12 acks, in flight 10 -> 14: 4 failed of 16.
	v := r.ObserveView("q", st(5*time.Second, 120, 102, 14))
	if !v.Known || !v.ErrKnown || v.ErrorRate != 0.25 || v.Failed != 4.0/5 || v.History != 2 {
		t.Fatalf("%+v", v)
	}
	// Points every 10 s for 3 minutes, then a gap of 2 minutes, then 1
	// minute more: the rates' lines have two runs.
	for s := 10; s <= 180; s += 10 {
		v = r.ObserveView("q", st(time.Duration(s)*time.Second, int64(120+s), int64(102+s), 14))
	}
	for s := 300; s <= 360; s += 10 {
		v = r.ObserveView("q", st(time.Duration(s)*time.Second, int64(120+s), int64(102+s), 14))
	}
	if v.History != 1+18+7 {
		t.Errorf("%d history points, want 26", v.History)
	}
	for _, p := range v.Paths {
		if n := strings.Count(p, "M"); n != 2 {
			t.Errorf("path %q has %d runs, want 2", p, n)
		}
	}
	// Ten minutes on, the first points are gone.
	v = r.ObserveView("q", st(11*time.Minute, 1000, 982, 14))
	if v.History >= 26 {
		t.Errorf("%d points after 11 minutes", v.History)
	}
	// A destroyed queue (counters back to 0) starts a new history.
	if v = r.ObserveView("q", st(12*time.Minute, 0, 0, 0)); v.History != 1 || v.Known {
		t.Errorf("after a reset: %+v", v)
	}
}
