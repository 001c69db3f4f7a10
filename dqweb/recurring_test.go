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
	"github.com/redis/go-redis/v9"
)

// regRows returns the rows of the Recurring tab by registration name (as
// the page shows it).
func regRows(t *testing.T, body string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<tr data-reg="([^"]*)"[^>]*>.*?</tr>`).FindAllStringSubmatch(body, -1) {
		rows[html.UnescapeString(m[1])] = m[0]
	}
	return rows
}

// TestRecurringTab: the queue page has a Recurring tab, with its count
// (red, with a tooltip, when a registration is behind), only when the
// queue has registrations; the tab lists each with its schedule, next
// occurrence (relative and absolute; behind: marked, "no process keeps
// it"), last, catch-up, version and payload size, the name linking to the
// item of its occurrence while there is one, and an Unregister button
// that asks naming it. Hostile names are escaped.
func TestRecurringTab(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	regs := webtest.RegisterAll(t, f)
	c := client(t)

	nav := section(t, get(t, c, f.QueueURL("orders")).body, `<nav class="tabs"`, "</nav>")
	if want := `<a href="/dq/queue?q=orders&amp;state=recurring" data-state="recurring" title="2 registrations behind: no process keeps them">Recurring <span class="count dead" data-count="8">8</span></a>`; !strings.Contains(nav, want) {
		t.Errorf("the queue page's tabs lack %s:\n%s", want, nav)
	}
	// Another tab's page has it too; a queue without registrations not.
	if nav := section(t, get(t, c, f.TabURL("orders", "dead")).body, `<nav class="tabs"`, "</nav>"); !strings.Contains(nav, `data-state="recurring"`) {
		t.Errorf("the dead tab's page lacks the Recurring tab:\n%s", nav)
	}
	if nav := section(t, get(t, c, f.QueueURL("emails")).body, `<nav class="tabs"`, "</nav>"); strings.Contains(nav, "recurring") {
		t.Errorf("a queue without registrations has a Recurring tab:\n%s", nav)
	}

	r := get(t, c, f.TabURL("orders", "recurring"))
	checkPage(t, "recurring tab", r, 200<<10)
	if !strings.Contains(r.body, `aria-current="page" class="current" data-state="recurring"`) {
		t.Error("the Recurring tab is not the current one")
	}
	rows := regRows(t, r.body)
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8:\n%s", len(rows), section(t, r.body, `<section id="recurring"`, "</section>"))
	}
	d := regs["daily"]
	dailyItem := "/dq/item?" + url.Values{"q": {"orders"}, "id": {d.EnqueuedID}}.Encode()
	for name, want := range map[string][]string{
		"hourly": {`class="behind"`, `<td class="next behind" title="no process keeps it: `, `<span class="badge behind" title="no process keeps it: `,
			`ago</time> <span class="abs">` + regs["hourly"].Next.UTC().Format("2006-01-02 15:04:05.000 UTC") + `</span>`},
		"daily": {`<td class="n opt" data-label="Catch-up">2</td><td class="opt policy" data-label="Policy">–</td><td class="n opt skipped" data-label="Skipped">0</td><td class="n opt" data-label="Version">7</td><td class="n opt" data-label="Payload">5 bytes</td>`, `<td class="spec" data-label="Schedule">every 24h0m0s, phase 9h0m0s</td>`,
			`<time datetime="` + d.Next.UTC().Format(time.RFC3339Nano) + `" title="` + d.Next.UTC().Format("2006-01-02 15:04:05.000 UTC") + `">in `, `<span class="abs">` + d.Next.UTC().Format("2006-01-02 15:04:05.000 UTC") + `</span>`,
			`<a href="` + html.EscapeString(dailyItem) + `" title="its occurrence enqueued last: &#34;` + d.EnqueuedID + `&#34;, scheduled">daily</a>`,
			`data-confirm="Unregister &#34;daily&#34; of queue &#34;orders&#34;? No occurrence of it is enqueued any more; its last one, if still scheduled, is cancelled."`},
		"taken": {`<td class="id" data-label="Name">taken</td>`, `class="behind"`},
		"mars":  {`<span class="error">cannot compute here: redisq: cron spec &#34;CRON_TZ=Mars/Olympus 0 9 * * *&#34;: unknown time zone Mars/Olympus</span>`},
		"over":  {`<span class="muted">ended</span>`},
		`"rtl\u202egnp"`: {`>&#34;rtl\u202egnp&#34;</a>`, `name="regx" value="` + hex.EncodeToString([]byte(webtest.RTLReg)) + `"`,
			`data-confirm="Unregister &#34;rtl\u202egnp&#34; of queue &#34;orders&#34;?`},
		`"bad\xffname\n"`:           {`>&#34;bad\xffname\n&#34;</a>`, `name="regx" value="` + hex.EncodeToString([]byte(webtest.BadReg)) + `"`},
		dqweb.Shown(webtest.XSSReg): {html.EscapeString(dqweb.Shown(webtest.XSSReg)) + `</a>`},
	} {
		row, ok := rows[name]
		if !ok {
			t.Errorf("no row %s", name)
			continue
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("row %s lacks %s:\n%s", name, w, row)
			}
		}
		if name != "hourly" && name != "taken" && strings.Contains(row, "behind") {
			t.Errorf("row %s is marked behind:\n%s", name, row)
		}
	}
	if strings.Contains(rows["taken"], "<a href") || !strings.Contains(rows["over"], "<a href") {
		t.Errorf("a name links to an item that is gone, or not to one that is there:\n%s\n%s", rows["taken"], rows["over"])
	}
	if !strings.Contains(r.body, `2 registrations behind: no process keeps them.`) {
		t.Error("the tab does not say how many are behind")
	}
	if strings.Contains(r.body, "<script>alert(3)") || strings.Count(r.body, "<script") != 1 ||
		inlineHandler(r.body) {
		t.Error("markup from a registration name, another script, or an inline handler or style")
	}
	// The name's link opens its occurrence.
	if it := get(t, c, f.Srv.URL+dailyItem); it.status != http.StatusOK || !strings.Contains(it.body, `data-k="state" class="scheduled"`) {
		t.Errorf("the occurrence's page: %d", it.status)
	}

	if r := get(t, c, f.TabURL("orders", "bogus")); r.status != http.StatusBadRequest || !strings.Contains(r.body, "the tabs are scheduled, inflight, dead, completed, recurring and workers") {
		t.Errorf("unknown tab: %d", r.status)
	}
	// Asked for, a queue without registrations shows an empty tab.
	if r := get(t, c, f.TabURL("emails", "recurring")); r.status != http.StatusOK || !strings.Contains(r.body, "No recurring registrations.") ||
		!strings.Contains(r.body, `data-state="recurring">Recurring <span class="count" data-count="0">0</span>`) {
		t.Errorf("the Recurring tab of a queue without registrations: %d", r.status)
	}
}

// TestRecurringPaging: the tab shows PageSize registrations a page.
func TestRecurringPaging(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	for i := range dqweb.PageSize + 5 {
		if _, err := f.Q.Register(ctx, fmt.Sprintf("r%03d", i), redisq.Every(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	body := get(t, c, f.TabURL("orders", "recurring")).body
	if n := len(regRows(t, body)); n != dqweb.PageSize || !strings.Contains(body, "1–50 of 55") {
		t.Fatalf("first page: %d rows", n)
	}
	next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(body)
	if next == nil {
		t.Fatal("no next page")
	}
	body = get(t, c, f.Srv.URL+html.UnescapeString(next[1])).body
	rows := regRows(t, body)
	if _, ok := rows["r054"]; len(rows) != 5 || !ok || !strings.Contains(body, "51–55 of 55") {
		t.Fatalf("second page: %d rows", len(rows))
	}
}

// TestUnregisterAction: Unregister asks first (a confirmation page without
// the script), then removes the registration and cancels its scheduled
// occurrence, reporting it; the form carries the exact name, whatever its
// bytes. Bad requests are 400s, and CSRF and read-only mode apply.
func TestUnregisterAction(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	regs := webtest.RegisterAll(t, f)
	c := client(t)
	tok := token(t, c, f.TabURL("orders", "recurring"))
	registered := func(name string) bool {
		t.Helper()
		_, err := f.Q.Registration(ctx, name)
		if err != nil && err != redisq.ErrNotFound {
			t.Fatal(err)
		}
		return err == nil
	}

	r := post(t, c, f.Base+"action", url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {"daily"}, "csrf": {tok}})
	for _, want := range []string{`Unregister &#34;daily&#34; of queue &#34;orders&#34;? No occurrence of it is enqueued any more; its last one, if still scheduled, is cancelled.`,
		`name="regx" value="6461696c79"`, `name="confirmed" value="yes"`, `<a href="/dq/queue?q=orders&amp;state=recurring">Cancel</a>`} {
		if r.status != http.StatusOK || !strings.Contains(r.body, want) {
			t.Errorf("confirmation page: %d, lacks %s\n%s", r.status, want, r.body)
		}
	}
	if !registered("daily") {
		t.Fatal("unregistered before the confirmation")
	}
	again := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`).FindAllStringSubmatch(r.body, -1) {
		again.Set(m[1], html.UnescapeString(m[2]))
	}
	r = post(t, c, f.Base+"action", again)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Unregistered &#34;daily&#34; of queue &#34;orders&#34;; its scheduled occurrence was cancelled.") ||
		!strings.Contains(r.body, `<a href="/dq/queue?q=orders&amp;state=recurring" id="back">`) {
		t.Fatalf("confirmed: %d\n%s", r.status, r.body)
	}
	if registered("daily") || f.State(t, regs["daily"].EnqueuedID) != 0 {
		t.Fatal("daily is still registered, or its occurrence still there")
	}
	r = action(t, f, c, url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {"daily"}})
	if r.status != http.StatusNotFound || !strings.Contains(r.body, "No registration &#34;daily&#34; in queue &#34;orders&#34;; nothing changed.") {
		t.Errorf("unregister again: %d\n%s", r.status, r.body)
	}
	r = action(t, f, c, url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {"taken"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Unregistered &#34;taken&#34; of queue &#34;orders&#34;; no occurrence of it was scheduled") {
		t.Errorf("unregister taken: %d\n%s", r.status, r.body)
	}

	// The forms of the tab carry the exact bytes of hostile names.
	tab := get(t, c, f.TabURL("orders", "recurring")).body
	for _, name := range []string{webtest.RTLReg, webtest.BadReg, webtest.XSSReg} {
		row := regRows(t, tab)[dqweb.Shown(name)]
		row = row[strings.Index(row, `<form`):]
		for !strings.Contains(row[:strings.Index(row, "</form>")], `name="op" value="unregister"`) {
			row = row[strings.Index(row, "</form>")+len("</form>"):] // the row's Run now form comes first
		}
		row = row[:strings.Index(row, "</form>")]
		form := url.Values{}
		for _, m := range regexp.MustCompile(`name="(\w+)" value="([^"]*)"`).FindAllStringSubmatch(row, -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		form.Set("confirmed", "yes")
		r := post(t, c, f.Base+"action", form)
		checkPage(t, "result of unregistering "+dqweb.Quoted(name), r, 200<<10)
		if registered(name) {
			t.Errorf("%+q is still registered after its form\n%s", name, r.body)
		}
	}
	if !registered("hourly") || !registered("mars") {
		t.Fatal("another registration was removed")
	}

	for _, c := range []struct {
		form   url.Values
		status int
		says   string
	}{
		{url.Values{"op": {"unregister"}, "q": {"orders"}}, 400, "action unregister needs a registration name"},
		{url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {strings.Repeat("n", redisq.MaxRegistrationName+1)}}, 400, "is too long (257 bytes; at most 256)"},
		{url.Values{"op": {"unregister"}, "q": {"orders"}, "regx": {"zz"}}, 400, "bad form field regx"},
		{url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {"hourly"}, "id": {"late:1"}}, 400, "takes no item id"},
		{url.Values{"op": {"delete-all-dead"}, "q": {"orders"}, "reg": {"hourly"}}, 400, "action delete-all-dead takes no registration name"},
		{url.Values{"op": {"unregister"}, "q": {"nope"}, "reg": {"hourly"}}, 404, "no queue named"},
	} {
		if r := action(t, f, client(t), c.form); r.status != c.status || !strings.Contains(r.body, c.says) {
			t.Errorf("%v: %d, want %d saying %q\n%s", c.form, r.status, c.status, c.says, r.body)
		}
	}
	// Without the token, or cross-site: refused.
	if r := post(t, c, f.Base+"action", url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {"hourly"}, "confirmed": {"yes"}}); r.status != http.StatusForbidden {
		t.Errorf("without a CSRF token: %d", r.status)
	}
	req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {"hourly"}, "csrf": {tok}, "confirmed": {"yes"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := do(t, c, req); r.status != http.StatusForbidden {
		t.Errorf("cross-site: %d", r.status)
	}
	if !registered("hourly") {
		t.Fatal("a refused request unregistered")
	}

	// Read-only: no button, and the POST is refused.
	ro := webtest.NewFixture(t, dqweb.Options{ReadOnly: true})
	webtest.RegisterAll(t, ro)
	rc := client(t)
	page := get(t, rc, ro.TabURL("orders", "recurring"))
	if page.status != http.StatusOK || strings.Contains(page.body, `method="post"`) || strings.Contains(page.body, "data-op=") || len(regRows(t, page.body)) != 8 {
		t.Errorf("read-only Recurring tab: %d, forms shown or rows missing", page.status)
	}
	u, _ := url.Parse(ro.Base)
	rc.Jar.SetCookies(u, []*http.Cookie{{Name: "dqweb_csrf", Value: tok, Path: "/dq/"}})
	if r := post(t, rc, ro.Base+"action", url.Values{"op": {"unregister"}, "q": {"orders"}, "reg": {"hourly"}, "csrf": {tok}, "confirmed": {"yes"}}); r.status != http.StatusForbidden {
		t.Errorf("unregister in read-only mode: %d, want 403", r.status)
	}
	if _, err := ro.Q.Registration(ctx, "hourly"); err != nil {
		t.Fatalf("read-only dashboard unregistered: %v", err)
	}
}

// TestRecurringUnreadable: when the registrations cannot be read (here a
// Redis user that may not run XREVRANGE), the queue's pages still show,
// the Recurring tab's count is "?" saying why, and the tab itself is the
// error.
func TestRecurringUnreadable(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if _, err := f.Q.Register(ctx, "hourly", redisq.Every(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.C.Do(ctx, "ACL", "SETUSER", "noxrev", "on", ">pw", "~*", "&*", "+@all", "-xrevrange").Err(); err != nil {
		t.Fatal(err)
	}
	lc := redis.NewClient(&redis.Options{Addr: f.C.Options().Addr, Username: "noxrev", Password: "pw", MaxRetries: -1})
	t.Cleanup(func() { _ = lc.Close() })
	base := serve(t, lc, dqweb.Options{})
	c := client(t)
	for _, p := range []string{"queue?q=orders", "queue?q=orders&state=dead"} {
		r := get(t, c, base+p)
		nav := section(t, r.body, `<nav class="tabs"`, "</nav>")
		if r.status != http.StatusOK || !strings.Contains(nav, `data-state="recurring" title="the recurring registrations cannot be read: Redis answered with an error: redisq: the Redis user may not run XREVRANGE`) ||
			!strings.Contains(nav, `Recurring <span class="count dead" data-count="">?</span>`) {
			t.Errorf("%s: %d\n%s", p, r.status, nav)
		}
	}
	r := get(t, c, base+"queue?q=orders&state=recurring")
	if r.status != http.StatusBadGateway || !strings.Contains(r.body, "reading the recurring registrations of queue &#34;orders&#34;: Redis answered with an error") {
		t.Errorf("the Recurring tab: %d\n%s", r.status, r.body)
	}
}

// TestRecurringSeenAndOrphaned (issue 24, item 3): the Recurring tab shows
// when live code last registered each registration, and marks one that
// none has for redisq.OrphanAfter "orphaned", saying what to do
// (Unregister once its code is gone); the tab's count is red, its tooltip
// says how many.
func TestRecurringSeenAndOrphaned(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	for _, name := range []string{"kept", "gone", webtest.RTLReg} {
		if _, err := f.Q.Register(ctx, name, redisq.EveryPhase(24*time.Hour, 8*time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	// "gone" and rtlReg were last seen 10 minutes ago (their Register
	// calls were removed since).
	now, _ := f.C.Time(ctx).Result()
	old := now.Add(-10 * time.Minute).Truncate(time.Millisecond)
	for _, name := range []string{"gone", webtest.RTLReg} {
		if err := f.C.HSet(ctx, "{dq:orders}:rec:"+name, "sn", old.UnixMilli()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	r := get(t, c, f.TabURL("orders", "recurring"))
	checkPage(t, "recurring tab", r, 200<<10)
	rows := regRows(t, r.body)
	badge := `<span class="badge orphaned" title="orphaned: no live code registers it`
	for name, orphaned := range map[string]bool{"kept": false, "gone": true, dqweb.Shown(webtest.RTLReg): true} {
		row := rows[name]
		if got := strings.Contains(row, badge); got != orphaned {
			t.Errorf("%s: orphaned badge %v, want %v\n%s", name, got, orphaned, row)
		}
		if orphaned && !strings.Contains(row, `<td class="opt seen orphaned" data-label="Seen"><time datetime="`+old.UTC().Format(time.RFC3339Nano)+`" title="`+old.UTC().Format("2006-01-02 15:04:05.000 UTC")+`">10m0s ago</time> <span class="abs">`) {
			t.Errorf("%s: its Seen cell:\n%s", name, row)
		}
		if !orphaned && !strings.Contains(row, `<td class="opt seen" data-label="Seen"><time datetime=`) {
			t.Errorf("%s: its Seen cell:\n%s", name, row)
		}
	}
	if note := section(t, r.body, `id="orphaned"`, "</p>"); !strings.Contains(note, "2 registrations orphaned: no live code registers them (not seen for 3m") ||
		!strings.Contains(note, "Unregister each once its code is gone.") {
		t.Errorf("the orphaned note: %s", note)
	}
	nav := section(t, r.body, `<nav class="tabs"`, "</nav>")
	if !strings.Contains(nav, `data-state="recurring" title="2 orphaned: no live code registers them">Recurring <span class="count dead" data-count="3">3</span>`) {
		t.Errorf("the Recurring tab's link: %s", nav)
	}
	// Registered again (its code is back): no longer orphaned.
	if _, err := f.Q.Register(ctx, "gone", redisq.EveryPhase(24*time.Hour, 8*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if row := regRows(t, get(t, c, f.TabURL("orders", "recurring")).body)["gone"]; strings.Contains(row, badge) {
		t.Errorf("gone, registered again, is still orphaned:\n%s", row)
	}
}

// TestRecurringPausedShown: a paused registration's NEXT cell says paused,
// since when, instead of a next run.
func TestRecurringPausedShown(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if _, err := f.Q.Register(ctx, "daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Q.PauseRecurring(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	g, err := f.Q.Registration(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	r := get(t, client(t), f.TabURL("orders", "recurring"))
	checkPage(t, "recurring tab", r, 200<<10)
	row := regRows(t, r.body)["daily"]
	for _, want := range []string{`<span class="badge paused" title="paused (Queue.PauseRecurring, dqctl pause-recurring): no occurrence is enqueued until it is resumed">paused</span> <time`,
		`<span class="abs">` + g.Paused.UTC().Format("2006-01-02 15:04:05.000 UTC") + `</span>`} {
		if !strings.Contains(row, want) {
			t.Errorf("the paused row lacks %s:\n%s", want, row)
		}
	}
}

// The Recurring tab shows a registration's occurrence policy and the
// occurrences it skipped, with the last one's reason.
func TestRecurringPolicyShown(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	// Its first occurrence is a day late: the claim skips it.
	if _, err := f.Q.Register(ctx, "sync", redisq.Every(time.Hour), nil, redisq.FirstAt(time.Now().Add(-24*time.Hour)),
		redisq.Overlap(redisq.OverlapSkip), redisq.CatchUpWindow(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Q.Register(ctx, "plain", redisq.Every(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := f.Q.TakeBatch(tctx, 100) // the fixture's due items, and the skip
		cancel()
		if err != nil {
			break
		}
	}
	r := get(t, client(t), f.TabURL("orders", "recurring"))
	checkPage(t, "recurring tab", r, 200<<10)
	rows := regRows(t, r.body)
	for name, want := range map[string]string{
		"sync":  `<td class="opt policy" data-label="Policy">skip overlap, window 10m0s</td><td class="n opt skipped" data-label="Skipped">1 <span class="muted">(last: late)</span></td>`,
		"plain": `<td class="opt policy" data-label="Policy">–</td><td class="n opt skipped" data-label="Skipped">0</td>`,
	} {
		if !strings.Contains(rows[name], want) {
			t.Errorf("the row of %s lacks %s:\n%s", name, want, rows[name])
		}
	}
	// Issue 41, item 9: a reason anyone else stored is escaped as names
	// are (checkPage fails on a raw bidi or control character).
	if err := f.C.HSet(ctx, "{dq:orders}:rec:sync", "lw", "la\u202ete<b>\x1b\xff").Err(); err != nil {
		t.Fatal(err)
	}
	r = get(t, client(t), f.TabURL("orders", "recurring"))
	checkPage(t, "recurring tab with a hostile skip reason", r, 200<<10)
	if want := `1 <span class="muted">(last: &#34;la\u202ete&lt;b&gt;\x1b\xff&#34;)</span>`; !strings.Contains(regRows(t, r.body)["sync"], want) {
		t.Errorf("the row of sync lacks %s:\n%s", want, regRows(t, r.body)["sync"])
	}
}
