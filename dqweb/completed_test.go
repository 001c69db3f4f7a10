package dqweb_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// Completed items (issue 26): acked items whose Job has a Retention, kept
// with their results until they expire.

// The results of the completed items of queue "done".
var (
	okResult   = `{"ok":true,"refund":{"id":7,"cents":1250}}`
	evilResult = webtest.XSSPayload + " rtl\u202egnp.exe \x1b[31mred\x07 <b>bold</b>"
	binResult  = webtest.BinaryLoad[:64]
)

// completeItem adds item id of kind to q (due now), takes it, sets its
// result and acks it: completed, kept for an hour.
func completeItem(t testing.TB, q interface {
	Add(context.Context, redisq.EnqueueItem) (time.Time, error)
	Take(context.Context) (*redisq.Message, error)
}, id, kind string, result []byte) {
	t.Helper()
	ctx := context.Background()
	if _, err := q.Add(ctx, redisq.EnqueueItem{ID: id, Payload: []byte(`{"order":1}`), Job: redisq.Job{Kind: kind, Retention: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	m, err := q.Take(ctx)
	if err != nil || m.ID != id {
		t.Fatalf("took %v %v, want %s", m, err, id)
	}
	if err := m.SetResult(result); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// doneQueue adds queue "done" to f with 5 completed items: ok:1 (a JSON
// result), evil (markup, a bidi override, controls), bin (binary), none
// (no result) and big, whose result Redis holds at 10 MiB (over
// MaxResultBytes: written to its hash, as a hostile writer could).
func doneQueue(t testing.TB, f *webtest.Fixture) *redisq.Queue {
	t.Helper()
	ctx := context.Background()
	q, err := redisq.New(ctx, f.C, "done")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	completeItem(t, q, "ok:1", "refund", []byte(okResult))
	completeItem(t, q, "evil", "refund", []byte(evilResult))
	completeItem(t, q, "bin", "export", binResult)
	completeItem(t, q, "none", "ping", nil)
	completeItem(t, q, "big", "export", []byte("small"))
	if err := f.C.HSet(ctx, "{dq:done}:m:big", "res", bytes.Repeat([]byte("<R>"), (10<<20)/3+1)[:10<<20]).Err(); err != nil {
		t.Fatal(err)
	}
	if st, err := q.Stats(ctx); err != nil || st.Completed != 5 {
		t.Fatalf("Stats of done: %+v %v", st, err)
	}
	return q
}

// row is the list's row of item id (shown as it is).
func itemRowOf(t *testing.T, body, id string) string {
	t.Helper()
	return section(t, body, `<tr data-id="`+id+`">`, "</tr>")
}

// TestCompletedTab: the Completed tab lists completed items with their
// own columns, times with their absolute times, kind links, and each
// result's size and escaped preview (a result too large to read shown by
// its size, Redis sending a bounded amount); its actions are run now and
// delete, and purge of the whole state.
func TestCompletedTab(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	doneQueue(t, f)
	c := client(t)
	before := sentBytes(t, f.C)
	r := get(t, c, f.TabURL("done", "completed"))
	if sent := sentBytes(t, f.C) - before; sent > 256<<10 {
		t.Errorf("the tab had Redis send %d bytes, with a 10 MiB result", sent)
	}
	if r.status != http.StatusOK || !strings.Contains(r.body, `aria-current="page" class="current" data-state="completed"`) {
		t.Fatalf("completed tab: %d, not current\n%s", r.status, r.body)
	}
	if len(r.body) > 512<<10 {
		t.Errorf("the tab is %d bytes", len(r.body))
	}
	if webtest.RawRunes.MatchString(r.body) || strings.Contains(r.body, "<script>alert") || strings.Contains(r.body, "<b>bold") {
		t.Error("the tab shows a result raw")
	}
	nav := section(t, r.body, `<nav class="tabs"`, "</nav>")
	if !strings.Contains(nav, `<a href="/dq/queue?q=done&amp;state=completed" aria-current="page" class="current" data-state="completed"`) ||
		!strings.Contains(nav, `>Completed <span class="count" data-count="5">5</span>`) {
		t.Errorf("no Completed tab with its count:\n%s", nav)
	}
	head := section(t, r.body, `<table class="items">`, "</thead>")
	for _, col := range []string{"<th>ID</th>", "<th>Kind</th>", "<th>Completed</th>", ">Expires</th>", ">Attempts</th>", ">Size</th>", ">Result</th>"} {
		if !strings.Contains(head, col) {
			t.Errorf("the table's head lacks %s:\n%s", col, head)
		}
	}
	if strings.Contains(head, "Lease ends") || strings.Contains(head, "Partition") {
		t.Errorf("the completed table has another tab's columns:\n%s", head)
	}
	ok := itemRowOf(t, r.body, "ok:1")
	okShown := html.EscapeString(mustFormat(t, []byte(okResult), 300))
	for _, want := range []string{`<a href="/dq/queue?q=done&amp;state=completed&amp;kind=refund" class="kind">refund</a>`,
		`data-k="completed"><time datetime="`, `data-k="expires"><time datetime="`, `>in 1h0m0s</time>`, `<span class="abs">`,
		`data-size="42">42 bytes, JSON</span>`, `<pre class="payload JSON">` + okShown + `</pre>`,
		`name="op" value="run-now"`, `name="op" value="delete"`,
		`data-confirm="Run completed item &#34;ok:1&#34; of queue &#34;done&#34; again? It is requeued, due now, attempts reset, and runs again."`,
		`data-confirm="Delete completed item &#34;ok:1&#34; of queue &#34;done&#34;? This cannot be undone."`} {
		if !strings.Contains(ok, want) {
			t.Errorf("row ok:1 lacks %s:\n%s", want, ok)
		}
	}
	evil := itemRowOf(t, r.body, "evil")
	for _, want := range []string{`&lt;script&gt;alert(1)&lt;/script&gt; rtl\u202egnp.exe \x1b[31mred\a &lt;b&gt;bold&lt;/b&gt;`, `, text</span>`} {
		if !strings.Contains(evil, want) {
			t.Errorf("row evil lacks %s:\n%s", want, evil)
		}
	}
	if bin := itemRowOf(t, r.body, "bin"); !strings.Contains(bin, `<pre class="payload binary">00000000  00 01 02 03`) {
		t.Errorf("row bin shows no hex dump:\n%s", bin)
	}
	if none := itemRowOf(t, r.body, "none"); !strings.Contains(none, `data-size="0">0 bytes</span></td>`) {
		t.Errorf("row none:\n%s", none)
	}
	big := itemRowOf(t, r.body, "big")
	if !strings.Contains(big, `10,485,760 bytes</span> <span class="muted">not read here: <a class="showall" href="/dq/item?id=big&amp;q=done">open the item</a>`) ||
		strings.Contains(big, "&lt;R&gt;") {
		t.Errorf("row big:\n%s", big)
	}
	for _, want := range []string{`data-op="purge"`, `data-confirm="Purge 5 completed items of queue &#34;done&#34;? They are deleted; this cannot be undone."`,
		`>Purge completed</button>`, `data-many="Run {n} completed items of queue &#34;done&#34; again?`, `name="state" value="completed"`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the tab lacks %s", want)
		}
	}
	if n := strings.Count(r.body, `<input type="checkbox" name="idx" value="`); n != 5 {
		t.Errorf("%d checkboxes, want 5", n)
	}
	// Filtered by kind: only the refunds.
	k := get(t, c, f.TabURL("done", "completed")+"&kind=export")
	if k.status != http.StatusOK || !strings.Contains(k.body, `data-id="bin"`) || strings.Contains(k.body, `data-id="ok:1"`) ||
		!strings.Contains(k.body, "Only the completed items of kind") {
		t.Errorf("kind filter: %d\n%s", k.status, k.body)
	}
	// Read-only: no actions.
	ro := webtest.NewFixture(t, dqweb.Options{ReadOnly: true})
	doneQueue(t, ro)
	if b := get(t, c, ro.TabURL("done", "completed")).body; !strings.Contains(b, `data-id="ok:1"`) || strings.Contains(b, `name="op"`) {
		t.Error("the read-only tab offers actions, or lists nothing")
	}
}

// mustFormat is a result formatted as the payload viewer formats it.
func mustFormat(t *testing.T, p []byte, limit int) string {
	t.Helper()
	_, text, _ := dqweb.FormatPayload(p, len(p), limit)
	return text
}

// TestCompletedItemPage: a completed item's page shows when it completed,
// when it expires and its result, formatted as the payload is, each under
// its heading (issue 41, item 14: the payload had none); a hostile
// result is escaped; one over ItemPayloadBytes is not read.
func TestCompletedItemPage(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	doneQueue(t, f)
	c := client(t)
	r := get(t, c, f.ItemURL("done", "ok:1"))
	if r.status != http.StatusOK {
		t.Fatalf("item ok:1: %d", r.status)
	}
	for _, want := range []string{`data-k="state" class="completed">completed</dd>`, `<dt>completed</dt><dd data-k="completed"><time datetime="`,
		`<dt>expires</dt><dd data-k="expires"><time datetime="`, `<span class="abs">`, `<dd data-k="result-size">42 bytes, JSON</dd>`,
		`<section id="result">`, `<pre class="payload JSON">` + html.EscapeString(mustFormat(t, []byte(okResult), 256<<10)) + `</pre>`,
		`<dd data-k="retention">1h`, `data-k="kind" class="kind"><a href="/dq/queue?q=done&amp;state=completed&amp;kind=refund"`,
		"<section id=\"payload\">\n<h2>Payload</h2>\n" + `<pre class="payload JSON">{` + "\n" + `  &#34;order&#34;: 1` + "\n}</pre>",
		`data-confirm="Run completed item &#34;ok:1&#34; of queue &#34;done&#34; again?`, `name="state" value="completed"`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("item ok:1 lacks %s", want)
		}
	}
	e := get(t, c, f.ItemURL("done", "evil"))
	res := section(t, e.body, `<section id="result">`, "</section>")
	if e.status != http.StatusOK || !strings.Contains(res, `<pre class="payload text">&lt;script&gt;alert(1)&lt;/script&gt; rtl\u202egnp.exe \x1b[31mred\a &lt;b&gt;bold&lt;/b&gt;</pre>`) {
		t.Errorf("item evil: %d\n%s", e.status, res)
	}
	if webtest.RawRunes.MatchString(e.body) || strings.Contains(e.body, "<script>alert") || strings.Contains(e.body, "<b>bold") {
		t.Error("item evil shows its result raw")
	}
	if b := get(t, c, f.ItemURL("done", "bin")).body; !strings.Contains(b, `<dd data-k="result-size">64 bytes, binary</dd>`) {
		t.Error("item bin: no binary result")
	}
	if b := get(t, c, f.ItemURL("done", "none")).body; !strings.Contains(section(t, b, `<section id="result">`, "</section>"), `<span class="muted">(empty)</span>`) {
		t.Error("item none: no empty result")
	}
	before := sentBytes(t, f.C)
	b := get(t, c, f.ItemURL("done", "big"))
	if sent := sentBytes(t, f.C) - before; sent > 128<<10 {
		t.Errorf("the page of a 10 MiB result had Redis send %d bytes", sent)
	}
	if b.status != http.StatusOK || !strings.Contains(b.body, "Not shown: at 10,485,760 bytes the result is larger than the 65,536 bytes") ||
		strings.Contains(b.body, "&lt;R&gt;") || len(b.body) > 256<<10 {
		t.Errorf("item big: %d, %d bytes", b.status, len(b.body))
	}
}

// TestCompletedCounts: the overview, the summary and the tab count the
// completed items where they count the dead ones.
func TestCompletedCounts(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	doneQueue(t, f)
	c := client(t)
	ov := get(t, c, f.Base)
	if !strings.Contains(ov.body, `<th class="n opt" title="acked items kept for their job's retention">Completed</th>`) {
		t.Error("the overview has no Completed column")
	}
	if row := overviewRow(t, ov.body, "done"); !strings.Contains(row, `data-k="completed">5</td>`) {
		t.Errorf("the overview's row of done:\n%s", row)
	}
	if row := overviewRow(t, ov.body, "orders"); !strings.Contains(row, `data-k="completed">0</td>`) {
		t.Errorf("the overview's row of orders:\n%s", row)
	}
	sum := get(t, c, f.QueueURL("done")).body
	if !strings.Contains(sum, `<span class="k">completed</span><span class="v" data-k="completed">5</span>`) {
		t.Error("the summary has no completed card")
	}
}

// TestCompletedActions: purge of the completed state (CSRF-checked,
// confirmed, redirected to its result), run now and delete on one
// completed item.
func TestCompletedActions(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	q := doneQueue(t, f)
	ctx := context.Background()
	c := client(t)
	act := func(form url.Values) response {
		form.Set("csrf", token(t, c, f.TabURL("done", "completed")))
		form.Set("qx", fmt.Sprintf("%x", "done"))
		form.Set("confirmed", "yes")
		return post(t, c, f.Base+"action", form)
	}
	r := act(url.Values{"op": {"run-now"}, "idx": {fmt.Sprintf("%x", "ok:1")}, "state": {"completed"}})
	if it, err := q.Get(ctx, "ok:1"); r.status != http.StatusOK || err != nil || it.State != redisq.StateScheduled ||
		!strings.Contains(r.body, "Item &#34;ok:1&#34; of queue &#34;done&#34; was completed: requeued, due now, attempts reset; it runs again.") {
		t.Errorf("run-now: %d %v %v\n%s", r.status, it.State, err, r.body)
	}
	if !strings.Contains(r.body, `href="/dq/queue?q=done&amp;state=completed"`) {
		t.Error("the result does not lead back to the completed tab")
	}
	r = act(url.Values{"op": {"delete"}, "idx": {fmt.Sprintf("%x", "bin")}, "state": {"completed"}})
	if _, err := q.Get(ctx, "bin"); r.status != http.StatusOK || err != redisq.ErrNotFound {
		t.Errorf("delete: %d %v\n%s", r.status, err, r.body)
	}
	// Without the token: refused, nothing purged.
	bad := postOnly(t, c, f.Base+"action", url.Values{"op": {"purge"}, "q": {"done"}, "state": {"completed"}, "confirmed": {"yes"}, "csrf": {"x"}})
	if st, _ := q.Stats(ctx); bad.status != http.StatusForbidden || st.Completed != 3 {
		t.Fatalf("purge without the token: %d, %d completed left", bad.status, st.Completed)
	}
	// Unconfirmed: the question, with the count.
	tok := token(t, c, f.TabURL("done", "completed"))
	conf := post(t, c, f.Base+"action", url.Values{"op": {"purge"}, "q": {"done"}, "state": {"completed"}, "csrf": {tok}})
	if !strings.Contains(conf.body, "Purge 3 completed items of queue &#34;done&#34;? They are deleted; this cannot be undone.") {
		t.Errorf("purge question:\n%s", conf.body)
	}
	// Confirmed: a 303 to the result page, which says what was done.
	p := postOnly(t, c, f.Base+"action", url.Values{"op": {"purge"}, "q": {"done"}, "state": {"completed"}, "csrf": {tok}, "confirmed": {"yes"}})
	if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "/dq/result?r=") {
		t.Fatalf("purge: %d %s", p.status, p.header.Get("Location"))
	}
	res := get(t, c, f.Srv.URL+p.header.Get("Location"))
	if !strings.Contains(res.body, "Purged queue &#34;done&#34;: deleted 3 completed items.") {
		t.Errorf("purge result:\n%s", res.body)
	}
	if st, err := q.Stats(ctx); err != nil || st.Completed != 0 || st.Scheduled != 1 {
		t.Errorf("after the purge: %+v %v", st, err)
	}
	if b := get(t, c, f.TabURL("done", "completed")).body; strings.Contains(b, `data-op="purge"`) || strings.Contains(b, "data-id=") {
		t.Error("the empty tab lists items or offers purge")
	}
}

// TestPartitionedCompleted: a partitioned queue's Completed tab merges
// its partitions' completed items with a partition column, its summary
// counts them (in all and per partition), and purge empties every
// partition's.
func TestPartitionedCompleted(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	parts := map[int]string{}
	for k := 0; len(parts) < 3; k++ {
		id := fmt.Sprintf("done:%d", k)
		if i := f.p.PartitionOf(id); parts[i] == "" {
			parts[i] = id
			completeItem(t, f.p, id, "refund", []byte(evilResult))
		}
	}
	r := get(t, c, f.TabURL(pname, "completed"))
	if r.status != http.StatusOK || !strings.Contains(r.body, `data-count="3">3</span>`) || !strings.Contains(r.body, `<th class="n">Partition</th><th>Kind</th><th>Completed</th>`) {
		t.Fatalf("partitioned completed tab: %d\n%s", r.status, r.body)
	}
	if webtest.RawRunes.MatchString(r.body) || strings.Contains(r.body, "<script>alert") {
		t.Error("the partitioned tab shows a result raw")
	}
	for i, id := range parts {
		row := itemRowOf(t, r.body, id)
		for _, want := range []string{fmt.Sprintf(`data-part="%d"`, i), `&lt;script&gt;alert(1)&lt;/script&gt; rtl\u202egnp.exe`,
			fmt.Sprintf(`name="pidx" value="%d.%x"`, i, id), `<a href="/dq/queue?q=jobs&amp;state=completed&amp;kind=refund" class="kind">`} {
			if !strings.Contains(row, want) {
				t.Errorf("row %s lacks %s:\n%s", id, want, row)
			}
		}
	}
	sum := get(t, c, f.QueueURL(pname)).body
	if !strings.Contains(sum, `data-k="completed">3</span>`) || strings.Count(section(t, sum, `<section id="partitions">`, "</section>"), `data-k="completed">1</td>`) != 3 {
		t.Errorf("the partitioned summary does not count the completed items:\n%s", section(t, sum, `<section id="partitions">`, "</section>"))
	}
	if row := overviewRow(t, get(t, c, f.Base).body, pname); !strings.Contains(row, `data-k="completed">3</td>`) {
		t.Errorf("overview row of jobs:\n%s", row)
	}
	// The item page, on its partition.
	it := get(t, c, f.ItemURL(f.p.Partition(0).Name(), parts[0]))
	if !strings.Contains(it.body, `<section id="result">`) || !strings.Contains(it.body, `rtl\u202egnp.exe`) || webtest.RawRunes.MatchString(it.body) {
		t.Errorf("item page on partition 0:\n%s", it.body)
	}
	// Purge: every partition.
	form := url.Values{"op": {"purge"}, "q": {pname}, "state": {"completed"}, "csrf": {token(t, c, f.QueueURL(pname))}}
	if q := post(t, c, f.Base+"action", form); !strings.Contains(q.body, "Purge 3 completed items of queue &#34;jobs&#34; (3 partitions)?") {
		t.Errorf("purge question:\n%s", q.body)
	}
	p := f.paction(t, c, url.Values{"op": {"purge"}, "state": {"completed"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "deleted 3 completed items") {
		t.Fatalf("purge: %d\n%s", p.status, p.body)
	}
	for i, st := range f.pstats(t) {
		if st.Completed != 0 || st.Dead != 1 || st.InFlight != 2 {
			t.Errorf("partition %d after the purge: %+v", i, st)
		}
	}
}
