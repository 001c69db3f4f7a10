package dqweb_test

import (
	"context"
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

// opForm returns the fields of the form of op in s (a row), confirmed as
// the page's dialog does, or nil when s has none.
func opForm(s, op string) url.Values {
	for _, f := range regexp.MustCompile(`(?s)<form [^>]*class="act".*?</form>`).FindAllString(s, -1) {
		if !strings.Contains(f, `name="op" value="`+op+`"`) {
			continue
		}
		v := url.Values{}
		for _, m := range regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`).FindAllStringSubmatch(f, -1) {
			v.Set(m[1], html.UnescapeString(m[2]))
		}
		v.Set("confirmed", "yes")
		return v
	}
	return nil
}

// TestPauseResumeRecurring: a registration's row has Pause, which asks
// saying what it does, then pauses it (its pending occurrence, not yet
// due, is cancelled); a paused one has Resume instead, which enqueues its
// first occurrence after now. Hostile names are paused by their exact
// bytes; an ended registration has neither button.
func TestPauseResumeRecurring(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	regs := webtest.RegisterAll(t, f)
	c := client(t)
	reg := func(name string) redisq.Registration {
		t.Helper()
		g, err := f.Q.Registration(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	row := regRows(t, get(t, c, f.TabURL("orders", "recurring")).body)["daily"]
	if !strings.Contains(row, `data-confirm="Pause recurring &#34;daily&#34; of queue &#34;orders&#34;? No occurrence of it is enqueued until it is resumed, and its pending occurrence, if not yet due, is cancelled (one already due is delivered); the registration stays."`) ||
		!strings.Contains(row, `data-op="pause-recurring">Pause</button>`) || strings.Contains(row, `data-op="resume-recurring"`) {
		t.Fatalf("the row of daily: no Pause button that says what it does\n%s", row)
	}

	// Without the script: the confirmation page, then its form.
	r := post(t, c, f.Base+"action", url.Values{"op": {"pause-recurring"}, "q": {"orders"}, "reg": {"daily"}, "csrf": {token(t, c, f.QueueURL("orders"))}})
	for _, want := range []string{`Pause recurring &#34;daily&#34; of queue &#34;orders&#34;? No occurrence`, `name="regx" value="6461696c79"`,
		`<a href="/dq/queue?q=orders&amp;state=recurring">Cancel</a>`, `class="danger">Pause</button>`} {
		if r.status != http.StatusOK || !strings.Contains(r.body, want) {
			t.Errorf("confirmation page: %d, lacks %s\n%s", r.status, want, r.body)
		}
	}
	if !reg("daily").Paused.IsZero() {
		t.Fatal("paused before the confirmation")
	}
	r = post(t, c, f.Base+"action", confirmForm(r.body))
	if r.status != http.StatusOK || !strings.Contains(r.body, "Paused recurring &#34;daily&#34; of queue &#34;orders&#34;: its pending occurrence was cancelled, and none is enqueued until it is resumed.") ||
		!strings.Contains(r.body, `<a href="/dq/queue?q=orders&amp;state=recurring" id="back">`) {
		t.Fatalf("pause: %d\n%s", r.status, r.body)
	}
	if g := reg("daily"); g.Paused.IsZero() || f.State(t, regs["daily"].EnqueuedID) != 0 {
		t.Fatalf("daily: paused at %v, its occurrence in state %v", g.Paused, f.State(t, regs["daily"].EnqueuedID))
	}
	if r := action(t, f, c, url.Values{"op": {"pause-recurring"}, "q": {"orders"}, "reg": {"daily"}}); r.status != http.StatusOK ||
		!strings.Contains(r.body, "Recurring &#34;daily&#34; of queue &#34;orders&#34; is already paused (since ") {
		t.Errorf("pause again: %d\n%s", r.status, r.body)
	}

	// Paused: Resume instead of Pause, from the row's form.
	row = regRows(t, get(t, c, f.TabURL("orders", "recurring")).body)["daily"]
	if !strings.Contains(row, `data-confirm="Resume recurring &#34;daily&#34; of queue &#34;orders&#34;? Its first occurrence after now is enqueued; those that fell in the pause are skipped."`) ||
		strings.Contains(row, `data-op="pause-recurring"`) {
		t.Fatalf("the row of paused daily: no Resume button that says what it does, or a Pause one\n%s", row)
	}
	r = post(t, c, f.Base+"action", opForm(row, "resume-recurring"))
	if r.status != http.StatusOK || !strings.Contains(r.body, "Resumed recurring &#34;daily&#34; of queue &#34;orders&#34;: its first occurrence after now is enqueued, due ") {
		t.Fatalf("resume: %d\n%s", r.status, r.body)
	}
	now, err := f.C.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if g := reg("daily"); !g.Paused.IsZero() || !g.Next.After(now) || f.State(t, g.EnqueuedID) != redisq.StateScheduled {
		t.Fatalf("daily after resume: paused %v, next %v (now %v), occurrence %v", g.Paused, g.Next, now, f.State(t, g.EnqueuedID))
	}
	if r := action(t, f, c, url.Values{"op": {"resume-recurring"}, "q": {"orders"}, "reg": {"daily"}}); r.status != http.StatusOK ||
		!strings.Contains(r.body, "Recurring &#34;daily&#34; of queue &#34;orders&#34; was not paused; nothing changed.") {
		t.Errorf("resume again: %d\n%s", r.status, r.body)
	}
	for _, op := range []string{"pause-recurring", "resume-recurring"} {
		if r := action(t, f, c, url.Values{"op": {op}, "q": {"orders"}, "reg": {"nope"}}); r.status != http.StatusNotFound ||
			!strings.Contains(r.body, "No registration &#34;nope&#34; in queue &#34;orders&#34;; nothing changed.") {
			t.Errorf("%s of an unknown registration: %d\n%s", op, r.status, r.body)
		}
	}

	// Hostile names, by the exact bytes their forms carry.
	rows := regRows(t, get(t, c, f.TabURL("orders", "recurring")).body)
	for _, name := range []string{webtest.RTLReg, webtest.BadReg, webtest.XSSReg} {
		form := opForm(rows[dqweb.Shown(name)], "pause-recurring")
		if form == nil {
			t.Fatalf("no Pause for %+q", name)
		}
		r := post(t, c, f.Base+"action", form)
		checkPage(t, "result of pausing "+dqweb.Quoted(name), r, 100<<10)
		if reg(name).Paused.IsZero() {
			t.Errorf("%+q is not paused after its form\n%s", name, r.body)
		}
	}
	if !reg("hourly").Paused.IsZero() {
		t.Error("another registration was paused")
	}
	if opForm(rows["over"], "pause-recurring") != nil || opForm(rows["over"], "resume-recurring") != nil {
		t.Errorf("an ended registration has Pause or Resume\n%s", rows["over"])
	}
}

// TestPauseResumeRecurringRefused: read-only, no button and the POST is
// refused; cross-origin or without the token, refused too.
func TestPauseResumeRecurringRefused(t *testing.T) {
	ctx := context.Background()
	ro := webtest.NewFixture(t, dqweb.Options{ReadOnly: true})
	if _, err := ro.Q.Register(ctx, "daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	if r := get(t, c, ro.TabURL("orders", "recurring")); r.status != http.StatusOK || strings.Contains(r.body, "data-op=") || strings.Contains(r.body, `method="post"`) {
		t.Errorf("read-only Recurring tab: %d, or a Pause button", r.status)
	}
	tok := strings.Repeat("T", 43)
	u, _ := url.Parse(ro.Base)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "dqweb_csrf", Value: tok, Path: "/dq/"}})
	if r := post(t, c, ro.Base+"action", url.Values{"op": {"pause-recurring"}, "q": {"orders"}, "reg": {"daily"}, "csrf": {tok}, "confirmed": {"yes"}}); r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
		t.Errorf("pause in read-only mode: %d, want 403", r.status)
	}
	if g, err := ro.Q.Registration(ctx, "daily"); err != nil || !g.Paused.IsZero() {
		t.Fatalf("the read-only dashboard paused: %+v %v", g, err)
	}

	f := webtest.NewFixture(t, dqweb.Options{})
	if _, err := f.Q.Register(ctx, "daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	c = client(t)
	tok = token(t, c, f.QueueURL("orders"))
	form := url.Values{"op": {"pause-recurring"}, "q": {"orders"}, "reg": {"daily"}, "csrf": {tok}, "confirmed": {"yes"}}
	for _, hd := range [][2]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
		req, _ := http.NewRequest(http.MethodPost, f.Base+"action", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set(hd[0], hd[1])
		if r := do(t, c, req); r.status != http.StatusForbidden {
			t.Errorf("%s %s: %d, want 403", hd[0], hd[1], r.status)
		}
	}
	noToken := url.Values{"op": {"pause-recurring"}, "q": {"orders"}, "reg": {"daily"}, "confirmed": {"yes"}}
	if r := post(t, c, f.Base+"action", noToken); r.status != http.StatusForbidden {
		t.Errorf("without the token: %d, want 403", r.status)
	}
	if g, err := f.Q.Registration(ctx, "daily"); err != nil || !g.Paused.IsZero() {
		t.Fatalf("a refused request paused: %+v %v", g, err)
	}
	if r := post(t, c, f.Base+"action", form); r.status != http.StatusOK {
		t.Errorf("the valid request: %d\n%s", r.status, r.body)
	}
	if g, err := f.Q.Registration(ctx, "daily"); err != nil || g.Paused.IsZero() {
		t.Fatalf("the valid request did not pause: %+v %v", g, err)
	}
}
