package dqweb_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// checkPage fails if a page holds a raw control, bidi character or
// invalid byte, or is larger than bound.
func checkPage(t *testing.T, what string, r response, bound int) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Errorf("%s: %d\n%.2000s", what, r.status, r.body)
	}
	if m := webtest.RawRunes.FindString(r.body); m != "" {
		t.Errorf("%s holds %+q raw", what, m)
	}
	if !utf8.ValidString(r.body) {
		t.Errorf("%s is not valid UTF-8", what)
	}
	if len(r.body) > bound {
		t.Errorf("%s is %d bytes, want at most %d", what, len(r.body), bound)
	}
}

// TestHostileNames: every page shows hostile names, ids and reasons
// escaped (quoted Go-style, as dqctl does), cut when long, never raw; the
// links and forms still carry the exact values, so they open and act on
// the right queue and item.
func TestHostileNames(t *testing.T) {
	f := webtest.HostileFixture(t)
	c := client(t)
	ov := get(t, c, f.Base)
	checkPage(t, "overview", ov, 200<<10)
	for _, want := range []string{
		`<a href="/dq/queue?q=rtl%E2%80%AEgnp.exe">&#34;rtl\u202egnp.exe&#34;</a>`,
		`&#34;ctl\x1b[31mred\a&#34;`, `&#34;bad\xffutf8&#34;`, `>glob*?[x]\</a>`,
		`&#34;marks\u200e\u200f\u061c\u202a\u202b\u202c\u202d&#34;`, `&#34;  spaced  &#34;`, `&#34;\&#34;quoted\&#34;&#34;`,
		`&#34;nul\x00q&#34;`, `&#34;crlf\r\nq&#34;`, strings.Repeat("L", 200) + "… (1048576 bytes)",
	} {
		if !strings.Contains(ov.body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	// Every listed queue but the 1 MiB one has a link that opens it.
	links := regexp.MustCompile(`<td class="qname"><a href="([^"]*)">`).FindAllStringSubmatch(ov.body, -1)
	if len(links) != len(webtest.HostileQueues)-1+3 {
		t.Errorf("%d queue links, want %d", len(links), len(webtest.HostileQueues)-1+3)
	}
	for _, l := range links {
		u := f.Srv.URL + html.UnescapeString(l[1])
		r := get(t, c, u)
		checkPage(t, "queue page "+u, r, 200<<10)
	}

	checkPage(t, "queue page", get(t, c, f.QueueURL(webtest.RTLQueue)), 400<<10)
	qp := get(t, c, f.TabURL(webtest.RTLQueue, "dead"))
	checkPage(t, "dead tab", qp, 400<<10)
	for _, want := range []string{
		"<title>" + html.EscapeString(webtest.RTLShown) + " · redisq</title>",
		`<h1>Queue <span class="name">` + html.EscapeString(webtest.RTLShown) + `</span></h1>`,
		html.EscapeString(`"inv\u202ecod.exe"`), html.EscapeString(`"paid\u202e\u2066 deifirev\u2069"`),
		html.EscapeString(`"nul\x00id"`), html.EscapeString(`"crlf\r\nid"`), html.EscapeString(`"bad\xfeid"`),
		strings.Repeat("I", 200) + "… (1048576 bytes)",
	} {
		if !strings.Contains(qp.body, want) {
			t.Errorf("queue page lacks %s", want)
		}
	}
	// The confirmation questions quote escaped names too.
	if !strings.Contains(qp.body, `data-confirm="Delete dead item &#34;inv\u202ecod.exe&#34; of queue &#34;rtl\u202egnp.exe&#34;? This cannot be undone."`) {
		t.Error("the confirmation question does not show the escaped names")
	}

	// Each item page opens from its link, and its delete form deletes
	// exactly that item, whatever bytes its id holds.
	for _, id := range webtest.HostileIDs[:6] {
		ip := get(t, c, f.ItemURL(webtest.RTLQueue, id))
		checkPage(t, "item page of "+dqweb.Quoted(id), ip, 200<<10)
		form := url.Values{}
		var del string
		for _, f := range strings.SplitAfter(ip.body, "</form>") {
			if strings.Contains(f, `name="op" value="delete-dead"`) {
				del = f
			}
		}
		for _, m := range regexp.MustCompile(`name="(\w+)" value="([^"]*)"`).FindAllStringSubmatch(del, -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		form.Set("confirmed", "yes")
		r := post(t, c, f.Base+"action", form)
		checkPage(t, "result of deleting "+dqweb.Quoted(id), r, 200<<10)
		q, _ := redisq.New(context.Background(), f.C, webtest.RTLQueue)
		if _, err := q.Get(context.Background(), id); err != redisq.ErrNotFound {
			t.Errorf("deleting %+q from its page: the item is still there (%v)\n%s", id, err, r.body)
		}
	}
	// Braces cannot be in a name: a 400, not a broken page.
	if r := get(t, c, f.QueueURL("br{ace}")); r.status != http.StatusBadRequest || !strings.Contains(r.body, "bad queue name") {
		t.Errorf("braces: %d", r.status)
	}
}

// TestShown pins the display forms.
func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"orders":                 "orders",
		"a b":                    "a b",
		"a\\u202e":               "a\\u202e",
		webtest.RTLQueue:         webtest.RTLShown,
		"":                       `""`,
		" lead":                  `" lead"`,
		"two  spaces":            `"two  spaces"`,
		`"q"`:                    `"\"q\""`,
		"bad\xff":                `"bad\xff"`,
		"\ufffd":                 "\"\ufffd\"", // quoted: it may stand for an invalid byte elsewhere
		"tab\there":              `"tab\there"`,
		"nbsp\u00a0":             `"nbsp\u00a0"`,
		"zw\u200bsp":             `"zw\u200bsp"`,
		"日本語":                    "日本語",
		strings.Repeat("é", 150): strings.Repeat("é", 100) + "… (300 bytes)",
	} {
		if got := dqweb.Shown(in); got != want {
			t.Errorf("Shown(%+q) = %q, want %q", in, got, want)
		}
	}
	if got := dqweb.Quoted("orders"); got != `"orders"` {
		t.Errorf("Quoted: %q", got)
	}
	if got := dqweb.Message("x\u202ey\xff\x1b"); got != `x\u202ey\xff\x1b` {
		t.Errorf("Message: %q", got)
	}
	if got := dqweb.ShownReason(strings.Repeat("r", 5000)); !strings.HasSuffix(got, "… (5000 bytes)") || len(got) > 2100 {
		t.Errorf("a long reason is not cut: %d bytes", len(got))
	}
}
