package dqprom_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// hostileNames are queue names a scrape must survive: not UTF-8, control
// and bidi characters, globs, a backslash spelling another name's escape,
// and names longer than a label, two of them alike but for their last
// byte, one of them not UTF-8 at the cut.
var hostileNames = func() []string {
	long := strings.Repeat("n", 1<<20)
	return []string{
		"bad\xff", `bad\xff`, "bad\\", "\xff\xfe", "a\x00b", "ctl\x1b[31mred\x1b[0m\n\t\r", "\u202egnp.exe", "rlm\u200f\u2066",
		"\u2028\u2029", "c1\u0085", "*?[", "[a-z]*", `\`, `"quoted"`, "a:b", "ok", "ü", "\ufffd",
		long + "a", long + "b", strings.Repeat("\xff", 1<<20), strings.Repeat("é", 300),
	}
}()

// checkLabel fails unless l is a valid, bounded, printable label value.
func checkLabel(t *testing.T, l string) {
	t.Helper()
	if !utf8.ValidString(l) || len(l) > dqprom.MaxLabelLen {
		t.Fatalf("label %q: not UTF-8 or %d bytes", l, len(l))
	}
	for _, r := range l {
		if !unicode.IsGraphic(r) && r != ' ' {
			t.Fatalf("label %q holds %U", l, r)
		}
	}
}

func TestQueueLabel(t *testing.T) {
	seen := map[string]string{}
	for _, n := range hostileNames {
		l := dqprom.QueueLabel(n)
		checkLabel(t, l)
		if o, ok := seen[l]; ok {
			t.Fatalf("names %q and %q share the label %q", trunc(o), trunc(n), l)
		}
		seen[l] = n
	}
	for _, c := range []struct{ name, label string }{
		{"ok", "ok"},
		{"a:b", "a:b"},
		{`"quoted"`, `"quoted"`},
		{"ü", "ü"},
		{"\ufffd", "\ufffd"},
		{"bad\xff", `bad\xff`},
		{`bad\xff`, `bad\\xff`},
		{"ctl\x1b[31m\n", `ctl\x1b[31m\x0a`},
		{"\u202egnp.exe", `\u202egnp.exe`},
		{"c1\u0085", `c1\u0085`},
		{"tag\U000e0041", `tag\U000e0041`},
		{strings.Repeat("x", dqprom.MaxLabelLen), strings.Repeat("x", dqprom.MaxLabelLen)},
	} {
		if l := dqprom.QueueLabel(c.name); l != c.label {
			t.Errorf("QueueLabel(%q) = %q, want %q", trunc(c.name), l, c.label)
		}
	}
	// A long name keeps its head, then …\# and a hash.
	l := dqprom.QueueLabel(strings.Repeat("x", dqprom.MaxLabelLen+1))
	if !strings.HasPrefix(l, strings.Repeat("x", 200)) || !strings.Contains(l, `…\#`) || len(l) > dqprom.MaxLabelLen {
		t.Errorf("long name: %q", l)
	}
	// Escapes are never cut in the middle.
	l = dqprom.QueueLabel(strings.Repeat("\xff", 1000))
	head, _, _ := strings.Cut(l, `…\#`)
	if head == "" || strings.ReplaceAll(head, `\xff`, "") != "" {
		t.Errorf("cut escape: %q", l)
	}
}

// promEscape escapes a label value as the text exposition format does.
func promEscape(l string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l)
}

// upValues gathers reg and returns redisq_up by queue label, checking
// every label.
func upValues(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	up := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "queue" {
					checkLabel(t, lp.GetValue())
				}
			}
			if mf.GetName() == "redisq_up" {
				up[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return up
}

func trunc(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%.40q…(%d bytes)", s, len(s))
	}
	return s
}

// scrape serves reg as dqctl serve-metrics does (promhttp, HTTPErrorOnError)
// and returns the status and body of one scrape.
func scrape(t *testing.T, reg prometheus.Gatherer) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	if !utf8.ValidString(body) {
		t.Fatalf("scrape body is not UTF-8")
	}
	for i, r := range body {
		if r != '\n' && !unicode.IsGraphic(r) && r != ' ' {
			t.Fatalf("scrape body holds %U at byte %d", r, i)
		}
	}
	return rec.Code, body
}

// Item 2 of issue 17: a queue name that is not valid UTF-8 panicked the
// exporter ("label value ... is not valid UTF-8") and took its process
// down. Every hostile name, found on the server (registered, or written by
// hand as the reproduction does) or given, is scraped with a label
// of its own, through promhttp as dqctl serves it.
func TestHostileQueueNames(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	var qs []*redisq.Queue
	for _, n := range hostileNames {
		q := newQueue(t, c, n)
		if _, err := q.EnqueueAfter(ctx, "x", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	// The reproduction: a sequence key written by hand, in the
	// format of an older version, for a queue no process registered; and
	// keys that look like queues but hold braces.
	for _, k := range []string{"{dq:hand\xfe}:seq", "{dq:br{ace}:seq", "{dq:x}:m:}:seq", "{dq:}:seq"} {
		if err := c.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Registry members no redisq wrote.
	if err := c.SAdd(ctx, redisq.RegistryKey, "", "in{valid}", "never used\xff").Err(); err != nil {
		t.Fatal(err)
	}
	found := append(append([]string{}, hostileNames...), "hand\xfe")
	for _, tc := range []struct {
		what string
		col  *dqprom.RedisCollector
		want []string
	}{
		{"server-wide", dqprom.NewRedisServerCollector(c), found},
		{"given queues", dqprom.NewRedisCollector(qs...), hostileNames},
	} {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(tc.col)
		code, body := scrape(t, reg)
		if code != http.StatusOK {
			t.Fatalf("%s: scrape: %d\n%.2000s", tc.what, code, body)
		}
		up := upValues(t, reg)
		if len(up) != len(tc.want) {
			t.Errorf("%s: %d queues scraped, want %d: %v", tc.what, len(up), len(tc.want), up)
		}
		for _, n := range tc.want {
			l := dqprom.QueueLabel(n)
			if v, ok := up[l]; !ok || v != 1 {
				t.Errorf("%s: queue %q: redisq_up %v (present %v)", tc.what, trunc(n), v, ok)
			}
			if !strings.Contains(body, "redisq_up{queue=\""+promEscape(l)+"\"} 1\n") {
				t.Errorf("%s: body lacks redisq_up 1 for %q", tc.what, l)
			}
		}
	}

	// In-process queues with the same names.
	m := map[string]dqprom.StatsSource{}
	for _, n := range hostileNames {
		q := delayqueue.New[int]()
		defer q.Close()
		m[n] = q
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(dqprom.NewQueueCollector(m))
	if code, body := scrape(t, reg); code != http.StatusOK || strings.Count(body, "delayqueue_items{") != len(hostileNames) {
		t.Fatalf("in-process scrape: %d\n%.2000s", code, body)
	}
}

// Two names that share a label (only a 64-bit hash collision can do it;
// here the hash is made constant) would fail the whole scrape with
// duplicate series: the second queue is left out, and said to be.
func TestLabelCollision(t *testing.T) {
	defer dqprom.SetLabelHash(func(string) string { return "0000000000000000" })()
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	long := strings.Repeat("n", dqprom.MaxLabelLen)
	var qs []*redisq.Queue
	for _, n := range []string{long + "a", long + "b", "ok"} {
		q := newQueue(t, c, n)
		if _, err := q.EnqueueAfter(context.Background(), "x", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	if dqprom.QueueLabel(long+"a") != dqprom.QueueLabel(long+"b") {
		t.Fatal("no collision")
	}
	for _, col := range []*dqprom.RedisCollector{dqprom.NewRedisServerCollector(c), dqprom.NewRedisCollector(qs...)} {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(col)
		code, body := scrape(t, reg)
		if code != http.StatusOK {
			t.Fatalf("scrape: %d\n%.3000s", code, body)
		}
		if up := upValues(t, reg); len(up) != 2 || up["ok"] != 1 || up[dqprom.QueueLabel(long+"a")] != 1 {
			t.Errorf("redisq_up %v", up)
		}
		if !strings.Contains(body, `redisq_discovery_error{error="queues with SHA-256 `) {
			t.Errorf("no redisq_discovery_error:\n%.3000s", body)
		}
	}
}

// Two Queue values of one name (on two servers, say) given to one
// collector would clash: the second is left out, and said to be; the same
// Queue given twice is read once.
func TestGivenQueuesOfOneName(t *testing.T) {
	var qs []*redisq.Queue
	for range 2 {
		s := redistest.New(t)
		c := redis.NewClient(&redis.Options{Addr: s.Addr})
		defer c.Close()
		qs = append(qs, newQueue(t, c, "mail"))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(dqprom.NewRedisCollector(qs[0], qs[0], qs[1]))
	code, body := scrape(t, reg)
	if code != http.StatusOK || strings.Count(body, "redisq_up{") != 1 ||
		!strings.Contains(body, `redisq_discovery_error{error="two queues named \"mail\": the second is not reported"} 1`) {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
}
