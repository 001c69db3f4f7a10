package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

// result is one dqctl run.
type result struct {
	code           int
	stdout, stderr string
}

// dqctl runs the command in-process with stdin as its input.
func dqctl(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb strings.Builder
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	r := result{code, out.String(), errb.String()}
	assertSafe(t, r.stdout)
	assertSafe(t, r.stderr)
	return r
}

// assertSafe fails if s holds a character a terminal could act on, other
// than newline and tab.
func assertSafe(t *testing.T, s string) {
	t.Helper()
	for i, r := range s {
		if r != '\n' && r != '\t' && !unicode.IsPrint(r) {
			t.Fatalf("output has %U at byte %d: %q", r, i, s)
		}
	}
}

func (r result) want(t *testing.T, code int, contains ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, c := range contains {
		if !strings.Contains(r.stdout+r.stderr, c) {
			t.Fatalf("output lacks %q\nstdout:\n%s\nstderr:\n%s", c, r.stdout, r.stderr)
		}
	}
}

// fixture is a server with one queue "orders": scheduled s1 (JSON payload)
// and s2 (binary), in-flight f1 (held by lease), dead d1 and d2.
type fixture struct {
	addr string
	c    *redis.Client
	q    *redisq.Queue
	held *redisq.Message
}

func newFixture(t *testing.T, name string) *fixture {
	t.Helper()
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	q, err := redisq.New(ctx, c, name, redisq.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"f1", "d1", "d2"} {
		// Due in the past, so that one claim takes all three (EnqueueAfter
		// with 0 is due at the next whole millisecond of Redis TIME).
		must(q.Enqueue(ctx, id, []byte(id), time.Unix(1, 0)))
	}
	ms, err := q.TakeBatch(ctx, 3)
	must(err)
	_, err = ms[1].NackWith(ctx, redisq.NackReason("smtp 550"))
	must(err)
	_, err = ms[2].DeadLetter(ctx, "bad address")
	must(err)
	_, err = q.EnqueueAfter(ctx, "s1", []byte(`{"order":1,"items":["a"]}`), time.Hour)
	must(err)
	_, err = q.EnqueueAfter(ctx, "s2", []byte{0, 1, 2, 0x1b, 0xff}, 2*time.Hour)
	must(err)
	return &fixture{addr: s.Addr, c: c, q: q, held: ms[0]}
}

// neighbour adds a queue "orders:eu" with one scheduled item: a name that
// extends "orders", whose items must never show in or go with "orders".
func (f *fixture) neighbour(t *testing.T) {
	t.Helper()
	other, err := redisq.New(context.Background(), f.c, "orders:eu")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.EnqueueAfter(context.Background(), "x", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) audit(t *testing.T) {
	t.Helper()
	r, err := f.q.Audit(context.Background())
	if err != nil || !r.OK() {
		t.Fatalf("audit: %v %v", err, r.Problems)
	}
}

func TestUsageAndConnectionErrors(t *testing.T) {
	f := newFixture(t, "orders")
	dqctl(t, "").want(t, exitUsage, "Commands:")
	dqctl(t, "", "-h").want(t, exitOK, "Exit codes")
	dqctl(t, "", "frobnicate").want(t, exitUsage, `unknown command "frobnicate"`)
	dqctl(t, "", "-redis", f.addr, "-nosuch", "queues").want(t, exitUsage, "flag provided but not defined")
	dqctl(t, "", "-redis", f.addr, "list", "orders").want(t, exitUsage, "wrong number of arguments")
	dqctl(t, "", "-redis", f.addr, "list", "orders", "sleeping").want(t, exitUsage, `unknown state "sleeping"`)
	dqctl(t, "", "-redis", f.addr, "list", "-limit", "0", "orders", "dead").want(t, exitUsage, "-limit")
	dqctl(t, "", "-redis", f.addr, "stats", "a{b").want(t, exitUsage, "bad queue name")
	dqctl(t, "", "-cluster", f.addr, "-db", "2", "queues").want(t, exitUsage, "-db cannot be used with -cluster")
	dqctl(t, "", "-redis", "127.0.0.1:1", "queues").want(t, exitError, "cannot reach Redis at 127.0.0.1:1")
	dqctl(t, "", "-redis", f.addr, "stats", "order").want(t, exitNotFound, `no queue named "order"`)
	dqctl(t, "", "-redis", f.addr, "show", "orders", "nope").want(t, exitNotFound, `no item "nope"`)
	// Connection flags after the command work too.
	dqctl(t, "", "stats", "-redis", f.addr, "orders").want(t, exitOK, `queue "orders"`)
}

// fakeServer listens on loopback and answers each connection with reply
// (nothing if empty) to whatever it first reads, then keeps it open until
// the test ends.
func fakeServer(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err == nil && reply != "" {
					_, _ = c.Write([]byte(reply))
				}
				_, _ = io.Copy(io.Discard, c)
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// TestConnectionErrorsSayWhy (issue 24, item 14): -tls against a plain
// server and a -timeout too short both said only "cannot reach Redis", and
// -cluster silently ignored -redis. Now each says what happened.
func TestConnectionErrorsSayWhy(t *testing.T) {
	f := newFixture(t, "orders")
	silent, plain := fakeServer(t, ""), fakeServer(t, "-ERR unknown command\r\n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		// A plain Redis says nothing to a TLS hello.
		{[]string{"-redis", f.addr, "-tls", "-timeout", "300ms", "queues"}, exitError,
			"Redis at " + f.addr + " did not complete a TLS handshake within 300ms (-timeout 300ms): it may not speak TLS (connect without -tls"},
		// A server that answers it in plain text.
		{[]string{"-redis", plain, "-tls", "queues"}, exitError, "Redis at " + plain + " did not speak TLS (its first reply is not a TLS record): connect without -tls"},
		{[]string{"-redis", silent, "-timeout", "50ms", "queues"}, exitError, "Redis at " + silent + " did not answer within 50ms: timed out (-timeout 50ms)"},
		{[]string{"-redis", silent, "-timeout", "50ms", "watch", "orders"}, exitError, "Redis at " + silent + " did not answer within 50ms: timed out (-timeout 50ms)"},
		{[]string{"-redis", f.addr, "-cluster", f.addr, "queues"}, exitUsage, "-redis cannot be used with -cluster"},
		{[]string{"-cluster", f.addr, "queues", "-redis", f.addr}, exitUsage, "-redis cannot be used with -cluster"},
	} {
		r := dqctl(t, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "cannot reach") {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", c.args, r.code, c.code, c.want, r.stderr)
		}
	}
}

// TestServerRefusalsSaySo (issue 41, item 13): a server that answered
// the connection with an error (a wrong password, a bad -db, a user
// without PING) was reported as "cannot reach Redis". Now dqctl says what
// the server said, keeps "cannot reach" for a connection that failed, and
// goes on when the only refusal is PING's.
func TestServerRefusalsSaySo(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	users := aclLines(t)
	for _, args := range [][]interface{}{users["dqproducer"], users["dqreader"], {"ACL", "SETUSER", "noselect", "on", ">pw", "~*", "-@all", "+ping"}} {
		if err := f.c.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-redis", f.addr, "-user", "dqreader", "-password", "wrong", "queues"},
			"Redis at " + f.addr + " refused the connection: WRONGPASS invalid username-password pair or user is disabled. (check -user and -password"},
		{[]string{"-redis", f.addr, "-user", "nobody", "-password", "pw", "queues"},
			"Redis at " + f.addr + " refused the connection: WRONGPASS"},
		{[]string{"-redis", f.addr, "-db", "99", "queues"},
			"Redis at " + f.addr + " db 99 refused the connection: ERR DB index is out of range (-db 99: the server has fewer databases"},
		{[]string{"-redis", f.addr, "-user", "noselect", "-password", "pw", "-db", "2", "queues"},
			"Redis at " + f.addr + " db 2 refused the connection: NOPERM this user has no permissions to run the 'select' command (the Redis user's ACL"},
	} {
		r := dqctl(t, "", c.args...)
		if r.code != exitError || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "cannot reach") {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", c.args, r.code, exitError, c.want, r.stderr)
		}
	}
	// The documented producer may not PING: it registers a recurring job
	// all the same.
	dqctl(t, "", "-redis", f.addr, "-user", "dqproducer", "-password", "pw", "register", "orders", "nightly", "every 24h").
		want(t, exitOK, `created registration "nightly" of queue "orders"`)
	// A port nobody listens on: the connection failed.
	dqctl(t, "", "-redis", "127.0.0.1:1", "queues").want(t, exitError, "cannot reach Redis at 127.0.0.1:1: dial tcp 127.0.0.1:1")
}

func TestQueuesStatsList(t *testing.T) {
	f := newFixture(t, "orders")
	f.neighbour(t)

	r := dqctl(t, "", "-redis", f.addr, "queues")
	r.want(t, exitOK, "QUEUE", "orders:eu")
	// Sizes, OLDEST OVERDUE (nothing due), COMPLETED, NACKED, DEAD-LETTERED and FAILED
	// (2 of 3 deliveries not acked, f1 in flight aside).
	if !regexp.MustCompile(`\norders +2 +0 +- +1 +2 +0 +1 +2 +66\.7%\n`).MatchString(r.stdout) {
		t.Errorf("queues table:\n%s", r.stdout)
	}
	var qs []queueInfo
	r = dqctl(t, "", "-redis", f.addr, "queues", "-json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil || len(qs) != 2 || qs[0] != (queueInfo{"orders", 2, 0, 1, 2, 0, false}) {
		t.Fatalf("queues -json: %v %+v", err, qs)
	}

	r = dqctl(t, "", "-redis", f.addr, "stats", "orders")
	r.want(t, exitOK, "scheduled 2 (due now 0", "in flight 1, dead 2", "enqueued 5", "delivered 3", "dead-lettered 2", "lateness of 3 deliveries")
	var st struct {
		Scheduled, Dead int64
		Counters        redisq.StatsCounters
		Lateness        struct{ Count int64 }
	}
	r = dqctl(t, "", "-redis", f.addr, "stats", "-json", "orders")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Scheduled != 2 || st.Dead != 2 ||
		st.Counters.Enqueued != 5 || st.Lateness.Count != 3 {
		t.Fatalf("stats -json: %v %+v\n%s", err, st, r.stdout)
	}

	r = dqctl(t, "", "-redis", f.addr, "list", "orders", "scheduled")
	r.want(t, exitOK, "1-2 of 2 scheduled")
	if i, j := strings.Index(r.stdout, "s1 "), strings.Index(r.stdout, "s2 "); i < 0 || j < i {
		t.Errorf("scheduled not in due order:\n%s", r.stdout)
	}
	r = dqctl(t, "", "-redis", f.addr, "list", "-limit", "1", "orders", "dead")
	r.want(t, exitOK, "d1", "max attempts: smtp 550", "1-1 of 2 dead; next page: -offset 1")
	dqctl(t, "", "-redis", f.addr, "list", "-limit", "1", "-offset", "1", "orders", "dead").want(t, exitOK, "d2", `"bad address"`, "2-2 of 2 dead\n")
	dqctl(t, "", "-redis", f.addr, "list", "orders", "inflight").want(t, exitOK, "f1", "LEASE ENDS")
	dqctl(t, "", "-redis", f.addr, "list", "orders:eu", "dead").want(t, exitOK, "(no dead items at offset 0; 0 in all)")

	var page struct {
		Total int64
		Next  int64
		Items []struct {
			ID       string
			State    string
			Payload  *string `json:"payload"`
			Encoding string  `json:"payload_encoding"`
		}
	}
	r = dqctl(t, "", "-redis", f.addr, "list", "-json", "-payloads", "orders", "scheduled")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || page.Total != 2 || page.Next != -1 || len(page.Items) != 2 {
		t.Fatalf("list -json: %v %+v", err, page)
	}
	if p := page.Items[0]; p.Payload == nil || *p.Payload != `{"order":1,"items":["a"]}` || p.Encoding != "utf8" || p.State != "scheduled" {
		t.Errorf("payloads: %+v", p)
	}
	if p := page.Items[1]; p.Payload == nil || p.Encoding != "base64" {
		t.Errorf("binary payload: %+v", p)
	} else if b, err := base64.StdEncoding.DecodeString(*p.Payload); err != nil || string(b) != "\x00\x01\x02\x1b\xff" {
		t.Errorf("binary payload: %q %v", b, err)
	}
}

func TestShow(t *testing.T) {
	f := newFixture(t, "orders")
	r := dqctl(t, "", "-redis", f.addr, "show", "orders", "s1")
	r.want(t, exitOK, "state     scheduled", "payload   25 bytes", "{\n  \"order\": 1,\n  \"items\": [\n    \"a\"\n  ]\n}")
	r = dqctl(t, "", "-redis", f.addr, "show", "orders", "s2")
	r.want(t, exitOK, "00000000  00 01 02 1b ff")
	r = dqctl(t, "", "-redis", f.addr, "show", "orders", "d1")
	r.want(t, exitOK, "reason    max attempts: smtp 550", "died ")
	r = dqctl(t, "", "-redis", f.addr, "show", "-json", "orders", "f1")
	r.want(t, exitOK, `"state": "inflight"`, `"lease_deadline"`, `"payload": "f1"`)
	if strings.Contains(r.stdout, "tok") {
		t.Errorf("the lease token must never be shown:\n%s", r.stdout)
	}
}

// Names, ids, reasons and payloads with escape sequences, C1 controls,
// bidi overrides and invalid UTF-8 are printed escaped everywhere
// (dqctl checks every output with assertSafe).
func TestNoTerminalInjection(t *testing.T) {
	evil := "q\x1b]0;pwned\a\u009b31m\u202e"
	f := newFixture(t, evil)
	ctx := context.Background()
	id := "id\x1b[2J\xff"
	if _, err := f.q.EnqueueAfter(ctx, id, []byte("{\"k\":\"\u009b\u202e\x7f\"}\r"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.EnqueueAfter(ctx, "text", []byte("line1\n\x1b[31mred\u202e"), time.Hour); err != nil {
		t.Fatal(err)
	}
	a := []string{"-redis", f.addr}
	dqctl(t, "", append(a, "queues")...).want(t, exitOK, `"q\x1b]0;pwned\a\u009b31m\u202e"`)
	dqctl(t, "", append(a, "queues", "-json")...).want(t, exitOK)
	dqctl(t, "", append(a, "stats", evil)...).want(t, exitOK)
	dqctl(t, "", append(a, "list", evil, "scheduled")...).want(t, exitOK, `"id\x1b[2J\xff"`)
	r := dqctl(t, "", append(a, "list", "-json", "-payloads", evil, "scheduled")...)
	r.want(t, exitOK, `\u009b\u202e\u007f`)
	var page struct{ Items []struct{ ID string } }
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || page.Items[0].ID != "id\x1b[2J\ufffd" {
		t.Fatalf("escaped JSON is still the same JSON: %v %+v", err, page)
	}
	dqctl(t, "", append(a, "show", evil, id)...).want(t, exitOK, `"\u009b\u202e\u007f"`)
	dqctl(t, "", append(a, "show", evil, "text")...).want(t, exitOK, `\x1b[31mred\u202e`)
	dqctl(t, "", append(a, "show", evil, "no\x1bpe")...).want(t, exitNotFound, `"no\x1bpe"`)
	dqctl(t, "", append(a, "delete", evil, id)...).want(t, exitOK, `deleted "id\x1b[2J\xff"`)
	dqctl(t, "", append(a, "destroy", evil)...).want(t, exitAborted)
	dqctl(t, "", append(a, "destroy", "-yes", evil)...).want(t, exitOK, "destroyed queue")
}

func TestDeadLetterCommands(t *testing.T) {
	f := newFixture(t, "orders")
	a := []string{"-redis", f.addr}
	dqctl(t, "", append(a, "requeue", "orders", "s1")...).want(t, exitNotFound, `item "s1" is not dead; nothing changed`, "1 of 1 items failed")
	dqctl(t, "", append(a, "requeue", "orders", "d1", "zz")...).want(t, exitNotFound, `requeued "d1"`, `no item "zz"`)
	it, err := f.q.Get(context.Background(), "d1")
	if err != nil || it.State != redisq.StateScheduled || it.Attempts != 0 {
		t.Fatalf("d1 after requeue: %+v %v", it, err)
	}
	f.audit(t)
	dqctl(t, "", append(a, "requeue", "orders")...).want(t, exitUsage, "give item ids or -all")
	dqctl(t, "", append(a, "requeue", "-all", "orders", "d2")...).want(t, exitUsage, "give item ids or -all")
	dqctl(t, "n\n", append(a, "delete-dead", "-all", "orders")...).want(t, exitAborted, "delete the 1 dead item of queue", "aborted; nothing changed")
	dqctl(t, "", append(a, "delete-dead", "-all", "orders")...).want(t, exitAborted) // EOF: no
	dqctl(t, "y\n", append(a, "delete-dead", "-all", "orders")...).want(t, exitOK, `deleted 1 dead item of queue "orders"`)
	f.audit(t)
	dqctl(t, "", append(a, "delete-dead", "orders", "d2")...).want(t, exitNotFound, `no item "d2"`)

	dqctl(t, "", append(a, "delete", "orders", "s1", "f1")...).want(t, exitOK, `deleted "s1"`, `marked "f1": in flight`)
	if _, err := f.held.NackWith(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.Get(context.Background(), "f1"); err != redisq.ErrNotFound {
		t.Fatalf("marked item left after its nack: %v", err)
	}
	f.audit(t)
}

func TestPurgeAndDestroy(t *testing.T) {
	f := newFixture(t, "orders")
	f.neighbour(t)
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	dqctl(t, "no\n", append(a, "purge", "orders", "dead")...).want(t, exitAborted, "purge 2 dead items")
	dqctl(t, "yes\n", append(a, "purge", "orders", "dead")...).want(t, exitOK, `purged queue "orders": deleted 2 dead items`)
	dqctl(t, "", append(a, "purge", "-yes", "orders", "inflight")...).want(t, exitOK, "marked 1 inflight item\n")
	dqctl(t, "", append(a, "purge", "-yes", "order", "dead")...).want(t, exitNotFound, `no queue named "order"`)
	f.audit(t)

	dqctl(t, "orders:eu\n", append(a, "destroy", "orders")...).want(t, exitAborted, "type the queue name to confirm")
	dqctl(t, "orders\n", append(a, "destroy", "orders")...).want(t, exitOK, `destroyed queue "orders"`)
	keys, err := f.c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "{dq:orders:eu}:") && k != redisq.RegistryKey {
			t.Errorf("key %q left after destroy", k)
		}
	}
	dqctl(t, "", append(a, "destroy", "-yes", "orders")...).want(t, exitNotFound, `no queue named "orders"`)
	dqctl(t, "", append(a, "queues")...).want(t, exitOK, "orders:eu")
}

func TestWatch(t *testing.T) {
	f := newFixture(t, "orders")
	r := dqctl(t, "", "-redis", f.addr, "watch", "-n", "2", "-interval", "10ms", "-window", "3h", "orders")
	r.want(t, exitOK, "due in the next 3h0m0s (18m0s a bar)", "delivered 3 (0.0/s)")
	if n := strings.Count(r.stdout, `queue "orders" on `); n != 2 {
		t.Errorf("%d refreshes, want 2:\n%s", n, r.stdout)
	}
	// s1 is due in 1h: the 4th bar (54m-72m); s2 in 2h: the 7th (108m-126m).
	for _, l := range []string{"+1h12m0s |" + strings.Repeat("#", chartWidth) + " 1", "+2h6m0s |" + strings.Repeat("#", chartWidth) + " 1", "overdue |" + strings.Repeat(" ", chartWidth) + " 0"} {
		if !strings.Contains(r.stdout, l) {
			t.Errorf("chart lacks %q:\n%s", l, r.stdout)
		}
	}
	dqctl(t, "", "-redis", f.addr, "watch", "-interval", "1ns", "orders").want(t, exitUsage, "-interval")
}

// TestWatchLatenessSinceTheLastRefresh (issue 24, item 14): watch showed
// the lateness of every delivery since the queue was created (the
// fixture's three, due in 1970), on every refresh. A refresh after the
// first shows the deliveries since the one before: none, or the one made
// meanwhile.
func TestWatchLatenessSinceTheLastRefresh(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	var out lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"-redis", f.addr, "watch", "-n", "3", "-interval", "300ms", "orders"}, strings.NewReader(""), &out, &out)
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "due in the next"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no first refresh: %q", out.String())
		}
	}
	// One delivery, late by little, between the first refresh and the third.
	if _, err := f.q.EnqueueAfter(ctx, "fresh", nil, 0); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := f.q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.ID == "fresh" {
			break
		}
	}
	if code := <-done; code != exitOK {
		t.Fatalf("watch: exit %d\n%s", code, out.String())
	}
	screens := strings.Split(out.String(), `queue "orders" on `)[1:]
	if len(screens) != 3 || !strings.Contains(screens[0], "lateness of 3 deliveries (claim - due") {
		t.Fatalf("want 3 refreshes, the first with the 3 deliveries since the queue was created:\n%s", out.String())
	}
	later := screens[1] + screens[2]
	if strings.Contains(later, "3 deliveries") || strings.Contains(later, "4 deliveries") || strings.Count(later, "lateness of 1 delivery since the last refresh") != 1 ||
		strings.Count(later, "lateness: no deliveries since the last refresh") != 1 {
		t.Errorf("the refreshes after the first do not show the deliveries since the one before:\n%s", later)
	}
}

func TestServeMetrics(t *testing.T) {
	f := newFixture(t, "orders")
	url, stop := serving(t, "-redis", f.addr, "serve-metrics", "-listen", "127.0.0.1:0")
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, m := range []string{`redisq_items{queue="orders",state="dead"} 2`, `redisq_enqueued_total{queue="orders"} 5`,
		`redisq_delivery_lateness_seconds_count{queue="orders"} 3`, `redisq_up{queue="orders"} 1`} {
		if !strings.Contains(string(body), m) {
			t.Errorf("metrics lack %s:\n%s", m, body)
		}
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve-metrics exited %d", code)
	}
}

// serving runs a serving dqctl command and returns the URL of its first
// line of output, and a function that interrupts it and returns its exit
// code.
func serving(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		code := run(ctx, args, strings.NewReader(""), pw, io.Discard)
		_ = pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("%v: %v (exit %d)", args, err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, _, _ := strings.Cut(line[strings.Index(line, "http://"):], " ")
	return strings.TrimSpace(url), func() int { cancel(); return <-done }
}

func TestCluster(t *testing.T) {
	addrs := redistest.NewCluster(t, 3)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	ctx := context.Background()
	for i := range 4 {
		q, err := redisq.New(ctx, cc, fmt.Sprint("q", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.EnqueueAfter(ctx, "x", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
		_ = q.Close()
	}
	a := []string{"-cluster", strings.Join(addrs, ",")}
	dqctl(t, "", append(a, "queues")...).want(t, exitOK, "q0 ", "q1 ", "q2 ", "q3 ")
	dqctl(t, "", append(a, "destroy", "-yes", "q2")...).want(t, exitOK, `destroyed queue "q2"`)
	r := dqctl(t, "", append(a, "queues", "-json")...)
	r.want(t, exitOK)
	if strings.Contains(r.stdout, `"q2"`) {
		t.Errorf("q2 listed after destroy:\n%s", r.stdout)
	}
}
