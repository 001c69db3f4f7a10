package dqweb_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// count returns the number in the element marked data-k=key (the first
// one, for the overview: in the row of queue "emails" < "orders", so
// callers pass the row).
func count(t *testing.T, body, key string) string {
	t.Helper()
	m := regexp.MustCompile(`data-k="` + key + `">([^<]*)<`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s count in\n%s", key, body)
	}
	return m[1]
}

func TestPagesShowTheCounts(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	ov := get(t, c, f.Base)
	if ov.status != http.StatusOK {
		t.Fatalf("overview: %d\n%s", ov.status, ov.body)
	}
	row := ov.body[strings.Index(ov.body, `data-queue="orders"`):]
	row = row[:strings.Index(row, "</tr>")]
	qp := get(t, c, f.QueueURL("orders"))
	for k, want := range webtest.FixtureCount {
		if got := count(t, row, k); got != fmt.Sprint(want) {
			t.Errorf("overview: %s = %s, want %d", k, got, want)
		}
		if got := count(t, qp.body, k); got != fmt.Sprint(want) {
			t.Errorf("queue page: %s = %s, want %d", k, got, want)
		}
	}
	if !strings.Contains(row, `class="has-dead"`) || !strings.Contains(row, `class="n dead" data-k="dead"`) {
		t.Errorf("orders has dead items but its row is not highlighted:\n%s", row)
	}
	for _, name := range []string{"emails", html.EscapeString(webtest.OddQueue)} {
		if !strings.Contains(ov.body, `data-queue="`+name+`"`) {
			t.Errorf("overview lacks queue %s", name)
		}
	}
	// Every fixture id is listed in its state's tab, and only there.
	tabs := map[string][]string{"inflight": webtest.InFlightIDs, "scheduled": append(append(append([]string{}, webtest.OverdueIDs...), webtest.SoonIDs...), webtest.LaterIDs...), "dead": webtest.DeadIDs}
	for section, ids := range tabs {
		body := get(t, c, f.TabURL("orders", section)).body
		s := body[strings.Index(body, `<section id="`+section+`" class="list">`):]
		s = s[:strings.Index(s, "</section>")]
		for _, id := range ids {
			if !strings.Contains(s, `data-id="`+html.EscapeString(id)+`"`) {
				t.Errorf("tab %s lacks %q", section, id)
			}
		}
		for other, ids := range tabs {
			if other != section && strings.Contains(s, `data-id="`+html.EscapeString(ids[0])+`"`) {
				t.Errorf("tab %s lists %q of %s", section, ids[0], other)
			}
		}
		// The lease deadline of an in-flight item is about 10 minutes away.
		if section == "inflight" && !regexp.MustCompile(`in (9m5\d|10m0)`).MatchString(s) {
			t.Errorf("no lease deadline about 10m ahead on the in-flight tab")
		}
	}
	it := get(t, c, f.ItemURL("orders", "mail:7"))
	for _, want := range []string{`data-k="state" class="dead">dead`, "max attempts: smtp 421", "&#34;to&#34;: &#34;u7@example.com&#34;,\n  &#34;order&#34;: 7"} {
		if !strings.Contains(it.body, want) {
			t.Errorf("item page lacks %q:\n%s", want, it.body)
		}
	}
	if r := get(t, c, f.ItemURL("orders", "nope")); r.status != http.StatusNotFound {
		t.Errorf("unknown item: %d, want 404", r.status)
	}
	if r := get(t, c, f.QueueURL("nope")); r.status != http.StatusNotFound {
		t.Errorf("unknown queue: %d, want 404", r.status)
	}
}

// TestDueChart checks the chart's bars against the fixture: 3 overdue,
// 5 due in the 11th minute, 2 in the 46th, and one (25h) beyond the hour.
func TestDueChart(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	body := get(t, client(t), f.QueueURL("orders")).body
	svg := body[strings.Index(body, `<svg class="chart"`):]
	svg = svg[:strings.Index(svg, "</svg>")]
	var counts []string
	for _, m := range regexp.MustCompile(`<rect class="bar (\w+)"[^>]*data-count="(\d+)"`).FindAllStringSubmatch(svg, -1) {
		counts = append(counts, m[1]+"="+m[2])
	}
	want := []string{"overdue=3"}
	for i := range 60 {
		n := map[int]int{10: 5, 45: 2}[i]
		want = append(want, fmt.Sprintf("due=%d", n))
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("chart bars\n got %v\nwant %v", counts, want)
	}
	if !strings.Contains(body, "1 more due after the hour") {
		t.Errorf("the item due in 25h is not mentioned")
	}
}

// TestEverythingIsEscaped: ids, queue names, reasons and payloads from
// Redis appear as text, never as markup.
func TestEverythingIsEscaped(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	for _, u := range []string{f.Base, f.QueueURL("orders"), f.TabURL("orders", "dead"), f.ItemURL("orders", webtest.XSSID), f.QueueURL(webtest.OddQueue), f.TabURL(webtest.OddQueue, "scheduled"), f.ItemURL(webtest.OddQueue, "one")} {
		r := get(t, c, u)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d", u, r.status)
		}
		for _, raw := range []string{webtest.XSSPayload, webtest.XSSReason, `<ird>`, `"><script`} {
			if strings.Contains(r.body, raw) {
				t.Errorf("%s holds %q unescaped", u, raw)
			}
		}
		// The only script is our file.
		if n := strings.Count(r.body, "<script"); n != 1 || !strings.Contains(r.body, `<script src="/dq/static/dqweb.js?v=`) {
			t.Errorf("%s has %d script elements", u, n)
		}
		if inlineHandler(r.body) {
			t.Errorf("%s has an inline event handler or style attribute", u)
		}
	}
	qp := get(t, c, f.TabURL("orders", "dead")).body
	for _, want := range []string{html.EscapeString(webtest.XSSPayload), html.EscapeString(webtest.XSSReason), html.EscapeString(webtest.XSSID)} {
		if !strings.Contains(qp, want) {
			t.Errorf("queue page lacks %q as text", want)
		}
	}
	ov := get(t, c, f.Base).body
	if !strings.Contains(ov, ">"+html.EscapeString(webtest.OddQueue)+"</a>") {
		t.Errorf("overview lacks the odd queue name as text")
	}
	// An error message quotes what was asked for, escaped too.
	r := get(t, c, f.QueueURL(`<b>x</b>`))
	if r.status != http.StatusNotFound || strings.Contains(r.body, "<b>x</b>") || !strings.Contains(r.body, "&lt;b&gt;x&lt;/b&gt;") {
		t.Errorf("error page: %d\n%s", r.status, r.body)
	}
}

// inlineHandler reports whether body has a tag with an inline event
// handler or style attribute. Attribute values are blanked first:
// html/template writes each in double quotes, with any quote, < and > in
// it escaped, so text in a value is no attribute (a reason "<img
// onerror=...>" quoted in a data-confirm question is text), and markup
// that broke out of a value would stand outside the quotes.
func inlineHandler(body string) bool {
	values := regexp.MustCompile(`"[^"]*"`)
	handler := regexp.MustCompile(`(?i)([\s"]on[a-z]+\s*=|style\s*=)`)
	for _, tag := range regexp.MustCompile(`<[^>]*>`).FindAllString(body, -1) {
		if handler.MatchString(values.ReplaceAllString(tag, `""`)) {
			return true
		}
	}
	return false
}

// TestInlineHandlerCheck: inlineHandler finds handlers and styles
// however written, and not text in a quoted value or in the page's text.
func TestInlineHandlerCheck(t *testing.T) {
	for body, want := range map[string]bool{
		`<img src=x onerror=alert(2)>`: true,
		`<a href="x" onclick="y">`:     true,
		`<a href="x"onclick="y">`:      true,
		`<p style="color:red">`:        true,
		`<p data-x="1" STYLE = "">`:    true,
		`<a href="x" ONMOUSEOVER='y'>`: true,
		`<form data-confirm="died of &#34;&lt;img src=x onerror=alert(2)&gt;&#34;?">`: false,
		`<p>onclick=x style=y</p>`: false,
	} {
		if got := inlineHandler(body); got != want {
			t.Errorf("inlineHandler(%q) = %v, want %v", body, got, want)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	wantCSP := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	for _, u := range []string{f.Base, f.QueueURL("orders"), f.ItemURL("orders", webtest.XSSID), f.Base + "nope", f.Base + "static/dqweb.js"} {
		r := get(t, c, u)
		if got := r.header.Get("Content-Security-Policy"); got != wantCSP {
			t.Errorf("%s: CSP %q, want %q", u, got, wantCSP)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", u, r.header)
		}
	}
	js := get(t, c, f.Base+"static/dqweb.js")
	if js.status != http.StatusOK || !strings.HasPrefix(js.header.Get("Content-Type"), "text/javascript") || !strings.Contains(js.body, "confirm") {
		t.Errorf("script: %d %s", js.status, js.header.Get("Content-Type"))
	}
	// The CSRF cookie is SameSite=Strict, HttpOnly and scoped to the prefix.
	r := get(t, client(t), f.Base)
	sc := r.header.Get("Set-Cookie")
	for _, want := range []string{"dqweb_csrf=", "Path=/dq/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %q", sc, want)
		}
	}
}

// action posts an action with a valid token, confirmed.
func action(t *testing.T, f *webtest.Fixture, c *http.Client, form url.Values) response {
	t.Helper()
	form.Set("csrf", token(t, c, f.QueueURL("orders")))
	form.Set("confirmed", "yes")
	return post(t, c, f.Base+"action", form)
}

func TestActions(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	steps := []struct {
		form   url.Values
		status int
		says   string
		check  func() bool
	}{
		{url.Values{"op": {"requeue"}, "q": {"orders"}, "id": {"mail:7"}}, 200, `Requeued dead item &#34;mail:7&#34;`,
			func() bool { return f.State(t, "mail:7") == redisq.StateScheduled }},
		{url.Values{"op": {"requeue"}, "q": {"orders"}, "id": {"mail:7"}}, 409, "is not dead", nil},
		{url.Values{"op": {"delete-dead"}, "q": {"orders"}, "id": {"nope"}}, 404, "No item &#34;nope&#34;", nil},
		{url.Values{"op": {"delete-dead"}, "q": {"orders"}, "id": {webtest.XSSID}}, 200, "Deleted dead item",
			func() bool { return f.State(t, webtest.XSSID) == 0 }},
		{url.Values{"op": {"delete"}, "q": {"orders"}, "id": {"charge:1"}}, 200, "Marked in-flight item",
			func() bool { return f.State(t, "charge:1") == redisq.StateInFlight }},
		{url.Values{"op": {"delete"}, "q": {"orders"}, "id": {"soon:1"}}, 200, "Deleted item &#34;soon:1&#34;",
			func() bool { return f.State(t, "soon:1") == 0 }},
		{url.Values{"op": {"requeue-all"}, "q": {"orders"}}, 200, "Requeued 1 dead item of",
			func() bool { return f.State(t, "blob:1") == redisq.StateScheduled }},
		{url.Values{"op": {"delete-all-dead"}, "q": {"orders"}}, 200, "Deleted 0 dead items", nil},
		{url.Values{"op": {"purge"}, "q": {"orders"}, "state": {"scheduled"}}, 200, "deleted 12 scheduled items",
			func() bool { return f.State(t, "late:1") == 0 && f.State(t, "blob:1") == 0 }},
		{url.Values{"op": {"purge"}, "q": {"orders"}, "state": {"bogus"}}, 400, "unknown state", nil},
		{url.Values{"op": {"explode"}, "q": {"orders"}}, 400, "unknown action", nil},
		{url.Values{"op": {"requeue"}, "q": {"orders"}}, 400, "needs an item id", nil},
		{url.Values{"op": {"requeue-all"}, "q": {"nope"}}, 404, "no queue named", nil},
	}
	for _, s := range steps {
		r := action(t, f, c, s.form)
		if r.status != s.status || !strings.Contains(r.body, s.says) {
			t.Fatalf("%v: %d, want %d with %q\n%s", s.form, r.status, s.status, s.says, r.body)
		}
		if s.check != nil && !s.check() {
			t.Fatalf("%v: reported but not done", s.form)
		}
	}
}

// TestActionsAreConfirmed: a POST without confirmed=yes changes nothing
// and answers with a confirmation form that does the action.
func TestActionsAreConfirmed(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	form := url.Values{"op": {"delete-dead"}, "q": {"orders"}, "id": {webtest.XSSID}, "csrf": {token(t, c, f.QueueURL("orders"))}}
	r := post(t, c, f.Base+"action", form)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Delete dead item &#34;x\\&#34;") || !strings.Contains(r.body, `name="confirmed" value="yes"`) {
		t.Fatalf("confirmation page: %d\n%s", r.status, r.body)
	}
	if f.State(t, webtest.XSSID) != redisq.StateDead {
		t.Fatal("an unconfirmed action changed the item")
	}
	// Submit the confirmation form as it is.
	again := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`).FindAllStringSubmatch(r.body, -1) {
		again.Set(m[1], html.UnescapeString(m[2]))
	}
	if r := post(t, c, f.Base+"action", again); r.status != http.StatusOK || f.State(t, webtest.XSSID) != 0 {
		t.Fatalf("confirmed: %d, state %v\n%s", r.status, f.State(t, webtest.XSSID), r.body)
	}
}

func TestCSRF(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	tok := token(t, c, f.QueueURL("orders"))
	form := func(tok string) url.Values {
		return url.Values{"op": {"delete-all-dead"}, "q": {"orders"}, "csrf": {tok}, "confirmed": {"yes"}}
	}
	cases := map[string]func() response{
		"no token":      func() response { return post(t, c, f.Base+"action", form("")) },
		"wrong token":   func() response { return post(t, c, f.Base+"action", form(strings.Repeat("A", 43))) },
		"no cookie":     func() response { return post(t, client(t), f.Base+"action", form(tok)) },
		"another token": func() response { return post(t, c, f.Base+"action", form(token(t, client(t), f.QueueURL("orders")))) },
		"cross-site": func() response {
			req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(form(tok).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			return do(t, c, req)
		},
		"other origin": func() response {
			req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(form(tok).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "https://evil.example")
			return do(t, c, req)
		},
	}
	for name, send := range cases {
		if r := send(); r.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403\n%s", name, r.status, r.body)
		}
	}
	if f.State(t, "mail:7") != redisq.StateDead {
		t.Fatal("a refused request changed the queue")
	}
	// GET never changes anything.
	if r := get(t, c, f.Base+"action?"+form(tok).Encode()); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET action: %d", r.status)
	}
	if r := post(t, c, f.QueueURL("orders"), form(tok)); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST to a page: %d", r.status)
	}
	if r := post(t, c, f.Base+"action", form(tok)); r.status != http.StatusOK {
		t.Errorf("valid request: %d\n%s", r.status, r.body)
	}
}

func TestReadOnly(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{ReadOnly: true})
	c := client(t)
	for _, u := range []string{f.Base, f.QueueURL("orders"), f.TabURL("orders", "dead"), f.TabURL("orders", "scheduled"), f.ItemURL("orders", "mail:7")} {
		r := get(t, c, u)
		if r.status != http.StatusOK || strings.Contains(r.body, `method="post"`) || strings.Contains(r.body, "data-op=") || !strings.Contains(r.body, "read-only") {
			t.Errorf("%s in read-only mode: %d, forms shown or no read-only badge", u, r.status)
		}
		if strings.Contains(r.header.Get("Set-Cookie"), "dqweb_csrf") {
			t.Errorf("%s sets a CSRF cookie in read-only mode", u)
		}
	}
	// Even a request that would pass every check is refused.
	rw := webtest.NewFixture(t, dqweb.Options{})
	tok := token(t, c, rw.QueueURL("orders"))
	for _, op := range []string{"requeue", "delete-dead", "delete", "requeue-all", "delete-all-dead", "purge"} {
		jar := c.Jar
		u, _ := url.Parse(f.Base)
		jar.SetCookies(u, []*http.Cookie{{Name: "dqweb_csrf", Value: tok, Path: "/dq/"}})
		r := post(t, c, f.Base+"action", url.Values{"op": {op}, "q": {"orders"}, "id": {"mail:7"}, "state": {"dead"}, "csrf": {tok}, "confirmed": {"yes"}})
		if r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
			t.Errorf("%s in read-only mode: %d, want 403", op, r.status)
		}
	}
	st, err := f.Q.Stats(context.Background())
	if err != nil || st.Dead != 3 || st.Scheduled != 11 {
		t.Fatalf("read-only dashboard changed the queue: %+v %v", st, err)
	}
}

func TestPaging(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	// 120 more scheduled items, due one second apart from 2h on: with the
	// fixture's 11, pages of 50 hold 11+39, 50, 31.
	for i := range 120 {
		if _, err := f.Q.EnqueueAfter(ctx, fmt.Sprintf("p%03d", i), nil, 2*time.Hour+time.Duration(i)*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	var seen []string
	u := f.TabURL("orders", "scheduled")
	for page := 0; ; page++ {
		body := get(t, c, u).body
		s := body[strings.Index(body, `<section id="scheduled" class="list">`):]
		s = s[:strings.Index(s, "</section>")]
		for _, m := range regexp.MustCompile(`<tr data-id="([^"]*)"`).FindAllStringSubmatch(s, -1) {
			seen = append(seen, html.UnescapeString(m[1]))
		}
		next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(s)
		if next == nil {
			if page != 2 {
				t.Fatalf("%d pages, want 3", page+1)
			}
			break
		}
		u = f.Srv.URL + html.UnescapeString(next[1])
	}
	if len(seen) != 131 {
		t.Fatalf("saw %d items, want 131", len(seen))
	}
	// Due order: overdue, 10m, 45m, 2h+i s, then 25h.
	for i := range 120 {
		if want := fmt.Sprintf("p%03d", i); seen[10+i] != want {
			t.Fatalf("item %d is %q, want %q", 10+i, seen[10+i], want)
		}
	}
	if seen[130] != "nextday" {
		t.Fatalf("last item %q, want nextday", seen[130])
	}
	// An offset past the end shows an empty page, not an error.
	if r := get(t, c, f.TabURL("orders", "scheduled")+"&offset=99999"); r.status != http.StatusOK {
		t.Fatalf("offset past the end: %d", r.status)
	}
}

func TestPrefixAndRouting(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{Prefix: "/ops/queues"})
	c := client(t)
	body := get(t, c, f.Base).body
	if !strings.Contains(body, `href="/ops/queues/queue?q=orders"`) || !strings.Contains(body, `href="/ops/queues/static/dqweb.css?v=`) {
		t.Fatalf("links do not carry the prefix:\n%s", body)
	}
	if r := get(t, c, f.Base+"nope"); r.status != http.StatusNotFound {
		t.Errorf("unknown page: %d", r.status)
	}
	h := dqweb.Handler(f.C, dqweb.Options{Prefix: "/dq/"})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/elsewhere/", nil)
	req.Host = "127.0.0.1" // httptest's example.com is refused (TestHostCheck)
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("path outside the prefix: %d", rec.Code)
	}
	defer func() {
		if recover() == nil {
			t.Error("a prefix without a leading slash did not panic")
		}
	}()
	dqweb.Handler(f.C, dqweb.Options{Prefix: "dq/"})
}

// TestActionRedirectsAfterPost (issue 24, item 14): an action's result
// was the POST's response, so a reload repeated the action. Now a done
// action answers 303 See Other to its result page: a GET that shows the
// result again and again and does nothing, only to the browser that
// posted (its CSRF cookie), and a 404 once it is gone. An unconfirmed
// POST still gets its confirmation page, and a refused one its error.
func TestActionRedirectsAfterPost(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	form := url.Values{"op": {"delete-all-dead"}, "q": {"orders"}, "csrf": {token(t, c, f.QueueURL("orders"))}}
	if r := postOnly(t, c, f.Base+"action", form); r.status != http.StatusOK || !strings.Contains(r.body, `name="confirmed" value="yes"`) {
		t.Fatalf("unconfirmed: %d, want the confirmation page", r.status)
	}
	form.Set("confirmed", "yes")
	r := postOnly(t, c, f.Base+"action", form)
	loc := r.header.Get("Location")
	if r.status != http.StatusSeeOther || !regexp.MustCompile(`^/dq/result\?r=[0-9a-f]{32}$`).MatchString(loc) {
		t.Fatalf("confirmed: %d, Location %q; want 303 to /dq/result?r=ID", r.status, loc)
	}
	if st, _ := f.Q.Stats(context.Background()); st.Dead != 0 {
		t.Fatalf("%d dead after the action", st.Dead)
	}
	webtest.DeadAgain(t, f, "fresh")
	for range 2 {
		r := get(t, c, f.Srv.URL+loc)
		if r.status != http.StatusOK || !strings.Contains(r.body, `Deleted 3 dead items of queue &#34;orders&#34;.`) || !strings.Contains(r.body, `href="/dq/queue?q=orders" id="back"`) {
			t.Fatalf("result page: %d\n%s", r.status, r.body)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("result page Cache-Control %q", r.header.Get("Cache-Control"))
		}
	}
	if f.State(t, "fresh") != redisq.StateDead {
		t.Fatal("a GET of the result page did the action again")
	}
	other := client(t)
	token(t, other, f.QueueURL("orders"))
	for _, u := range []string{f.Srv.URL + loc, f.Base + "result?r=0123", f.Base + "result"} {
		if r := get(t, other, u); r.status != http.StatusNotFound || !strings.Contains(r.body, "no longer here") {
			t.Errorf("%s from another browser: %d, want 404\n%s", u, r.status, r.body)
		}
	}
	// A failed action's result keeps its status.
	form.Set("q", "nope")
	if r := postOnly(t, c, f.Base+"action", form); r.status != http.StatusNotFound {
		t.Errorf("an action on no queue: %d, want 404 at once", r.status)
	}
	form.Set("q", "orders")
	form.Set("op", "requeue")
	form.Set("id", "nope")
	if r := post(t, c, f.Base+"action", form); r.status != http.StatusNotFound || !strings.Contains(r.body, "No item &#34;nope&#34;") {
		t.Errorf("requeue of no item: %d, want its result page with 404\n%s", r.status, r.body)
	}
}
