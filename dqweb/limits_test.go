package dqweb_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// Hostile limit keys: markup, a bidi override, an invalid byte.
const (
	xssKey = `<script>alert(4)</script>`
	rtlKey = "rtl\u202egnp"
	badKey = "bad\xffkey"
)

// limitRows returns the rows of the limits panel's table of kind ("rate"
// or "conc"): the keys as shown, in order, and each row by key.
func limitRows(t *testing.T, body, kind string) ([]string, map[string]string) {
	t.Helper()
	table := regexp.MustCompile(`(?s)<table class="items limits ` + kind + `[ "][^>]*>.*?</table>`).FindString(body)
	var keys []string
	rows := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<tr data-key="([^"]*)"[^>]*>.*?</tr>`).FindAllStringSubmatch(table, -1) {
		k := html.UnescapeString(m[1])
		keys = append(keys, k)
		rows[k] = m[0]
	}
	return keys, rows
}

// formIn returns the fields of the first form of class class in s, as a
// browser would send them (text inputs with their values).
func formIn(t *testing.T, s, class string) url.Values {
	t.Helper()
	f := regexp.MustCompile(`(?s)<form [^>]*class="` + class + `".*?</form>`).FindString(s)
	if f == "" {
		t.Fatalf("no form of class %s in\n%s", class, s)
	}
	v := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="(?:hidden|text)" name="(\w+)" value="([^"]*)"`).FindAllStringSubmatch(f, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// confirmForm returns the fields of a confirmation page's form.
func confirmForm(body string) url.Values {
	v := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// hscans is how many HSCANs the fixture's Redis has run: only reading
// the limits (RateLimits, ConcurrencyLimits) runs one.
func hscans(t *testing.T, f *webtest.Fixture) int {
	t.Helper()
	info, err := f.C.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_hscan:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// claimAll claims what is due in f's "orders" until nothing is.
func claimAll(t *testing.T, f *webtest.Fixture) map[string]bool {
	t.Helper()
	took := map[string]bool{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		ms, err := f.Q.TakeBatch(ctx, 100)
		cancel()
		if err != nil {
			return took
		}
		for _, m := range ms {
			took[m.ID] = true
		}
	}
}

// TestLimitsPanel: the summary lists every rate limit (its limit, the
// claims in its window, when there is room, the items waiting, the last
// slot given) and every concurrency limit (its limit, the items leased,
// waiting), the most waiting items first, then by key, hostile keys
// escaped; each row's Remove form
// carries the key's exact bytes. A queue without limits has one quiet
// line.
func TestLimitsPanel(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	for key, l := range map[string]redisq.RateLimit{"smtp": {N: 1, Per: time.Hour}, "": {N: 100, Per: time.Minute},
		xssKey: {N: 5, Per: time.Second}, rtlKey: {N: 7, Per: 90 * time.Minute}} {
		if err := f.Q.SetRateLimit(ctx, key, l); err != nil {
			t.Fatal(err)
		}
	}
	for key, k := range map[string]int{"acct:1": 1, badKey: 3} {
		if err := f.Q.SetConcurrencyLimit(ctx, key, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range []struct{ id, key string }{{"s1", "smtp"}, {"s2", "smtp"}, {"a1", "acct:1"}, {"a2", "acct:1"}} {
		if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: it.id, At: time.Unix(1, 0), Job: redisq.Job{LimitKey: it.key}}); err != nil {
			t.Fatal(err)
		}
	}
	// s1 and a1 are claimed; s2 waits for a slot, a2 for a place.
	if took := claimAll(t, f); !took["s1"] || took["s2"] || !took["a1"] || took["a2"] {
		t.Fatalf("claimed %v", took)
	}
	c := client(t)
	r := get(t, c, f.QueueURL("orders"))
	checkPage(t, "queue page", r, 300<<10)
	if strings.Contains(r.body, "<script>alert(4)") {
		t.Fatal("a key's markup reached the page raw")
	}

	keys, rows := limitRows(t, r.body, "rate")
	want := []string{"smtp", dqweb.Shown(""), dqweb.Shown(xssKey), dqweb.Shown(rtlKey)}
	if strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Fatalf("rate limits listed %q, want %q: the busiest, then by key", keys, want)
	}
	for key, says := range map[string][]string{
		"smtp": {`data-k="limit">1 per 1h<`, `data-k="used">1 of 1<`, `data-k="room"><span class="badge full">full</span> <time`, `>in 1h0m0s</time>`,
			`data-k="waiting">1<`, `data-k="last-slot"><time`},
		dqweb.Shown(""): {`<span class="name">&#34;&#34;</span> <span class="muted">(items without a limit key)</span>`, `data-k="limit">100 per 1m<`,
			`data-k="used">3 of 100<`, `data-k="room">now<`, `data-k="waiting">0<`, `data-k="last-slot">–<`},
		dqweb.Shown(xssKey): {`<span class="name">&lt;script&gt;alert(4)&lt;/script&gt;</span>`, `data-k="limit">5 per 1s<`, `data-k="used">0 of 5<`},
		dqweb.Shown(rtlKey): {`<span class="name">&#34;rtl\u202egnp&#34;</span>`, `data-k="limit">7 per 1h30m<`, `value="7/1h30m"`},
	} {
		for _, w := range says {
			if !strings.Contains(rows[key], w) {
				t.Errorf("rate limit %s lacks %s\n%s", key, w, rows[key])
			}
		}
	}
	keys, rows = limitRows(t, r.body, "conc")
	if want := []string{"acct:1", dqweb.Shown(badKey)}; strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Fatalf("concurrency limits listed %q, want %q", keys, want)
	}
	for key, says := range map[string][]string{
		"acct:1":            {`data-k="limit">1<`, `data-k="leased">1 of 1 <span class="badge full">full</span><`, `data-k="waiting">1<`},
		dqweb.Shown(badKey): {`<span class="name">&#34;bad\xffkey&#34;</span>`, `data-k="limit">3<`, `data-k="leased">0 of 3<`, `data-k="waiting">0<`},
	} {
		for _, w := range says {
			if !strings.Contains(rows[key], w) {
				t.Errorf("concurrency limit %s lacks %s\n%s", key, w, rows[key])
			}
		}
	}
	for _, w := range []string{`<h3 id="rate-limits">Rate limits <span class="count">4</span></h3>`, `<h3 id="concurrency-limits">Concurrency limits <span class="count">2</span></h3>`} {
		if !strings.Contains(r.body, w) {
			t.Errorf("the panel lacks %s", w)
		}
	}

	// The hostile keys' Remove buttons ask naming them escaped, and act
	// on their exact bytes.
	_, rates := limitRows(t, r.body, "rate")
	_, concs := limitRows(t, r.body, "conc")
	for _, k := range []struct {
		key, row string
		conc     bool
	}{{xssKey, rates[dqweb.Shown(xssKey)], false}, {rtlKey, rates[dqweb.Shown(rtlKey)], false}, {badKey, concs[dqweb.Shown(badKey)], true}} {
		if !strings.Contains(k.row, `data-confirm="Remove the `) || !strings.Contains(k.row, "of key "+html.EscapeString(dqweb.Quoted(k.key))) {
			t.Errorf("the Remove button of %+q does not ask naming it:\n%s", k.key, k.row)
		}
		form := formIn(t, k.row, "act")
		form.Set("confirmed", "yes")
		res := post(t, c, f.Base+"action", form)
		checkPage(t, "result of removing "+dqweb.Quoted(k.key), res, 100<<10)
		if !strings.Contains(res.body, "Removed the ") {
			t.Errorf("removing %+q: %s", k.key, res.body)
		}
		if k.conc {
			if s, err := f.Q.ConcurrencyLimitState(ctx, k.key); err != nil || s.Limit != 0 {
				t.Errorf("%+q still limited: %+v %v", k.key, s, err)
			}
		} else if s, err := f.Q.RateLimitState(ctx, k.key); err != nil || s.Limit.N != 0 {
			t.Errorf("%+q still limited: %+v %v", k.key, s, err)
		}
	}
	if s, err := f.Q.RateLimitState(ctx, "smtp"); err != nil || s.Limit.N != 1 {
		t.Fatalf("another key's limit changed: %+v %v", s, err)
	}

	// No limit: one quiet line, no table.
	e := get(t, c, f.QueueURL("emails"))
	checkPage(t, "emails", e, 100<<10)
	if !strings.Contains(e.body, `<p class="muted small" id="nolimits">No rate or concurrency limit`) || strings.Contains(e.body, "<h2>Limits</h2>") ||
		strings.Contains(e.body, "table class=\"items limits") {
		t.Errorf("a queue without limits:\n%s", section(t, e.body, `<section id="limits">`, "</section>"))
	}
}

// TestLimitsCostNothingWithout: a queue's summary reads its limits of a
// kind only when Stats counts some (a queue without limits pays no round
// trip), and no other tab reads them.
func TestLimitsCostNothingWithout(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	c := client(t)
	view := func(u string) int {
		t.Helper()
		before := hscans(t, f)
		if r := get(t, c, u); r.status != http.StatusOK {
			t.Fatalf("%s: %d", u, r.status)
		}
		return hscans(t, f) - before
	}
	if n := view(f.QueueURL("orders")); n != 0 {
		t.Errorf("the summary of a queue without limits read them: %d HSCANs", n)
	}
	if err := f.Q.SetRateLimit(ctx, "smtp", redisq.RateLimit{N: 1, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	if n := view(f.QueueURL("orders")); n != 1 {
		t.Errorf("with a rate limit only: %d HSCANs, want 1", n)
	}
	if err := f.Q.SetConcurrencyLimit(ctx, "acct", 2); err != nil {
		t.Fatal(err)
	}
	if n := view(f.QueueURL("orders")); n != 2 {
		t.Errorf("with both kinds: %d HSCANs, want 2", n)
	}
	for _, tab := range []string{"scheduled", "dead", "workers"} {
		if n := view(f.TabURL("orders", tab)); n != 0 {
			t.Errorf("the %s tab read the limits: %d HSCANs", tab, n)
		}
	}
}

// TestLimitsPanelBounds: the panel lists the 100 busiest keys of a kind,
// the most waiting items first (issue 41, item 11: the first 100 by key,
// or none at all past 1,000 keys), and says how many more there are and
// the items they hold; past maxLimitRead keys of a kind it reads no more
// of them, says so, and lists the busiest of those it read.
func TestLimitsPanelBounds(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	const keys = 1200 // past the 1,000 the panel read at most
	for i := range keys {
		if err := f.Q.SetRateLimit(ctx, fmt.Sprintf("k%04d", i), redisq.RateLimit{N: 1, Per: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Q.SetConcurrencyLimit(ctx, "acct", 2); err != nil {
		t.Fatal(err)
	}
	// k1150 and k0500 have items waiting; k0007 too, fewer.
	for key, n := range map[string]int{"k1150": 3, "k0500": 2, "k0007": 1} {
		for i := range n + 1 {
			if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprint(key, "#", i), At: time.Unix(1, 0), Job: redisq.Job{LimitKey: key}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	claimAll(t, f)
	c := client(t)
	r := get(t, c, f.QueueURL("orders"))
	checkPage(t, "queue page", r, 1<<20)
	keys100, rows := limitRows(t, r.body, "rate")
	if len(keys100) != 100 || strings.Join(keys100[:5], " ") != "k1150 k0500 k0007 k0000 k0001" {
		t.Errorf("listed %d rate limits, first %q; want 100, k1150 k0500 k0007 then the idle ones by key", len(keys100), keys100[:min(5, len(keys100))])
	}
	if !strings.Contains(rows["k1150"], `data-k="waiting">3<`) {
		t.Errorf("k1150's row: %s", rows["k1150"])
	}
	if more := section(t, r.body, `id="rate-more"`, "</p>"); !strings.Contains(more, "The 100 busiest keys are listed, the most waiting items first. 1,100 more rate limits not listed, with 0 items waiting.") {
		t.Errorf("the note of the keys not listed: %s", more)
	}
	if !strings.Contains(r.body, `Rate limits <span class="count">1,200</span>`) {
		t.Error("the count of rate limits is not 1,200")
	}

	// A bound: 500 keys read, in one page, the busiest of them listed.
	dqweb.SetMaxLimitRead(t, 500)
	before := hscans(t, f)
	r = get(t, c, f.QueueURL("orders"))
	checkPage(t, "queue page", r, 1<<20)
	if n := hscans(t, f) - before; n != 2 {
		t.Errorf("with the bound: %d HSCANs, want 2 (a page of each kind)", n)
	}
	if keys, _ := limitRows(t, r.body, "rate"); len(keys) != 100 {
		t.Errorf("with the bound, %d rate limits listed", len(keys))
	}
	if note := section(t, r.body, `id="rate-more"`, "</p>"); !strings.Contains(note, "400 more rate limits not listed") ||
		!strings.Contains(note, "700 rate limits not read: a view reads the first 500 keys.") {
		t.Errorf("the note past the bound: %s", note)
	}
	if keys, _ := limitRows(t, r.body, "conc"); len(keys) != 1 {
		t.Errorf("the concurrency limits are not listed: %q", keys)
	}
}

// lookupURL is the summary of f's "orders" with the lookup of key.
func lookupURL(f *webtest.Fixture, key string) string {
	return f.QueueURL("orders") + "&" + url.Values{"limitkey": {key}}.Encode()
}

// TestLimitLookup (issue 41, item 11): the panel's lookup shows one key's
// rate and concurrency limits, however many keys there are and whether
// or not the list reaches it, with their actions unless read-only;
// hostile keys (markup, bidi, a byte that is not UTF-8, in the URL) are
// shown escaped and acted on by their exact bytes; a key without limits,
// or too long, says so; the lookup form is a GET that changes nothing.
func TestLimitLookup(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	dqweb.SetMaxLimitRead(t, 50)
	for i := range 120 {
		if err := f.Q.SetRateLimit(ctx, fmt.Sprintf("k%03d", i), redisq.RateLimit{N: 1, Per: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{xssKey, rtlKey, badKey} {
		if err := f.Q.SetRateLimit(ctx, key, redisq.RateLimit{N: 2, Per: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := f.Q.SetConcurrencyLimit(ctx, key, 3); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := f.Q.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprint("w", i), At: time.Unix(1, 0), Job: redisq.Job{LimitKey: badKey}}); err != nil {
			t.Fatal(err)
		}
	}
	claimAll(t, f) // two of badKey's three are claimed: the third waits for a slot
	c := client(t)

	page := get(t, c, f.QueueURL("orders"))
	checkPage(t, "queue page", page, 1<<20)
	form := section(t, page.body, `<form method="get" action="/dq/queue#limits" class="find limitfind"`, "</form>")
	if !strings.Contains(form, `name="qx" value="`+hex.EncodeToString([]byte("orders"))+`"`) || !strings.Contains(form, `name="limitkey"`) || strings.Contains(form, "csrf") {
		t.Errorf("the lookup form:\n%s", form)
	}
	if strings.Contains(page.body, `id="lookup"`) {
		t.Error("a lookup shown that nobody asked for")
	}

	r := get(t, c, lookupURL(f, badKey))
	checkPage(t, "the lookup of a key that is not UTF-8", r, 1<<20)
	look := section(t, r.body, `<div id="lookup">`, "</div>\n<p")
	for _, w := range []string{`<h3>Limits of key &#34;bad\xffkey&#34;</h3>`, `<table class="items limits lookup-rate stack">`,
		`data-k="limit">2 per 1m<`, `data-k="used">2 of 2<`, `data-k="waiting">1<`, `<table class="items limits lookup-conc stack">`,
		`data-k="leased">2 of 3<`, `name="keyx" value="` + hex.EncodeToString([]byte(badKey)) + `"`} {
		if !strings.Contains(look, w) {
			t.Errorf("the lookup of %+q lacks %s:\n%s", badKey, w, look)
		}
	}
	// Its Remove acts on the exact bytes.
	remove := formIn(t, section(t, look, `<table class="items limits lookup-conc stack">`, "</table>"), "act")
	remove.Set("confirmed", "yes")
	if res := post(t, c, f.Base+"action", remove); !strings.Contains(res.body, "Removed the concurrency limit") {
		t.Errorf("removing from the lookup: %s", res.body)
	}
	if s, err := f.Q.ConcurrencyLimitState(ctx, badKey); err != nil || s.Limit != 0 {
		t.Errorf("%+q's concurrency limit after Remove: %+v %v", badKey, s, err)
	}

	for key, want := range map[string][]string{
		xssKey:   {`<h3>Limits of key &#34;&lt;script&gt;alert(4)&lt;/script&gt;&#34;</h3>`, `data-k="limit">2 per 1m<`, `value="&lt;script&gt;alert(4)&lt;/script&gt;"`},
		rtlKey:   {`<h3>Limits of key &#34;rtl\u202egnp&#34;</h3>`, `data-k="leased">0 of 3<`},
		"k119":   {`<h3>Limits of key &#34;k119&#34;</h3>`, `data-k="limit">1 per 1h<`, `<p class="small muted">No concurrency limit.</p>`},
		"nobody": {`<p class="muted" id="lookup-none">No rate or concurrency limit`},
		"":       {`<h3>Limits of the items without a limit key</h3>`, `id="lookup-none"`},
		strings.Repeat("L", redisq.MaxLimitKeyLen+1): {`A limit key has at most 1,024 bytes; this one has 1,025.`},
	} {
		r := get(t, c, lookupURL(f, key))
		checkPage(t, "the lookup of "+dqweb.Quoted(key), r, 1<<20)
		if strings.Contains(r.body, "<script>alert(4)") {
			t.Fatal("a key's markup reached the page raw")
		}
		look := section(t, r.body, `<div id="lookup">`, "</div>\n<p")
		for _, w := range want {
			if !strings.Contains(look+r.body, w) {
				t.Errorf("the lookup of %s lacks %s:\n%s", dqweb.Quoted(key), w, look)
			}
		}
	}

	// Read-only: the state, no forms.
	ro := webtest.NewFixture(t, dqweb.Options{ReadOnly: true})
	if err := ro.Q.SetRateLimit(ctx, rtlKey, redisq.RateLimit{N: 2, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	r = get(t, c, ro.QueueURL("orders")+"&"+url.Values{"limitkey": {rtlKey}}.Encode())
	checkPage(t, "a read-only lookup", r, 1<<20)
	if look := section(t, r.body, `<div id="lookup">`, "</div>\n<p"); !strings.Contains(look, `data-k="limit">2 per 1m<`) || strings.Contains(look, "<form") {
		t.Errorf("a read-only lookup:\n%s", look)
	}
}

// TestLimitActions: setting, changing and removing a key's rate limit and
// concurrency limit from the panel: a form where the limit is typed gets
// the confirmation page, which asks with the limit as parsed and the
// key's limit now and changes nothing; its form does the change, and the
// result page says what was done and leads back to the panel.
func TestLimitActions(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	c := client(t)
	page := get(t, c, f.QueueURL("orders")).body
	set := section(t, page, `<details class="setlimit">`, "</details>")
	rate := func() redisq.RateLimit {
		t.Helper()
		s, err := f.Q.RateLimitState(ctx, "smtp")
		if err != nil {
			t.Fatal(err)
		}
		return s.Limit
	}
	conc := func(key string) int {
		t.Helper()
		s, err := f.Q.ConcurrencyLimitState(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return s.Limit
	}
	// confirm posts form as typed, checks the question, then submits the
	// confirmation page's form and checks the result.
	confirm := func(form url.Values, question, result string, unchanged func() bool) {
		t.Helper()
		r := post(t, c, f.Base+"action", form)
		if r.status != http.StatusOK || !strings.Contains(r.body, html.EscapeString(question)) || !strings.Contains(r.body, `name="confirmed" value="yes"`) ||
			!strings.Contains(r.body, `<a href="/dq/queue?q=orders#limits">Cancel</a>`) {
			t.Fatalf("confirmation of %v: %d, want %q\n%s", form, r.status, question, r.body)
		}
		if !unchanged() {
			t.Fatalf("%v changed the limit before it was confirmed", form)
		}
		r = post(t, c, f.Base+"action", confirmForm(r.body))
		if r.status != http.StatusOK || !strings.Contains(r.body, html.EscapeString(result)) ||
			!strings.Contains(r.body, `<a href="/dq/queue?q=orders#limits" id="back">`) {
			t.Fatalf("result of %v: %d, want %q\n%s", form, r.status, result, r.body)
		}
	}

	// A rate limit: set on a new key, changed, removed.
	form := formIn(t, set, "limit")
	if form.Get("op") != "rate-limit" {
		t.Fatalf("the first form sets %q", form.Get("op"))
	}
	form.Set("key", "smtp")
	form.Set("rate", " 10/1m ")
	confirm(form, `Limit key "smtp" of queue "orders" to 10 per 1m? At most 10 of its items are claimed in any 1m, across every process;`,
		`Set the rate limit of key "smtp" of queue "orders" to 10 per 1m: at most 10 of its items are claimed in any 1m.`,
		func() bool { return rate().N == 0 })
	if l := rate(); l != (redisq.RateLimit{N: 10, Per: time.Minute}) {
		t.Fatalf("rate limit %v, want 10 per 1m", l)
	}
	_, rows := limitRows(t, get(t, c, f.QueueURL("orders")).body, "rate")
	edit := formIn(t, rows["smtp"], "limit")
	if edit.Get("rate") != "10/1m" {
		t.Errorf("the row's form holds %q", edit.Get("rate"))
	}
	edit.Set("rate", "20/1s")
	confirm(edit, `Change the rate limit of key "smtp" of queue "orders" from 10 per 1m to 20 per 1s?`,
		`Changed the rate limit of key "smtp" of queue "orders" from 10 per 1m to 20 per 1s.`,
		func() bool { return rate().N == 10 })
	if l := rate(); l != (redisq.RateLimit{N: 20, Per: time.Second}) {
		t.Fatalf("rate limit %v, want 20 per 1s", l)
	}
	_, rows = limitRows(t, get(t, c, f.QueueURL("orders")).body, "rate")
	remove := formIn(t, rows["smtp"], "act")
	confirm(remove, `Remove the rate limit of key "smtp" of queue "orders" (20 per 1s)? Its items are claimed as soon as they are due`,
		`Removed the rate limit of key "smtp" of queue "orders" (it was 20 per 1s)`, func() bool { return rate().N == 20 })
	if l := rate(); l.N != 0 {
		t.Fatalf("rate limit %v after its removal", l)
	}

	// The items without a limit key: an empty key.
	form.Set("key", "")
	form.Set("rate", "5/1s")
	confirm(form, `Limit the items without a limit key of queue "orders" to 5 per 1s?`,
		`Set the rate limit of the items without a limit key of queue "orders" to 5 per 1s`,
		func() bool { s, _ := f.Q.RateLimitState(ctx, ""); return s.Limit.N == 0 })
	if s, err := f.Q.RateLimitState(ctx, ""); err != nil || s.Limit != (redisq.RateLimit{N: 5, Per: time.Second}) {
		t.Fatalf("the limit of the items without a key: %+v %v", s, err)
	}

	// A concurrency limit: set, changed, removed by 0.
	form = formIn(t, set[strings.Index(set, "</form>"):], "limit")
	if form.Get("op") != "concurrency-limit" {
		t.Fatalf("the second form sets %q", form.Get("op"))
	}
	form.Set("key", "acct:42")
	form.Set("concurrency", "3")
	confirm(form, `Limit key "acct:42" of queue "orders" to 3 leased at once?`,
		`Set the concurrency limit of key "acct:42" of queue "orders" to 3: at most 3 of its items are leased at once.`,
		func() bool { return conc("acct:42") == 0 })
	if k := conc("acct:42"); k != 3 {
		t.Fatalf("concurrency limit %d, want 3", k)
	}
	_, rows = limitRows(t, get(t, c, f.QueueURL("orders")).body, "conc")
	edit = formIn(t, rows["acct:42"], "limit")
	edit.Set("concurrency", "5")
	confirm(edit, `Change the concurrency limit of key "acct:42" of queue "orders" from 3 to 5 (0 leased now, 0 waiting)?`,
		`Changed the concurrency limit of key "acct:42" of queue "orders" from 3 to 5 leased at once.`, func() bool { return conc("acct:42") == 3 })
	edit.Set("concurrency", "0")
	confirm(edit, `Remove the concurrency limit of key "acct:42" of queue "orders" (5 at once, 0 leased now)?`,
		`Removed the concurrency limit of key "acct:42" of queue "orders" (it was 5 at once)`, func() bool { return conc("acct:42") == 5 })
	if k := conc("acct:42"); k != 0 {
		t.Fatalf("concurrency limit %d after its removal", k)
	}
	// Removing a limit a key does not have changes nothing, and says so.
	if r := action(t, f, c, url.Values{"op": {"concurrency-limit"}, "q": {"orders"}, "key": {"nope"}, "concurrency": {"none"}}); r.status != http.StatusOK ||
		!strings.Contains(r.body, "No concurrency limit on key &#34;nope&#34; of queue &#34;orders&#34; to remove; nothing changed.") {
		t.Errorf("removing no limit: %d\n%s", r.status, r.body)
	}
}

// TestLimitFormsAreChecked: a limit action's key and limit are checked
// before anything is read, each refusal saying what is wrong.
func TestLimitFormsAreChecked(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	c := client(t)
	rate := func(key, r string) url.Values {
		return url.Values{"op": {"rate-limit"}, "q": {"orders"}, "key": {key}, "rate": {r}}
	}
	conc := func(key, k string) url.Values {
		return url.Values{"op": {"concurrency-limit"}, "q": {"orders"}, "key": {key}, "concurrency": {k}}
	}
	for _, c2 := range []struct {
		form url.Values
		says string
	}{
		{rate("k", "10"), "bad rate &#34;10&#34;: want N/PER, as 100/1m"},
		{rate("k", ""), "bad rate &#34;&#34;: want N/PER"},
		{rate("k", "0/1m"), "bad rate &#34;0/1m&#34;: N must be a whole number from 1 to 1,073,741,824"},
		{rate("k", "1073741825/1m"), "N must be a whole number from 1 to 1,073,741,824"},
		{rate("k", "x/1m"), "N must be a whole number"},
		{rate("k", "10/1x"), "bad rate &#34;10/1x&#34;: PER must be a duration, as 1s, 1m or 1h30m"},
		{rate("k", "10/-1s"), "PER must be more than 0 and at most 87600h"},
		{rate("k", "10/87601h"), "PER must be more than 0 and at most 87600h"},
		{rate("k", "10/1ns"), "PER is counted in whole microseconds"},
		{conc("k", "-1"), "bad concurrency &#34;-1&#34;: want K, a whole number from 1 to 1,073,741,824, or 0 (or none) to remove the limit"},
		{conc("k", "many"), "bad concurrency &#34;many&#34;"},
		{conc("k", "1073741825"), "bad concurrency"},
		{rate(strings.Repeat("k", redisq.MaxLimitKeyLen+1), "1/1s"), "is too long (1025 bytes; at most 1024)"},
		{url.Values{"op": {"rate-limit"}, "q": {"orders"}, "rate": {"1/1s"}}, "action rate-limit needs a limit key"},
		{url.Values{"op": {"rate-limit"}, "q": {"orders"}, "key": {"k"}, "rate": {"1/1s"}, "concurrency": {"2"}}, "takes a rate (field rate), not a concurrency"},
		{url.Values{"op": {"concurrency-limit"}, "q": {"orders"}, "key": {"k"}, "rate": {"1/1s"}, "concurrency": {"2"}}, "takes a concurrency (field concurrency), not a rate"},
		{url.Values{"op": {"rate-limit"}, "q": {"orders"}, "keyx": {"zz"}, "rate": {"1/1s"}}, "bad form field keyx"},
		{url.Values{"op": {"pause"}, "q": {"orders"}, "key": {"k"}}, "action pause takes no limit key or limit"},
		{url.Values{"op": {"queue-rate-limit"}, "q": {"orders"}, "key": {""}, "rate": {"1/1s"}}, "action queue-rate-limit limits the whole queue: it takes no limit key"},
		{url.Values{"op": {"queue-rate-limit"}, "q": {"orders"}, "keyx": {"6b"}, "rate": {"1/1s"}}, "it takes no limit key"},
		{url.Values{"op": {"queue-rate-limit"}, "q": {"orders"}, "concurrency": {"2"}}, "action queue-rate-limit takes a rate (field rate), not a concurrency"},
		{url.Values{"op": {"queue-rate-limit"}, "q": {"orders"}, "rate": {"10"}}, "bad rate &#34;10&#34;: want N/PER"},
		{url.Values{"op": {"queue-rate-limit"}, "q": {"orders"}}, "bad rate &#34;&#34;: want N/PER"},
		{url.Values{"op": {"queue-rate-limit"}, "q": {"orders"}, "rate": {"10/87601h"}}, "PER must be more than 0 and at most 87600h"},
	} {
		r := action(t, f, c, c2.form)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, c2.says) {
			t.Errorf("%v: %d, want 400 saying %q\n%s", c2.form, r.status, c2.says, r.body)
		}
	}
	st, err := f.Q.Stats(context.Background())
	if err != nil || st.RateLimits != 0 || st.ConcurrencyLimits != 0 || st.QueueRateLimit.N != 0 || st.Paused {
		t.Fatalf("a refused form changed the queue: %+v %v", st, err)
	}
}

// TestLimitActionsRefused: read-only, the panel shows the limits without
// a form and the actions are refused; a cross-origin POST or one without
// the CSRF token is refused too.
func TestLimitActionsRefused(t *testing.T) {
	ctx := context.Background()
	ro := webtest.NewFixture(t, dqweb.Options{ReadOnly: true})
	if err := ro.Q.SetRateLimit(ctx, "smtp", redisq.RateLimit{N: 3, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := ro.Q.SetConcurrencyLimit(ctx, "acct", 2); err != nil {
		t.Fatal(err)
	}
	if err := ro.Q.SetQueueRateLimit(ctx, redisq.RateLimit{N: 9, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	r := get(t, c, ro.QueueURL("orders"))
	checkPage(t, "read-only queue page", r, 100<<10)
	if strings.Contains(r.body, `method="post"`) || strings.Contains(r.body, "data-op=") || strings.Contains(r.body, "setlimit") {
		t.Error("the read-only panel has forms")
	}
	if _, rows := limitRows(t, r.body, "rate"); !strings.Contains(rows["smtp"], `data-k="limit">3 per 1m<`) {
		t.Errorf("the read-only panel does not show the rate limit:\n%s", r.body)
	}
	if _, rows := limitRows(t, r.body, "conc"); !strings.Contains(rows["acct"], `data-k="leased">0 of 2<`) {
		t.Errorf("the read-only panel does not show the concurrency limit:\n%s", r.body)
	}
	if row := section(t, r.body, `<tr data-limit="queue"`, "</tr>"); !strings.Contains(row, `data-k="limit">9 per 1h<`) {
		t.Errorf("the read-only panel does not show the queue's own limit:\n%s", row)
	}
	tok := strings.Repeat("T", 43)
	u, _ := url.Parse(ro.Base)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "dqweb_csrf", Value: tok, Path: "/dq/"}})
	for _, form := range []url.Values{
		{"op": {"rate-limit"}, "q": {"orders"}, "key": {"smtp"}, "rate": {"none"}},
		{"op": {"concurrency-limit"}, "q": {"orders"}, "key": {"acct"}, "concurrency": {"0"}},
		{"op": {"queue-rate-limit"}, "q": {"orders"}, "rate": {"none"}},
	} {
		form.Set("csrf", tok)
		form.Set("confirmed", "yes")
		if r := post(t, c, ro.Base+"action", form); r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
			t.Errorf("%s in read-only mode: %d, want 403", form.Get("op"), r.status)
		}
	}
	if st, err := ro.Q.Stats(ctx); err != nil || st.RateLimits != 1 || st.ConcurrencyLimits != 1 || st.QueueRateLimit.N != 9 {
		t.Fatalf("the read-only dashboard changed the limits: %+v %v", st, err)
	}

	f := webtest.NewFixture(t, dqweb.Options{})
	if err := f.Q.SetRateLimit(ctx, "smtp", redisq.RateLimit{N: 3, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	c = client(t)
	tok = token(t, c, f.QueueURL("orders"))
	for name, send := range map[string]func(url.Values) response{
		"cross-site": func(form url.Values) response {
			req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			return do(t, c, req)
		},
		"other origin": func(form url.Values) response {
			req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "https://evil.example")
			return do(t, c, req)
		},
		"no token": func(form url.Values) response {
			form.Del("csrf")
			return post(t, c, f.Base+"action", form)
		},
	} {
		for _, form := range []url.Values{
			{"op": {"rate-limit"}, "q": {"orders"}, "key": {"smtp"}, "rate": {"none"}},
			{"op": {"concurrency-limit"}, "q": {"orders"}, "key": {"acct"}, "concurrency": {"4"}},
			{"op": {"queue-rate-limit"}, "q": {"orders"}, "rate": {"1/1s"}},
		} {
			form.Set("csrf", tok)
			form.Set("confirmed", "yes")
			if r := send(form); r.status != http.StatusForbidden {
				t.Errorf("%s %s: %d, want 403", name, form.Get("op"), r.status)
			}
		}
	}
	if st, err := f.Q.Stats(ctx); err != nil || st.RateLimits != 1 || st.ConcurrencyLimits != 0 || st.QueueRateLimit.N != 0 {
		t.Fatalf("a refused request changed the limits: %+v %v", st, err)
	}
	// The same request, same-origin with the token, is done.
	if r := action(t, f, c, url.Values{"op": {"rate-limit"}, "q": {"orders"}, "key": {"smtp"}, "rate": {"none"}}); r.status != http.StatusOK {
		t.Errorf("the valid request: %d\n%s", r.status, r.body)
	}
	if st, err := f.Q.Stats(ctx); err != nil || st.RateLimits != 0 {
		t.Fatalf("the valid request did not remove the limit: %+v %v", st, err)
	}
}

// TestPartitionedHasNoLimits: a partitioned queue (whose redisq refuses
// limit keys and has no rate limit of its own) has no panel and refuses
// the limit actions; a partition's page shows a limit set on it, the
// queue's own too, with their actions, without a form to set new ones.
func TestPartitionedHasNoLimits(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	ctx := context.Background()
	c := client(t)
	r := get(t, c, f.QueueURL(pname))
	if r.status != http.StatusOK || strings.Contains(r.body, `id="limits"`) || strings.Contains(r.body, "nolimits") {
		t.Errorf("the partitioned queue's page has a limits panel: %d", r.status)
	}
	part := f.p.Partition(0).Name()
	if r := get(t, c, f.QueueURL(part)); r.status != http.StatusOK || strings.Contains(r.body, `id="limits"`) {
		t.Errorf("a partition without limits has a limits panel: %d", r.status)
	}
	if err := f.p.Partition(0).SetRateLimit(ctx, "", redisq.RateLimit{N: 9, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	r = get(t, c, f.QueueURL(part))
	if _, rows := limitRows(t, r.body, "rate"); !strings.Contains(rows[dqweb.Shown("")], `data-k="limit">9 per 1s<`) || strings.Contains(r.body, "setlimit") {
		t.Errorf("a partition's limit: shown %v, or a form for new ones\n%s", rows, section(t, r.body, `<section id="limits">`, "</section>"))
	}
	for _, form := range []url.Values{
		{"op": {"rate-limit"}, "q": {pname}, "key": {"k"}, "rate": {"1/1s"}},
		{"op": {"concurrency-limit"}, "q": {pname}, "key": {"k"}, "concurrency": {"1"}},
	} {
		r := action(t, f.Fixture, c, form)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "is partitioned: redisq limits no partitioned queue") {
			t.Errorf("%s on a partitioned queue: %d\n%s", form.Get("op"), r.status, r.body)
		}
	}
	if r := action(t, f.Fixture, c, url.Values{"op": {"queue-rate-limit"}, "q": {pname}, "rate": {"1/1s"}}); r.status != http.StatusBadRequest ||
		!strings.Contains(r.body, "is partitioned: redisq sets no rate limit on a whole partitioned queue") {
		t.Errorf("queue-rate-limit on a partitioned queue: %d\n%s", r.status, r.body)
	}

	// A partition's own rate limit (set on it, an ordinary queue) is
	// shown on its page with its actions, which act on the partition.
	other := f.p.Partition(1)
	if err := other.SetQueueRateLimit(ctx, redisq.RateLimit{N: 4, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if r := get(t, c, f.QueueURL(pname)); strings.Contains(r.body, `id="limits"`) {
		t.Error("the partitioned queue's page shows a partition's limit as its own")
	}
	r = get(t, c, f.QueueURL(other.Name()))
	row := section(t, r.body, `<tr data-limit="queue"`, "</tr>")
	if !strings.Contains(row, `data-k="limit">4 per 1m<`) || strings.Contains(r.body, "setlimit") {
		t.Errorf("a partition's own limit: %s\n%s", row, section(t, r.body, `<section id="limits">`, "</section>"))
	}
	remove := formIn(t, row, "act")
	remove.Set("confirmed", "yes")
	if res := post(t, c, f.Base+"action", remove); !strings.Contains(res.body, "Removed the rate limit of the whole queue "+html.EscapeString(dqweb.Quoted(other.Name()))) {
		t.Errorf("removing a partition's own limit: %d\n%s", res.status, res.body)
	}
	if s, err := other.QueueRateLimit(ctx); err != nil || s.Limit.N != 0 {
		t.Errorf("the partition's own limit after Remove: %+v %v", s, err)
	}
}

// TestLimitsUnreadable: when the limits cannot be read (here a Redis user
// that may not run HSCAN), the summary still shows, its panel saying why.
func TestLimitsUnreadable(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if err := f.Q.SetRateLimit(ctx, "smtp", redisq.RateLimit{N: 1, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := f.C.Do(ctx, "ACL", "SETUSER", "nohscan", "on", ">pw", "~*", "&*", "+@all", "-hscan").Err(); err != nil {
		t.Fatal(err)
	}
	lc := redis.NewClient(&redis.Options{Addr: f.C.Options().Addr, Username: "nohscan", Password: "pw", MaxRetries: -1})
	t.Cleanup(func() { _ = lc.Close() })
	r := get(t, client(t), serve(t, lc, dqweb.Options{})+"queue?q=orders")
	checkPage(t, "queue page", r, 100<<10)
	if e := section(t, r.body, `id="limits-error"`, "</p>"); !strings.Contains(e, "the limits cannot be read: Redis answered with an error: NOPERM") {
		t.Errorf("the panel's error: %s", e)
	}
	if !strings.Contains(r.body, `<section id="counters">`) {
		t.Error("the rest of the summary is missing")
	}
}

// qlReads counts the reads of a queue's own rate limit that f's
// dashboard sends: QueueRateLimit's script is the only one given the
// log key {dq:NAME}:ql.
type qlReads struct{ n atomic.Int64 }

func (h *qlReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *qlReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if slices.Contains(cmd.Args(), any("{dq:orders}:ql")) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *qlReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestQueueRateLimitPanel: the panel shows the rate limit of the whole
// queue (Queue.SetQueueRateLimit) with its use and when there is room,
// read only while Stats says it is set; an operator sets it from the
// "Set a limit" form, changes it from its row and removes it, each
// confirmed on a page that asks with the limit as parsed and the limit
// now, its forms carrying no limit key.
func TestQueueRateLimitPanel(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	reads := &qlReads{}
	f.C.AddHook(reads)
	c := client(t)
	limit := func() redisq.LimitState {
		t.Helper()
		s, err := f.Q.QueueRateLimit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	confirm := func(form url.Values, question, result string) {
		t.Helper()
		was := limit().Limit
		r := post(t, c, f.Base+"action", form)
		if r.status != http.StatusOK || !strings.Contains(r.body, html.EscapeString(question)) || !strings.Contains(r.body, `name="confirmed" value="yes"`) {
			t.Fatalf("confirmation of %v: %d, want %q\n%s", form, r.status, question, r.body)
		}
		if limit().Limit != was {
			t.Fatalf("%v changed the limit before it was confirmed", form)
		}
		cf := confirmForm(r.body)
		if _, ok := cf["keyx"]; ok {
			t.Errorf("the confirmation's form has a limit key: %v", cf)
		}
		r = post(t, c, f.Base+"action", cf)
		if r.status != http.StatusOK || !strings.Contains(r.body, html.EscapeString(result)) ||
			!strings.Contains(r.body, `<a href="/dq/queue?q=orders#limits" id="back">`) {
			t.Fatalf("result of %v: %d, want %q\n%s", form, r.status, result, r.body)
		}
	}

	// None: no row, no read, and a form to set one among the others.
	page := get(t, c, f.QueueURL("orders"))
	checkPage(t, "queue page", page, 300<<10)
	if strings.Contains(page.body, `id="queue-rate-limit"`) || !strings.Contains(page.body, `id="nolimits"`) || reads.n.Load() != 0 {
		t.Errorf("a queue without its own limit: a row, or %d reads of it\n%s", reads.n.Load(), section(t, page.body, `<section id="limits">`, "</section>"))
	}
	set := section(t, page.body, `<details class="setlimit">`, "</details>")
	if !strings.Contains(set, "<summary>Set a limit on a key or the whole queue</summary>") {
		t.Errorf("the set forms' summary: %s", set)
	}
	form := formIn(t, set[strings.LastIndex(set, `<form method="post"`):], "limit")
	if form.Get("op") != "queue-rate-limit" || form.Has("key") || form.Has("keyx") || !strings.Contains(set, "Rate limit of the whole queue</span>") {
		t.Fatalf("the queue's form: %v\n%s", form, set)
	}
	form.Set("rate", " 2/1h ")
	confirm(form, `Limit the whole queue "orders" to 2 per 1h? At most 2 of its items, whatever their limit keys, are claimed in any 1h, across every process;`,
		`Set the rate limit of the whole queue "orders" to 2 per 1h: at most 2 of its items are claimed in any 1h, whatever their limit keys.`)
	if l := limit().Limit; l != (redisq.RateLimit{N: 2, Per: time.Hour}) {
		t.Fatalf("the queue's limit %v, want 2 per 1h", l)
	}

	// Two of the fixture's three overdue items are claimed, the third
	// stays due: the row says the window is full, and until when.
	if took := claimAll(t, f); len(took) != 2 {
		t.Fatalf("claimed %v under 2 per 1h", took)
	}
	before := reads.n.Load()
	page = get(t, c, f.QueueURL("orders"))
	checkPage(t, "queue page", page, 300<<10)
	if n := reads.n.Load() - before; n != 1 {
		t.Errorf("a view read the queue's limit %d times, want 1", n)
	}
	row := section(t, page.body, `<tr data-limit="queue"`, "</tr>")
	for _, w := range []string{`class="full"`, `data-k="limit">2 per 1h<`, `data-k="used">2 of 2<`, `data-k="room"><span class="badge full">full</span> <time`, `>in 1h0m0s</time>`,
		`data-confirm="Remove the rate limit of the whole queue &#34;orders&#34; (2 per 1h, 2 claimed in the window that ends now)?`} {
		if !strings.Contains(row, w) {
			t.Errorf("the queue's row lacks %s\n%s", w, row)
		}
	}
	if strings.Contains(page.body, `<details class="setlimit">`) && strings.Contains(section(t, page.body, `<details class="setlimit">`, "</details>"), "queue-rate-limit") {
		t.Error("a form to set the queue's limit while it has one")
	}
	if due := count(t, page.body, "due"); due != "1" {
		t.Errorf("due now %q, want 1: the item over the limit stays due", due)
	}
	before = reads.n.Load()
	for _, tab := range []string{"scheduled", "dead", "workers"} {
		get(t, c, f.TabURL("orders", tab))
	}
	if n := reads.n.Load() - before; n != 0 {
		t.Errorf("the other tabs read the queue's limit %d times", n)
	}

	// Changed from its row, then removed.
	edit := formIn(t, row, "limit")
	if edit.Get("op") != "queue-rate-limit" || edit.Get("rate") != "2/1h" || edit.Has("keyx") {
		t.Fatalf("the row's form: %v", edit)
	}
	edit.Set("rate", "5/1m")
	confirm(edit, `Change the rate limit of the whole queue "orders" from 2 per 1h to 5 per 1m (2 claimed in the window that ends now)? At most 5 of its items are claimed in any 1m from now on.`,
		`Changed the rate limit of the whole queue "orders" from 2 per 1h to 5 per 1m.`)
	row = section(t, get(t, c, f.QueueURL("orders")).body, `<tr data-limit="queue"`, "</tr>")
	remove := formIn(t, row, "act")
	if remove.Get("op") != "queue-rate-limit" || remove.Get("rate") != "none" || remove.Has("keyx") {
		t.Fatalf("the Remove form: %v", remove)
	}
	remove.Set("confirmed", "yes")
	if r := post(t, c, f.Base+"action", remove); !strings.Contains(r.body, html.EscapeString(`Removed the rate limit of the whole queue "orders" (it was 5 per 1m)`)) {
		t.Fatalf("removing: %d\n%s", r.status, r.body)
	}
	if l := limit().Limit; l.N != 0 {
		t.Fatalf("the queue's limit %v after its removal", l)
	}
	page = get(t, c, f.QueueURL("orders"))
	if strings.Contains(page.body, `data-limit="queue"`) || !strings.Contains(page.body, `id="nolimits"`) {
		t.Errorf("the panel after the removal:\n%s", section(t, page.body, `<section id="limits">`, "</section>"))
	}
	// Removing it again changes nothing, and says so.
	if r := action(t, f, c, url.Values{"op": {"queue-rate-limit"}, "q": {"orders"}, "rate": {"none"}}); r.status != http.StatusOK ||
		!strings.Contains(r.body, "No rate limit on the whole queue &#34;orders&#34; to remove; nothing changed.") {
		t.Errorf("removing no limit: %d\n%s", r.status, r.body)
	}

	// A hostile queue name is escaped in the question and the result.
	odd := url.Values{"op": {"queue-rate-limit"}, "q": {webtest.OddQueue}, "rate": {"3/1s"}, "csrf": {token(t, c, f.QueueURL("orders"))}}
	r := post(t, c, f.Base+"action", odd)
	if strings.Contains(r.body, "we<ird>") || !strings.Contains(r.body, "Limit the whole queue &#34;we&lt;ird&gt;\\&#34;q&#34; to 3 per 1s?") {
		t.Errorf("the question on %q:\n%s", webtest.OddQueue, r.body)
	}
	r = post(t, c, f.Base+"action", confirmForm(r.body))
	if strings.Contains(r.body, "we<ird>") || !strings.Contains(r.body, "Set the rate limit of the whole queue &#34;we&lt;ird&gt;\\&#34;q&#34; to 3 per 1s") {
		t.Errorf("the result on %q:\n%s", webtest.OddQueue, r.body)
	}
}
