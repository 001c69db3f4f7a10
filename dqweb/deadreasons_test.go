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

// Dead letters by cause (issue 24, item 15): the dead tab groups the dead
// items by reason, lists one cause, and requeues or deletes every dead
// item of a cause.

// reasonRows are the rows of the dead tab's causes, in order: the cause
// as shown, and the row.
func reasonRows(t *testing.T, body string) (shown, rows []string) {
	t.Helper()
	s := section(t, body, `<section id="reasons">`, "</section>")
	for _, m := range regexp.MustCompile(`(?s)<tr data-i="\d+">.*?</tr>`).FindAllString(s, -1) {
		c := regexp.MustCompile(`class="reason">([^<]*)</`).FindStringSubmatch(m)
		if c == nil {
			t.Fatalf("no cause in %s", m)
		}
		shown, rows = append(shown, html.UnescapeString(c[1])), append(rows, m)
	}
	return shown, rows
}

// formOf is the form in s whose op is op, as the browser would send it.
func formOf(t *testing.T, s, op string) url.Values {
	t.Helper()
	for _, f := range strings.SplitAfter(s, "</form>") {
		if !strings.Contains(f, `name="op" value="`+op+`"`) {
			continue
		}
		v := url.Values{}
		for _, m := range regexp.MustCompile(`name="(\w+)" value="([^"]*)"`).FindAllStringSubmatch(f, -1) {
			v.Set(m[1], html.UnescapeString(m[2]))
		}
		return v
	}
	t.Fatalf("no form of %s in\n%s", op, s)
	return nil
}

// TestDeadReasonsGrouping: the dead tab groups the dead items by cause,
// most frequent first, each with its count, first and last death
// (relative and absolute), a link to its list and its actions, asking
// with the count and the cause escaped; hostile causes are shown escaped.
func TestDeadReasonsGrouping(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	webtest.DieOf(t, f, "bad format", "blob:2", "blob:3")
	for i, why := range webtest.HostileReasons {
		webtest.DieOf(t, f, why, fmt.Sprint("hostile:", i))
	}
	c := client(t)
	r := get(t, c, f.TabURL("orders", "dead"))
	checkPage(t, "dead tab", r, 300<<10)
	if inlineHandler(r.body) {
		t.Error("an inline handler on the dead tab")
	}
	shown, rows := reasonRows(t, r.body)
	want := []string{"bad format", dqweb.ShownReason(webtest.XSSReason), dqweb.ShownReason("bad\xffutf8\nline"), dqweb.ShownReason("ctl\x1b[31mred\x07"),
		"max attempts: smtp 421", dqweb.ShownReason(webtest.RTLReason)}
	if fmt.Sprint(shown) != fmt.Sprint(want) {
		t.Fatalf("causes\n got %q\nwant %q", shown, want)
	}
	sum, err := f.Q.DeadReasons(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := sum.Reasons[0]
	abs := func(t time.Time) string {
		return `<span class="abs">` + t.UTC().Format("2006-01-02 15:04:05.000 UTC") + `</span>`
	}
	for _, w := range []string{`<td class="n" data-k="count">3</td>`, abs(g.First), abs(g.Last),
		`href="/dq/queue?q=orders&amp;state=dead&amp;reason=bad&#43;format" class="reason">bad format</a>`,
		`name="reasonx" value="` + hex.EncodeToString([]byte("bad format")) + `"`,
		`data-confirm="Requeue all 3 dead items of queue &#34;orders&#34; that died of &#34;bad format&#34;? They become due now, attempts reset."`,
		`data-confirm="Delete all 3 dead items of queue &#34;orders&#34; that died of &#34;bad format&#34;? This cannot be undone."`} {
		if !strings.Contains(rows[0], w) {
			t.Errorf("the first cause's row lacks %s\n%s", w, rows[0])
		}
	}
	if !strings.Contains(rows[5], `data-confirm="Requeue all 1 dead item of queue &#34;orders&#34; that died of &#34;paid\u202e\u2066 deifirev\u2069&#34;?`) {
		t.Errorf("the bidi cause's question:\n%s", rows[5])
	}
	if !strings.Contains(r.body, "Grouped all 8 dead items.") {
		t.Errorf("the grouping does not say it is complete: %s", section(t, r.body, `id="grouped"`, "</p>"))
	}
	// Only the first page groups (a script per 1000 dead items); the
	// others link to it.
	if p := get(t, c, f.TabURL("orders", "dead")+"&offset=20").body; strings.Contains(p, `<section id="reasons">`) ||
		!strings.Contains(p, `<p class="small muted" id="reasons-link">The dead items grouped by cause are on <a href="/dq/queue?q=orders&amp;state=dead">the first page</a>.</p>`) {
		t.Errorf("the second page of the dead tab: %s", section(t, p, `<section id="dead"`, "</section>"))
	}

	// Not all grouped: it says so, and the questions say that the newer
	// items of a cause are acted on too.
	dqweb.SetDeadReasonScan(t, 4)
	r = get(t, c, f.TabURL("orders", "dead"))
	if !strings.Contains(r.body, "Grouped the oldest 4 of 8 dead items (the newer ones are not counted here") {
		t.Errorf("an incomplete grouping: %s", section(t, r.body, `id="grouped"`, "</p>"))
	}
	shown, rows = reasonRows(t, r.body)
	for i, s := range shown {
		if s == "bad format" && !strings.Contains(rows[i], `data-confirm="Requeue every dead item of queue &#34;orders&#34; that died of &#34;bad format&#34;? 2 of the oldest 4 dead items grouped (of 8) died of it; the newer ones of this cause are acted on too.`) {
			t.Errorf("the question of an incompletely counted cause:\n%s", rows[i])
		}
	}
	// The action still requeues every dead item of the cause, blob:3 (not
	// counted) included.
	form := formOf(t, r.body, "requeue-reason")
	if form.Get("reasonx") != hex.EncodeToString([]byte("bad format")) {
		t.Fatalf("the first requeue-reason form is for %q", form.Get("reasonx"))
	}
	form.Set("confirmed", "yes")
	res := post(t, c, f.Base+"action", form)
	if res.status != http.StatusOK || !strings.Contains(res.body, "Requeued 3 dead items of queue &#34;orders&#34; that died of &#34;bad format&#34;: they are due now.") {
		t.Fatalf("requeue a cause: %d\n%s", res.status, res.body)
	}
	for _, id := range []string{"blob:1", "blob:2", "blob:3"} {
		if f.State(t, id) != redisq.StateScheduled {
			t.Errorf("%s not requeued", id)
		}
	}
	if f.State(t, "mail:7") != redisq.StateDead || f.State(t, "hostile:0") != redisq.StateDead {
		t.Error("an item of another cause was requeued")
	}
}

// TestDeadReasonActions: each cause's list, opened from its link, holds
// exactly its items (the cause's exact bytes, hostile or not); its
// actions, asked first (a confirmation page without the script, with the
// count and the cause escaped), requeue or delete exactly them and say so
// escaped; bad requests are 400s, and CSRF, cross-origin and read-only
// refusals apply.
func TestDeadReasonActions(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	for i, why := range webtest.HostileReasons {
		webtest.DieOf(t, f, why, fmt.Sprintf("h%d:a", i), fmt.Sprintf("h%d:b", i))
	}
	webtest.DieOf(t, f, webtest.RTLReason+" ", "near:1") // differs by a trailing space: another cause
	c := client(t)
	dead := get(t, c, f.TabURL("orders", "dead")).body
	shown, rows := reasonRows(t, dead)
	for i, why := range webtest.HostileReasons {
		k := -1
		for j, s := range shown {
			if s == dqweb.ShownReason(why) {
				k = j
			}
		}
		if k < 0 {
			t.Fatalf("no row for %+q in %q", why, shown)
		}
		link := regexp.MustCompile(`<a href="([^"]*)" class="reason">`).FindStringSubmatch(rows[k])
		if link == nil {
			t.Fatalf("no link in %s", rows[k])
		}
		u := f.Srv.URL + html.UnescapeString(link[1])
		list := get(t, c, u)
		checkPage(t, fmt.Sprintf("the list of %+q", why), list, 200<<10)
		ids := regexp.MustCompile(`<article class="deaditem" data-id="([^"]*)"`).FindAllStringSubmatch(list.body, -1)
		if len(ids) != 2 || ids[0][1] != fmt.Sprintf("h%d:a", i) || ids[1][1] != fmt.Sprintf("h%d:b", i) {
			t.Errorf("the list of %+q holds %v", why, ids)
		}
		filter := section(t, list.body, `<div class="filter" id="filter">`, "</div>")
		if !strings.Contains(filter, html.EscapeString(dqweb.Quoted(why))) || !strings.Contains(filter, ": 2 items.") {
			t.Errorf("the filter of %+q: %s", why, filter)
		}

		// Unconfirmed: the confirmation page, with the count and the
		// cause escaped; nothing changes.
		op := []string{"requeue-reason", "delete-reason", "requeue-reason"}[i]
		form := formOf(t, section(t, list.body, `<div class="actions whole">`, "</div>"), op)
		ask := post(t, c, f.Base+"action", form)
		checkPage(t, "confirmation of "+op, ask, 100<<10)
		verb := map[string]string{"requeue-reason": "Requeue", "delete-reason": "Delete"}[op]
		if !strings.Contains(ask.body, `<p class="question">`+verb+` all 2 dead items of queue &#34;orders&#34; that died of `+html.EscapeString(dqweb.Quoted(why))+`?`) {
			t.Errorf("the question of %s %+q:\n%s", op, why, section(t, ask.body, `<p class="question">`, "</p>"))
		}
		if f.State(t, fmt.Sprintf("h%d:a", i)) != redisq.StateDead {
			t.Fatal("changed unconfirmed")
		}
		// Confirmed, from the confirmation page's form.
		res := post(t, c, f.Base+"action", formOf(t, ask.body, op))
		checkPage(t, "result of "+op, res, 100<<10)
		done := map[string]string{"requeue-reason": "Requeued 2 dead items of queue &#34;orders&#34; that died of " + html.EscapeString(dqweb.Quoted(why)) + ": they are due now.",
			"delete-reason": "Deleted 2 dead items of queue &#34;orders&#34; that died of " + html.EscapeString(dqweb.Quoted(why)) + "."}[op]
		if !strings.Contains(res.body, done) || !strings.Contains(res.body, `href="/dq/queue?q=orders&amp;state=dead" id="back"`) {
			t.Errorf("result of %s %+q:\n%s", op, why, res.body)
		}
		want := map[string]redisq.State{"requeue-reason": redisq.StateScheduled, "delete-reason": 0}[op]
		for _, id := range []string{fmt.Sprintf("h%d:a", i), fmt.Sprintf("h%d:b", i)} {
			if got := f.State(t, id); got != want {
				t.Errorf("%s after %s: %v, want %v", id, op, got, want)
			}
		}
	}
	if f.State(t, "near:1") != redisq.StateDead || f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("an item of another cause changed")
	}

	tok := token(t, c, f.TabURL("orders", "dead"))
	for _, b := range []struct {
		form   url.Values
		status int
		says   string
	}{
		{url.Values{"op": {"requeue-reason"}, "q": {"orders"}}, 400, "action requeue-reason needs a cause of death (reason)"},
		{url.Values{"op": {"requeue-reason"}, "q": {"orders"}, "reasonx": {"zz"}}, 400, "bad form field reasonx"},
		{url.Values{"op": {"requeue-reason"}, "q": {"orders"}, "reason": {strings.Repeat("r", dqweb.MaxName+1)}}, 400, "too long for the dashboard"},
		{url.Values{"op": {"requeue-all"}, "q": {"orders"}, "reason": {"bad format"}}, 400, "action requeue-all takes no reason"},
		{url.Values{"op": {"delete-reason"}, "q": {"orders"}, "reason": {"bad format"}, "id": {"mail:7"}}, 400, "takes no item id"},
		{url.Values{"op": {"delete-reason"}, "q": {"nope"}, "reason": {"bad format"}}, 404, "no queue named"},
	} {
		b.form.Set("csrf", tok)
		b.form.Set("confirmed", "yes")
		if r := post(t, c, f.Base+"action", b.form); r.status != b.status || !strings.Contains(r.body, b.says) {
			t.Errorf("%v: %d, want %d saying %q", b.form, r.status, b.status, b.says)
		}
	}
	all := url.Values{"op": {"delete-reason"}, "qx": {hex.EncodeToString([]byte("orders"))}, "reasonx": {hex.EncodeToString([]byte(webtest.RTLReason + " "))}, "csrf": {tok}, "confirmed": {"yes"}}
	if r := post(t, c, f.Base+"action", url.Values{"op": all["op"], "qx": all["qx"], "reasonx": all["reasonx"], "confirmed": all["confirmed"]}); r.status != http.StatusForbidden {
		t.Errorf("without a token: %d", r.status)
	}
	req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(all.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := do(t, c, req); r.status != http.StatusForbidden {
		t.Errorf("cross-site: %d", r.status)
	}
	if f.State(t, "near:1") != redisq.StateDead {
		t.Fatal("a refused request deleted")
	}
	ro := serve(t, f.C, dqweb.Options{ReadOnly: true})
	rc := client(t)
	page := get(t, rc, ro+"queue?q=orders&state=dead")
	if page.status != http.StatusOK || strings.Contains(page.body, `method="post"`) || !strings.Contains(page.body, `<section id="reasons">`) {
		t.Errorf("read-only dead tab: %d, forms shown or no causes", page.status)
	}
	if r := post(t, rc, ro+"action", all); r.status != http.StatusForbidden {
		t.Errorf("read-only: %d", r.status)
	}
	if f.State(t, "near:1") != redisq.StateDead {
		t.Fatal("a read-only dashboard deleted")
	}
	// A filter on another tab, or too long, is a 400.
	for _, u := range []string{f.TabURL("orders", "scheduled") + "&reason=x", f.TabURL("orders", "dead") + "&reason=" + strings.Repeat("r", dqweb.MaxName+1)} {
		if r := get(t, c, u); r.status != http.StatusBadRequest {
			t.Errorf("%.100s: %d, want 400", u, r.status)
		}
	}
}

// TestDeadReasonPaging: a cause's list is paged through the dead set: a
// page examines up to 1000 dead items, so it may hold none of the cause
// and still have a next page, which goes on to its items.
func TestDeadReasonPaging(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	var ids []string
	for i := range 1010 {
		ids = append(ids, fmt.Sprint("common:", i))
	}
	webtest.DieOf(t, f, "common", ids...)
	time.Sleep(5 * time.Millisecond) // the rare ones die later, by the ms of Redis
	webtest.DieOf(t, f, "rare", "rare:1", "rare:2", "rare:3")
	if st, _ := f.Q.Stats(ctx); st.Dead != 1016 {
		t.Fatalf("%d dead", st.Dead)
	}
	c := client(t)
	u := f.TabURL("orders", "dead") + "&reason=rare"
	var seen []string
	for page := 0; ; page++ {
		r := get(t, c, u)
		if r.status != http.StatusOK {
			t.Fatalf("page %d: %d", page, r.status)
		}
		items := regexp.MustCompile(`<article class="deaditem" data-id="([^"]*)"`).FindAllStringSubmatch(r.body, -1)
		p := section(t, r.body, `<p class="pager">`, "</p>")
		if page == 0 && (len(items) != 0 || !strings.Contains(p, "none of this cause among the dead items examined here")) {
			t.Errorf("the first page: %d items, pager %q; want none, and a next page", len(items), p)
		}
		for _, m := range items {
			seen = append(seen, m[1])
		}
		next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(p)
		if next == nil {
			if page == 0 || !strings.Contains(p, "first") {
				t.Errorf("page %d ends the list: %q", page, p)
			}
			break
		}
		if page > 3 {
			t.Fatalf("more than 4 pages for 1016 dead items")
		}
		u = f.Srv.URL + html.UnescapeString(next[1])
		if !strings.Contains(u, "reason=rare") {
			t.Fatalf("the next page %s loses the filter", u)
		}
	}
	if fmt.Sprint(seen) != "[rare:1 rare:2 rare:3]" {
		t.Errorf("the list of rare holds %v", seen)
	}
}

// TestPartitionedDeadReasons: a partitioned queue's dead tab groups the
// dead items of every partition; a cause's list is merged across them;
// its actions act on every partition.
func TestPartitionedDeadReasons(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	r := get(t, c, f.TabURL(pname, "dead"))
	checkPage(t, "dead tab", r, 200<<10)
	shown, rows := reasonRows(t, r.body)
	if fmt.Sprint(shown) != "[bad input]" || !strings.Contains(rows[0], `<td class="n" data-k="count">3</td>`) ||
		!strings.Contains(rows[0], `data-confirm="Requeue all 3 dead items of queue &#34;jobs&#34; (3 partitions) that died of &#34;bad input&#34;?`) {
		t.Fatalf("causes %q:\n%s", shown, rows)
	}
	list := get(t, c, f.TabURL(pname, "dead")+"&reason=bad+input")
	ids := regexp.MustCompile(`<article class="deaditem" data-id="([^"]*)"`).FindAllStringSubmatch(list.body, -1)
	if len(ids) != 3 || strings.Count(list.body, `<span class="muted part" data-part=`) != 3 {
		t.Errorf("the list of the cause: %d items", len(ids))
	}
	if none := get(t, c, f.TabURL(pname, "dead")+"&reason=other"); strings.Contains(none.body, `<article class="deaditem"`) || !strings.Contains(none.body, "no dead items of this cause") {
		t.Errorf("the list of a cause none died of:\n%s", section(t, none.body, `<p class="pager">`, "</p>"))
	}
	form := formOf(t, section(t, list.body, `<div class="actions whole">`, "</div>"), "requeue-reason")
	form.Set("confirmed", "yes")
	res := post(t, c, f.Base+"action", form)
	if res.status != http.StatusOK || !strings.Contains(res.body, "Requeued 3 dead items of queue &#34;jobs&#34; (3 partitions) that died of &#34;bad input&#34;: they are due now.") {
		t.Fatalf("requeue the cause: %d\n%s", res.status, res.body)
	}
	for i := range 3 {
		if st := f.pstate(t, i, f.dead[i]); st != redisq.StateScheduled {
			t.Errorf("%s of partition %d: %v", f.dead[i], i, st)
		}
	}
}
