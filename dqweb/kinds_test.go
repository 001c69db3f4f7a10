package dqweb_test

import (
	"context"
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

// Kinds (the issue "Kind as a first-class field of an item"): the lists
// have a Kind column whose links filter the list by kind, the pager keeps
// the filter, and the item page shows the kind, the headers and the
// options of the item's Job.

// addKinds enqueues in f's "orders", scheduled 3h (+i s) from now, the
// items ids of kind kind.
func addKinds(t *testing.T, f *webtest.Fixture, kind string, ids ...string) {
	t.Helper()
	for i, id := range ids {
		if _, err := f.Q.Add(context.Background(), redisq.EnqueueItem{ID: id, Payload: []byte("k"), After: 3*time.Hour + time.Duration(i)*time.Second,
			Job: redisq.Job{Kind: kind}}); err != nil {
			t.Fatal(err)
		}
	}
}

// takeKind makes item id of kind kind of f's "orders" in flight (due long
// ago, so that Take leases it first), then dead with reason unless reason
// is "".
func takeKind(t *testing.T, f *webtest.Fixture, kind, id, reason string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: id, Payload: []byte("x"), At: time.Unix(1, 0), Job: redisq.Job{Kind: kind}}); err != nil {
		t.Fatal(err)
	}
	m, err := f.Q.Take(ctx)
	if err != nil || m.ID != id || m.Kind != kind {
		t.Fatalf("took %v (%v), want %s of kind %q", m, err, id, kind)
	}
	if reason != "" {
		if _, err := m.DeadLetter(ctx, reason); err != nil {
			t.Fatal(err)
		}
	}
}

// listed returns the ids listed in the list section of a tab's page, in
// order, as shown (dqweb.Shown), and the kind cell (or, on the dead tab,
// the kind span) of each.
func listed(t *testing.T, body, state string) (ids []string, kinds map[string]string) {
	t.Helper()
	s := section(t, body, `<section id="`+state+`" class="list">`, "</section>")
	re := regexp.MustCompile(`<tr data-id="([^"]*)">(?s:.*?)(<td class="kind">.*?</td>)`)
	if state == "dead" {
		re = regexp.MustCompile(`<article class="deaditem" data-id="([^"]*)">\n<div class="head">(?s:.*?)(<span class="muted kind">.*?</span>|</div>)`)
	}
	kinds = map[string]string{}
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		id := html.UnescapeString(m[1])
		ids, kinds[id] = append(ids, id), m[2]
	}
	return ids, kinds
}

// kindLink is the href of the kind link in cell, unescaped and absolute.
func kindLink(t *testing.T, f *webtest.Fixture, cell string) string {
	t.Helper()
	m := regexp.MustCompile(`<a href="([^"]*)" class="kind">`).FindStringSubmatch(cell)
	if m == nil {
		t.Fatalf("no kind link in %s", cell)
	}
	return f.Srv.URL + html.UnescapeString(m[1])
}

// TestKindColumn: each state's list has a Kind column, the kind of each
// item a link to the list of its state filtered by it, "–" for an item
// of no kind; the list of a kind holds exactly its items, says it is
// filtered with a link to all kinds, and offers no action on the whole
// state (they would act on every kind); the selection's actions stay.
func TestKindColumn(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	addKinds(t, f, "refund", "r:1", "r:2", "r:3")
	addKinds(t, f, "digest", "d:1", "d:2")
	takeKind(t, f, "refund", "fr:1", "")
	takeKind(t, f, "digest", "dr:1", "max attempts: bad")
	takeKind(t, f, "refund", "dr:2", "max attempts: bad")
	takeKind(t, f, "refund", "dr:3", "gone")
	c := client(t)

	sched := get(t, c, f.TabURL("orders", "scheduled"))
	checkPage(t, "scheduled tab", sched, 200<<10)
	if !strings.Contains(sched.body, `<th>ID</th><th>Kind</th><th>Due</th>`) {
		t.Errorf("no Kind column on the scheduled tab: %s", section(t, sched.body, `<thead>`, `</thead>`))
	}
	ids, kinds := listed(t, sched.body, "scheduled")
	if len(ids) != 16 {
		t.Fatalf("scheduled tab lists %d items, want 16: %q", len(ids), ids)
	}
	want := `<td class="kind"><a href="/dq/queue?q=orders&amp;state=scheduled&amp;kind=refund" class="kind">refund</a></td>`
	if kinds["r:2"] != want {
		t.Errorf("r:2's kind cell\n got %s\nwant %s", kinds["r:2"], want)
	}
	if got := kinds["late:1"]; got != `<td class="kind"><span class="muted">–</span></td>` {
		t.Errorf("an item of no kind: %s", got)
	}

	for _, tc := range []struct {
		state, id string // the row whose link is followed
		want      []string
		kind      string
	}{
		{"scheduled", "r:1", []string{"r:1", "r:2", "r:3"}, "refund"},
		{"scheduled", "d:2", []string{"d:1", "d:2"}, "digest"},
		{"inflight", "fr:1", []string{"fr:1"}, "refund"},
		{"dead", "dr:1", []string{"dr:1"}, "digest"},
		{"dead", "dr:3", []string{"dr:2", "dr:3"}, "refund"},
	} {
		tab := get(t, c, f.TabURL("orders", tc.state))
		_, kinds := listed(t, tab.body, tc.state)
		u := kindLink(t, f, kinds[tc.id])
		if want := f.TabURL("orders", tc.state) + "&kind=" + tc.kind; u != want {
			t.Errorf("%s's kind link %s, want %s", tc.id, u, want)
		}
		r := get(t, c, u)
		checkPage(t, "the list of "+tc.kind, r, 200<<10)
		got, _ := listed(t, r.body, tc.state)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("the %s list of kind %s holds %q, want %q", tc.state, tc.kind, got, tc.want)
		}
		filter := section(t, r.body, `<div class="filter" id="kindfilter">`, "</div>")
		noun := map[string]string{"scheduled": "scheduled items", "inflight": "in-flight items", "dead": "dead items"}[tc.state]
		for _, w := range []string{`Only the ` + noun + ` of kind <bdi class="kind">&#34;` + tc.kind + `&#34;</bdi>:`,
			`<a href="/dq/queue?q=orders&amp;state=` + tc.state + `" id="allkinds">All kinds</a>`, `id="kind-whole"`} {
			if !strings.Contains(filter, w) {
				t.Errorf("the filter of the %s list of %s lacks %s:\n%s", tc.state, tc.kind, w, filter)
			}
		}
		if strings.Contains(r.body, `<div class="actions whole">`) || strings.Contains(r.body, `value="purge"`) || strings.Contains(r.body, `value="requeue-all"`) {
			t.Errorf("the %s list of %s offers actions on the whole state", tc.state, tc.kind)
		}
		if !strings.Contains(r.body, `<form method="post" action="/dq/action" id="sel"`) {
			t.Errorf("the %s list of %s has no selection", tc.state, tc.kind)
		}
		if p := section(t, r.body, `<p class="pager">`, "</p>"); !strings.Contains(p, fmt.Sprintf("%d item", len(tc.want))+map[bool]string{true: "", false: "s"}[len(tc.want) == 1]+" of this kind here") {
			t.Errorf("the pager of the %s list of %s: %q", tc.state, tc.kind, p)
		}
	}
	// The dead list of a kind is not grouped by cause (the grouping counts
	// every kind): it links to the dead tab, which is.
	r := get(t, c, f.TabURL("orders", "dead")+"&kind=refund")
	if strings.Contains(r.body, `<section id="reasons">`) || !strings.Contains(r.body, `id="reasons-link">The dead items of every kind are grouped by cause on <a href="/dq/queue?q=orders&amp;state=dead">the dead tab</a>.`) {
		t.Errorf("the dead list of refund and the grouping:\n%s", section(t, r.body, `<nav class="tabs"`, `<section id="dead"`))
	}
	// A kind no item has: an empty list that says so.
	r = get(t, c, f.TabURL("orders", "scheduled")+"&kind=nope")
	if ids, _ := listed(t, r.body, "scheduled"); len(ids) != 0 || !strings.Contains(section(t, r.body, `<p class="pager">`, "</p>"), "no scheduled items of this kind") {
		t.Errorf("the list of a kind none has: %q, %s", ids, section(t, r.body, `<p class="pager">`, "</p>"))
	}
	// Unfiltered lists keep their actions on the whole state, and no filter.
	if strings.Contains(sched.body, `id="kindfilter"`) || !strings.Contains(sched.body, `value="purge"`) {
		t.Error("the unfiltered scheduled tab: a filter shown or no purge")
	}
}

// TestKindWithReason: on the dead list of a cause, the kind links keep
// the cause; the list of a cause and a kind holds the items of both, its
// cause filter links to every cause of the kind, its kind filter to every
// kind of the cause, and it offers no action on the cause (it would act
// on every kind).
func TestKindWithReason(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	takeKind(t, f, "refund", "a:1", "bad")
	takeKind(t, f, "digest", "a:2", "bad")
	takeKind(t, f, "refund", "a:3", "other")
	takeKind(t, f, "refund", "a:4", "bad")
	c := client(t)
	bad := get(t, c, f.TabURL("orders", "dead")+"&reason=bad")
	ids, kinds := listed(t, bad.body, "dead")
	if fmt.Sprint(ids) != "[a:1 a:2 a:4]" {
		t.Fatalf("the list of bad: %q", ids)
	}
	want := `<span class="muted kind">kind <a href="/dq/queue?q=orders&amp;state=dead&amp;kind=refund&amp;reason=bad" class="kind"><bdi>refund</bdi></a></span>`
	if kinds["a:1"] != want {
		t.Errorf("a:1's kind on the list of bad\n got %s\nwant %s", kinds["a:1"], want)
	}
	if !strings.Contains(bad.body, `value="requeue-reason"`) {
		t.Error("the list of a cause has no requeue-reason")
	}
	r := get(t, c, kindLink(t, f, kinds["a:1"]))
	checkPage(t, "the list of bad and refund", r, 200<<10)
	if ids, _ := listed(t, r.body, "dead"); fmt.Sprint(ids) != "[a:1 a:4]" {
		t.Errorf("the list of bad and refund: %q", ids)
	}
	reason := section(t, r.body, `<div class="filter" id="filter">`, "</div>")
	kind := section(t, r.body, `<div class="filter" id="kindfilter">`, "</div>")
	for _, w := range []string{`died of <span class="reason">&#34;bad&#34;</span> (of every kind): 3 items.`, `<a href="/dq/queue?q=orders&amp;state=dead&amp;kind=refund" id="unfilter">`} {
		if !strings.Contains(reason, w) {
			t.Errorf("the cause's filter lacks %s:\n%s", w, reason)
		}
	}
	for _, w := range []string{`Only the dead items of kind <bdi class="kind">&#34;refund&#34;</bdi>, of those that died of the cause above:`, `<a href="/dq/queue?q=orders&amp;state=dead&amp;reason=bad" id="allkinds">`} {
		if !strings.Contains(kind, w) {
			t.Errorf("the kind's filter lacks %s:\n%s", w, kind)
		}
	}
	if strings.Contains(r.body, `value="requeue-reason"`) || strings.Contains(r.body, `value="delete-reason"`) {
		t.Error("the list of a cause and a kind offers the actions on the whole cause")
	}
	if p := section(t, r.body, `<p class="pager">`, "</p>"); !strings.Contains(p, "2 items of this cause and kind here") {
		t.Errorf("the pager: %q", p)
	}
}

// TestKindPaging: a kind's list is paged through the state's set: a page
// examines up to 1000 items, so it may hold none of the kind and still
// have a next page, which goes on to its items; every link of the pager
// keeps the filter.
func TestKindPaging(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	var items []redisq.EnqueueItem
	for i := range 1010 {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprint("common:", i), After: 2 * time.Hour, Job: redisq.Job{Kind: "common"}})
	}
	if _, err := f.Q.EnqueueMany(ctx, items); err != nil {
		t.Fatal(err)
	}
	addKinds(t, f, "rare", "rare:1", "rare:2", "rare:3")
	c := client(t)
	u := f.TabURL("orders", "scheduled") + "&kind=rare"
	var seen []string
	for page := 0; ; page++ {
		r := get(t, c, u)
		if r.status != http.StatusOK {
			t.Fatalf("page %d: %d", page, r.status)
		}
		ids, _ := listed(t, r.body, "scheduled")
		p := section(t, r.body, `<p class="pager">`, "</p>")
		if page == 0 && (len(ids) != 0 || !strings.Contains(p, "none of this kind among the scheduled items examined here (up to 1,000 a page)")) {
			t.Errorf("the first page: %q, pager %q; want none, and a next page", ids, p)
		}
		seen = append(seen, ids...)
		for _, l := range regexp.MustCompile(`<a href="([^"]*)" rel="(\w+)">`).FindAllStringSubmatch(p, -1) {
			if lu, err := url.Parse(html.UnescapeString(l[1])); err != nil || lu.Query().Get("kind") != "rare" {
				t.Errorf("page %d: the %s link %s loses the filter", page, l[2], l[1])
			}
		}
		next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(p)
		if next == nil {
			if page == 0 || !strings.Contains(p, `rel="first"`) {
				t.Errorf("page %d ends the list: %q", page, p)
			}
			break
		}
		if page > 3 {
			t.Fatal("more than 4 pages for 1024 scheduled items")
		}
		u = f.Srv.URL + html.UnescapeString(next[1])
	}
	if fmt.Sprint(seen) != "[rare:1 rare:2 rare:3]" {
		t.Errorf("the list of rare holds %q", seen)
	}
}

// TestKindBadRequests: a kind on a tab that is no list, too long for any
// kind or not UTF-8 is a 400 that says why, decided before the list is
// read.
func TestKindBadRequests(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	for _, b := range []struct{ u, says string }{
		{f.QueueURL("orders") + "&kind=refund", "a kind filters the lists of items (the tabs scheduled, inflight, dead and completed), not the summary"},
		{f.TabURL("orders", "recurring") + "&kind=refund", "not the &#34;recurring&#34; tab"},
		{f.TabURL("orders", "workers") + "&kind=refund", "not the &#34;workers&#34; tab"},
		{f.TabURL("orders", "dead") + "&kind=" + strings.Repeat("k", redisq.MaxKindLen+1), "kind of 257 bytes is longer than any (at most 256 bytes)"},
		{f.TabURL("orders", "scheduled") + "&kind=%ff", `kind &#34;\xff&#34; is not UTF-8`},
	} {
		if r := get(t, c, b.u); r.status != http.StatusBadRequest || !strings.Contains(r.body, b.says) {
			t.Errorf("%.120s: %d, want 400 saying %q\n%.3000s", b.u, r.status, b.says, r.body)
		}
	}
	// The longest kind is a filter.
	if r := get(t, c, f.TabURL("orders", "dead")+"&kind="+strings.Repeat("k", redisq.MaxKindLen)); r.status != http.StatusOK {
		t.Errorf("a kind of MaxKindLen bytes: %d", r.status)
	}
}

// TestPartitionedKindColumn: a partitioned queue's merged lists show the
// kind of each item, a link to the partitioned queue's list of that kind,
// which is merged across its partitions and paged by its cursor, the
// filter kept by the pager.
func TestPartitionedKindColumn(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	ctx := context.Background()
	var refunds []string
	parts := map[int]bool{}
	for i := 0; len(refunds) < 4 || len(parts) < 2; i++ {
		id := fmt.Sprint("pk:", i)
		if _, err := f.p.Add(ctx, redisq.EnqueueItem{ID: id, After: time.Minute + time.Duration(i)*time.Second, Job: redisq.Job{Kind: "refund"}}); err != nil {
			t.Fatal(err)
		}
		refunds, parts[f.p.PartitionOf(id)] = append(refunds, id), true
	}
	var bulk []redisq.EnqueueItem
	for i := range 55 {
		bulk = append(bulk, redisq.EnqueueItem{ID: fmt.Sprintf("bulk:%02d", i), After: 4*time.Hour + time.Duration(i)*time.Second, Job: redisq.Job{Kind: "bulk"}})
	}
	for _, it := range bulk {
		if _, err := f.p.Add(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	r := get(t, c, f.TabURL(pname, "scheduled"))
	checkPage(t, "partitioned scheduled tab", r, 200<<10)
	if !strings.Contains(r.body, `<th>ID</th><th class="n">Partition</th><th>Kind</th><th>Due</th>`) {
		t.Errorf("no Kind column: %s", section(t, r.body, `<thead>`, `</thead>`))
	}
	_, kinds := listed(t, r.body, "scheduled")
	want := `<td class="kind"><a href="/dq/queue?q=jobs&amp;state=scheduled&amp;kind=refund" class="kind">refund</a></td>`
	if got := kinds["pk:0"]; got != want {
		t.Errorf("pk:0's kind cell\n got %s\nwant %s", got, want)
	}
	if got := kinds["s000"]; got != `<td class="kind"><span class="muted">–</span></td>` {
		t.Errorf("s000's kind cell: %s", got)
	}
	l := get(t, c, kindLink(t, f.Fixture, kinds["pk:0"]))
	checkPage(t, "partitioned list of refund", l, 200<<10)
	ids, ps, next := listIDs(t, f, l.body, "scheduled")
	if fmt.Sprint(ids) != fmt.Sprint(refunds) || next != "" {
		t.Errorf("the list of refund: %q (partitions %q, next %q), want %q", ids, ps, next, refunds)
	}
	if p := section(t, l.body, `<p class="pager">`, "</p>"); !strings.Contains(p, fmt.Sprintf("%d items of this kind here", len(refunds))) {
		t.Errorf("the pager of refund: %q", p)
	}
	if !strings.Contains(l.body, `<a href="/dq/queue?q=jobs&amp;state=scheduled" id="allkinds">All kinds</a>`) || strings.Contains(l.body, `value="purge"`) {
		t.Error("the list of refund: no link to all kinds, or a purge")
	}
	// Paged by the cursor, the filter kept.
	var seen []string
	u := f.TabURL(pname, "scheduled") + "&kind=bulk"
	for page := 0; u != ""; page++ {
		if page > 2 {
			t.Fatal("more than 3 pages of 55 items")
		}
		r := get(t, c, u)
		ids, _, next := listIDs(t, f, r.body, "scheduled")
		seen = append(seen, ids...)
		if next != "" {
			nu, err := url.Parse(next)
			if err != nil || nu.Query().Get("kind") != "bulk" || nu.Query().Get("cursor") == "" {
				t.Fatalf("the next page %s loses the filter or the cursor", next)
			}
		}
		u = next
	}
	if len(seen) != 55 || seen[0] != "bulk:00" || seen[54] != "bulk:54" {
		t.Errorf("the list of bulk, paged: %d items %q", len(seen), seen)
	}
}

// TestItemPageJob: the item page shows the kind (a link to the list of
// its state and kind), the headers sorted by name, and each option of its
// Job that is set, and none of those that are not.
func TestItemPageJob(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	notAfter := time.Now().Add(90 * time.Minute).Truncate(time.Millisecond)
	headers := map[string]string{"traceparent": "00-4bf92f3577b34da6-01", "tenant": "acme", "a": "", "Zed": "z"}
	for i := range 8 {
		headers[fmt.Sprintf("x-%d", 7-i)] = fmt.Sprint(i)
	}
	full := redisq.Job{Kind: "refund", Headers: headers, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		Timeout: 30 * time.Second, NotAfter: notAfter, Retention: 24 * time.Hour}
	if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: "job:full", Payload: []byte(`{"order":42}`), After: time.Hour, Job: full}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: "job:nolimit", After: time.Hour, Job: redisq.Job{MaxAttempts: -1, NotAfter: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	r := get(t, c, f.ItemURL("orders", "job:full"))
	checkPage(t, "item page", r, 100<<10)
	dl := section(t, r.body, `<dl class="fields">`, "</dl>")
	for _, w := range []string{
		`<dt>kind</dt><dd data-k="kind" class="kind"><a href="/dq/queue?q=orders&amp;state=scheduled&amp;kind=refund" class="kind">refund</a></dd>`,
		`<dt>max attempts</dt><dd data-k="max-attempts">5 <span class="muted note">(its own, not the queue&#39;s)</span></dd>`,
		`<dt>backoff</dt><dd data-k="backoff">1s doubling, at most 1m <span class="muted note">`,
		`<dt>timeout</dt><dd data-k="timeout">30s <span class="muted note">(each run of a Worker&#39;s handler)</span></dd>`,
		`<dt>not after</dt><dd data-k="not-after"><time datetime="` + notAfter.UTC().Format(time.RFC3339Nano) + `"`,
		`<span class="abs">` + notAfter.UTC().Format("2006-01-02 15:04:05.000 UTC") + `</span> <span class="muted note">(a Worker that claims it later dead-letters it unrun)</span>`,
		`<dt>retention</dt><dd data-k="retention">24h <span class="muted note">(kept that long once acked)</span></dd>`,
	} {
		if !strings.Contains(dl, w) {
			t.Errorf("the item's fields lack %s\n%s", w, dl)
		}
	}
	hs := section(t, r.body, `<section id="headers">`, "</section>")
	var names []string
	for _, m := range regexp.MustCompile(`<tr><td class="hname">([^<]*)</td><td class="hvalue">([^<]*)</td></tr>`).FindAllStringSubmatch(hs, -1) {
		names = append(names, html.UnescapeString(m[1])+"="+html.UnescapeString(m[2]))
	}
	want := `[Zed=z a="" tenant=acme traceparent=00-4bf92f3577b34da6-01 x-0=7 x-1=6 x-2=5 x-3=4 x-4=3 x-5=2 x-6=1 x-7=0]`
	if fmt.Sprint(names) != want {
		t.Errorf("headers\n got %s\nwant %s", names, want)
	}
	if strings.Contains(hs, `id="more-headers"`) {
		t.Error("a note of more headers with all of them listed")
	}

	// No limit, and a NotAfter past.
	r = get(t, c, f.ItemURL("orders", "job:nolimit"))
	dl = section(t, r.body, `<dl class="fields">`, "</dl>")
	for _, w := range []string{`<dt>kind</dt><dd data-k="kind" class="kind"><span class="muted">none</span></dd>`, `<dd data-k="max-attempts">no limit `,
		`(past: a Worker that claims it dead-letters it unrun)`} {
		if !strings.Contains(dl, w) {
			t.Errorf("job:nolimit's fields lack %s\n%s", w, dl)
		}
	}
	for _, no := range []string{`data-k="backoff"`, `data-k="timeout"`, `data-k="retention"`} {
		if strings.Contains(dl, no) {
			t.Errorf("job:nolimit shows %s, which is not set", no)
		}
	}
	// An item of no Job: no option, no headers.
	r = get(t, c, f.ItemURL("orders", "mail:7"))
	if strings.Contains(r.body, `<section id="headers">`) || regexp.MustCompile(`data-k="(max-attempts|backoff|timeout|not-after|retention)"`).MatchString(r.body) {
		t.Errorf("mail:7, of no Job, shows headers or options:\n%s", section(t, r.body, `<dl class="fields">`, "</dl>"))
	}
	// A dead item's kind links to the dead list of its kind.
	takeKind(t, f, "digest", "job:dead", "bad")
	r = get(t, c, f.ItemURL("orders", "job:dead"))
	if !strings.Contains(r.body, `<dd data-k="kind" class="kind"><a href="/dq/queue?q=orders&amp;state=dead&amp;kind=digest" class="kind">digest</a></dd>`) {
		t.Errorf("a dead item's kind: %s", section(t, r.body, `<dl class="fields">`, "</dl>"))
	}

	// Many headers: the first headersShown by name, the others counted.
	many := map[string]string{}
	for i := range 150 {
		many[fmt.Sprintf("h%03d", i)] = "v"
	}
	if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: "job:many", After: time.Hour, Job: redisq.Job{Headers: many}}); err != nil {
		t.Fatal(err)
	}
	r = get(t, c, f.ItemURL("orders", "job:many"))
	hs = section(t, r.body, `<section id="headers">`, "</section>")
	if n := strings.Count(hs, `<td class="hname">`); n != 100 || !strings.Contains(hs, `<td class="hname">h099</td>`) || strings.Contains(hs, `h100`) ||
		!strings.Contains(hs, `And 50 more headers, not listed: <code>dqctl show -json</code> prints them all.`) {
		t.Errorf("150 headers: %d listed\n%.500s", n, hs[max(0, len(hs)-500):])
	}
}

// Hostile kinds and headers: markup, a bidi override, a control, and a
// kind of right-to-left letters (printable: shown as it is, isolated).
const (
	xssKind  = `k"'><script>alert(4)</script>`
	rtlKind  = "refund\u202egnp.exe"
	hebKind  = "החזר"
	xssHName = `<b onmouseover=alert(5)>h`
	rtlHName = "trace\u202e\x1b"
)

// TestHostileKinds: hostile kinds and header names and values are shown
// escaped (Go-quoted as ids are, cut when long), never as markup or raw
// bidi characters, in sentences inside a <bdi>; the kind's link carries
// the exact bytes, query-escaped, and lists exactly the items of that
// kind.
func TestHostileKinds(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	long := strings.Repeat("V", 5000)
	for _, k := range []string{xssKind, rtlKind, hebKind} {
		addKinds(t, f, k, "of:"+k)
		takeKind(t, f, k, "dead:"+k, "bad")
	}
	addKinds(t, f, rtlKind+"x", "near") // another kind, by one byte
	hostile := redisq.Job{Kind: rtlKind, Headers: map[string]string{xssHName: webtest.XSSReason, rtlHName: "v\u202e\u2066x", "long": long}}
	if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: "hostile", After: 4 * time.Hour, Job: hostile}); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	pages := map[string]response{}
	for _, s := range []string{"scheduled", "dead"} {
		pages[s] = get(t, c, f.TabURL("orders", s))
	}
	for _, k := range []string{xssKind, rtlKind, hebKind} {
		for _, s := range []string{"scheduled", "dead"} {
			r := pages[s]
			checkPage(t, s+" tab", r, 300<<10)
			id := dqweb.Shown(map[string]string{"scheduled": "of:", "dead": "dead:"}[s] + k)
			_, kinds := listed(t, r.body, s)
			cell := kinds[id]
			href := html.EscapeString("/dq/queue?q=orders&state=" + s + "&" + url.Values{"kind": {k}}.Encode())
			shown := html.EscapeString(dqweb.Shown(k))
			want := `<td class="kind"><a href="` + href + `" class="kind">` + shown + `</a></td>`
			if s == "dead" {
				want = `<span class="muted kind">kind <a href="` + href + `" class="kind"><bdi>` + shown + `</bdi></a></span>`
			}
			if cell != want {
				t.Errorf("the kind of %+q on the %s tab\n got %s\nwant %s", id, s, cell, want)
			}
			l := get(t, c, kindLink(t, f, cell))
			checkPage(t, fmt.Sprintf("the %s list of %+q", s, k), l, 200<<10)
			ids, _ := listed(t, l.body, s)
			wantIDs := []string{id}
			if s == "scheduled" && k == rtlKind {
				wantIDs = append(wantIDs, "hostile") // and not "near", of a kind one byte longer
			}
			if fmt.Sprint(ids) != fmt.Sprint(wantIDs) {
				t.Errorf("the %s list of %+q holds %q, want %q", s, k, ids, wantIDs)
			}
			if f := section(t, l.body, `<div class="filter" id="kindfilter">`, "</div>"); !strings.Contains(f, `<bdi class="kind">`+html.EscapeString(dqweb.Quoted(k))+`</bdi>`) {
				t.Errorf("the filter of %+q: %s", k, f)
			}
		}
	}
	for _, raw := range []string{"<script>alert(4)", "<b onmouseover", webtest.XSSReason} {
		for s, r := range pages {
			if strings.Contains(r.body, raw) {
				t.Errorf("the %s tab holds %q unescaped", s, raw)
			}
		}
	}
	if !strings.Contains(pages["scheduled"].body, `>&#34;refund\u202egnp.exe&#34;</a>`) || !strings.Contains(pages["scheduled"].body, `>`+hebKind+`</a>`) {
		t.Error("the bidi kind is not shown Go-quoted, or the Hebrew one not as it is")
	}

	r := get(t, c, f.ItemURL("orders", "hostile"))
	checkPage(t, "item page", r, 100<<10)
	if inlineHandler(r.body) || strings.Count(r.body, "<script") != 1 {
		t.Error("markup from a header reached the item page")
	}
	for _, raw := range []string{"<b onmouseover", webtest.XSSReason, long} {
		if strings.Contains(r.body, raw) {
			t.Errorf("the item page holds %.40q unescaped or uncut", raw)
		}
	}
	hs := section(t, r.body, `<section id="headers">`, "</section>")
	for _, w := range []string{
		`<td class="hname">` + html.EscapeString(xssHName) + `</td><td class="hvalue">` + html.EscapeString(webtest.XSSReason) + `</td>`,
		`<td class="hname">long</td><td class="hvalue">` + strings.Repeat("V", 2000) + `… (5000 bytes)</td>`,
		`<td class="hname">&#34;trace\u202e\x1b&#34;</td><td class="hvalue">&#34;v\u202e\u2066x&#34;</td>`,
	} {
		if !strings.Contains(hs, w) {
			t.Errorf("the headers lack %s\n%.3000s", w, hs)
		}
	}
	if !strings.Contains(r.body, `<dd data-k="kind" class="kind"><a href="`+html.EscapeString("/dq/queue?q=orders&state=scheduled&kind=refund%E2%80%AEgnp.exe")+`" class="kind">&#34;refund\u202egnp.exe&#34;</a></dd>`) {
		t.Errorf("the item's kind: %s", section(t, r.body, `<dl class="fields">`, "</dl>"))
	}
}

// TestItemPageUniqueKey: the item page shows a unique key quoted, with
// its markup and control characters escaped, and what its window does.
func TestItemPageUniqueKey(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	for id, j := range map[string]redisq.Job{
		"u": {UniqueKey: "<b>k\u202e", UniqueFor: time.Hour},
		"d": {UniqueKey: "tenant:7", UniqueFor: 30 * time.Second, Debounce: true},
	} {
		if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: id, After: time.Hour, Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	for id, want := range map[string]string{
		"u": `<dt>unique key</dt><dd data-k="unique">&#34;&lt;b&gt;k\u202e&#34; <span class="muted note">(no other enqueue of the key for 1h after its own`,
		"d": `<dt>unique key</dt><dd data-k="unique">&#34;tenant:7&#34; <span class="muted note">(debounced: an enqueue of the key within 30s replaces it while it waits)`,
	} {
		r := get(t, c, f.ItemURL("orders", id))
		checkPage(t, "item page", r, 100<<10)
		if dl := section(t, r.body, `<dl class="fields">`, "</dl>"); !strings.Contains(dl, want) {
			t.Errorf("item %s: the fields lack %s\n%s", id, want, dl)
		}
	}
}

// TestItemPageRateSlot: an item over its limit key's rate limit shows its
// limit key, escaped, and the slot it waits for.
func TestItemPageRateSlot(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	key := "<b>t\u202e"
	if err := f.Q.SetRateLimit(ctx, key, redisq.RateLimit{N: 1, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: id, Job: redisq.Job{LimitKey: key}}); err != nil {
			t.Fatal(err)
		}
	}
	// Claim what is due (the fixture's overdue items too) until nothing
	// is: r1 is claimed, r2 waits.
	for took := map[string]bool{}; ; {
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		ms, err := f.Q.TakeBatch(tctx, 100)
		cancel()
		if err != nil {
			if !took["r1"] || took["r2"] {
				t.Fatalf("claimed %v, then %v", took, err)
			}
			break
		}
		for _, m := range ms {
			took[m.ID] = true
		}
	}
	c := client(t)
	r := get(t, c, f.ItemURL("orders", "r2"))
	checkPage(t, "item page", r, 100<<10)
	dl := section(t, r.body, `<dl class="fields">`, "</dl>")
	for _, want := range []string{
		`<dt>limit key</dt><dd data-k="limit">&#34;&lt;b&gt;t\u202e&#34;`,
		`<dt>waits for a slot</dt><dd data-k="rate-slot">`, "in 1h0m0s", "it is claimed at this slot",
	} {
		if !strings.Contains(dl, want) {
			t.Errorf("the fields lack %s\n%s", want, dl)
		}
	}
	// Run now leaves it in its place: the limit holds.
	if r := runNow(t, f, c, "r2"); r.status != http.StatusOK || !strings.Contains(r.body, "Item &#34;r2&#34; of queue &#34;orders&#34; is due and waits for a slot under its limit key&#39;s rate limit: left in its place (nothing changed)") {
		t.Errorf("run now of a waiting item: %d\n%s", r.status, r.body)
	}
	if it, err := f.Q.Get(ctx, "r2"); err != nil || it.RateSlot.IsZero() {
		t.Errorf("after run now: %+v, %v", it, err)
	}
}

// The item page says that an item waits for a place under its limit key's
// concurrency limit.
func TestItemPageWaitsForPlace(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if err := f.Q.SetConcurrencyLimit(ctx, "acct", 1); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"p1", "p2"} {
		if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: id, At: time.Unix(1, 0), Job: redisq.Job{LimitKey: "acct"}}); err != nil {
			t.Fatal(err)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	ms, err := f.Q.TakeBatch(tctx, 100)
	cancel()
	if err != nil || len(ms) == 0 || ms[0].ID != "p1" {
		t.Fatalf("claimed %v, %v", ms, err)
	}
	c := client(t)
	r := get(t, c, f.ItemURL("orders", "p2"))
	checkPage(t, "item page", r, 100<<10)
	dl := section(t, r.body, `<dl class="fields">`, "</dl>")
	if want := `<dt>waits for a place</dt><dd data-k="place">under its limit key&#39;s concurrency limit`; !strings.Contains(dl, want) {
		t.Errorf("the fields lack %s\n%s", want, dl)
	}
	// Run now leaves it in its place: the limit holds.
	if r := runNow(t, f, c, "p2"); r.status != http.StatusOK || !strings.Contains(r.body, "Item &#34;p2&#34; of queue &#34;orders&#34; is due and waits for a place under its limit key&#39;s concurrency limit: left in its place (nothing changed)") {
		t.Errorf("run now of a waiting item: %d\n%s", r.status, r.body)
	}
	if it, err := f.Q.Get(ctx, "p2"); err != nil || !it.WaitsForPlace {
		t.Errorf("after run now: %+v, %v", it, err)
	}
}
