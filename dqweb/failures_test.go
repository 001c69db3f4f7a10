package dqweb_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// serve mounts a handler for c under /dq/ on a test server and returns
// its base URL.
func serve(t testing.TB, c redis.UniversalClient, opt dqweb.Options) string {
	t.Helper()
	opt.Prefix = "/dq/"
	mux := http.NewServeMux()
	mux.Handle("/dq/", dqweb.Handler(c, opt))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/dq/"
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// postAction posts an action with a CSRF cookie and token of its own.
func postAction(t testing.TB, base string, form url.Values) response {
	t.Helper()
	c := client(t)
	u, _ := url.Parse(base)
	tok := strings.Repeat("T", 43)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "dqweb_csrf", Value: tok, Path: "/dq/"}})
	form.Set("csrf", tok)
	form.Set("confirmed", "yes")
	return post(t, c, base+"action", form)
}

// TestFailuresSayWhatFailed: with Redis down every page and action is a
// 503 that says Redis is unreachable (not a 400 about the name); a Redis
// that does not answer is a 504, one that answers with an error a 502;
// bad names are 400s decided without Redis.
func TestFailuresSayWhatFailed(t *testing.T) {
	c, dials := countingClient(t)
	base := serve(t, c, dqweb.Options{})
	hc := client(t)
	for _, u := range []string{base, base + "queue?q=orders", base + "item?q=orders&id=x"} {
		r := get(t, hc, u)
		if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "Redis is unreachable") || r.header.Get("Retry-After") == "" {
			t.Errorf("%s with Redis down: %d (Retry-After %q), want 503 saying Redis is unreachable\n%s", u, r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	if r := postAction(t, base, url.Values{"op": {"delete-all-dead"}, "q": {"orders"}}); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "Redis is unreachable") {
		t.Errorf("action with Redis down: %d, want 503\n%s", r.status, r.body)
	}
	// With the queues given, not listed: still a 503 when none can be read.
	if r := get(t, hc, serve(t, c, dqweb.Options{Queues: []string{"orders", "emails"}})); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "Redis is unreachable") {
		t.Errorf("overview of given queues with Redis down: %d, want 503\n%s", r.status, r.body)
	}
	// A real closed port, as well as the refusing dialer.
	down := redis.NewClient(&redis.Options{Addr: closedPort(t), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	if r := get(t, hc, serve(t, down, dqweb.Options{})+"queue?q=orders"); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "connection refused") {
		t.Errorf("queue page, nothing on the port: %d\n%s", r.status, r.body)
	}

	before := dials.Load()
	long := strings.Repeat("n", dqweb.MaxName+1)
	for u, says := range map[string]string{
		base + "queue?q=" + url.QueryEscape("a{b}"): "bad queue name",
		base + "queue?q=":                 "no queue name given",
		base + "queue?q=" + long:          "too long for the dashboard",
		base + "item?q=orders":            "no item id given",
		base + "item?q=orders&id=" + long: "too long for the dashboard",
		base + "item?" + url.Values{"q": {"}"}, "id": {"x"}}.Encode(): "bad queue name",
	} {
		if r := get(t, hc, u); r.status != http.StatusBadRequest || !strings.Contains(r.body, says) {
			t.Errorf("%.80s: %d, want 400 saying %q\n%.2000s", u, r.status, says, r.body)
		}
	}
	if r := postAction(t, base, url.Values{"op": {"delete-dead"}, "q": {"orders"}, "id": {long}}); r.status != http.StatusBadRequest {
		t.Errorf("action on a too long id: %d, want 400", r.status)
	}
	if n := dials.Load() - before; n != 0 {
		t.Errorf("bad names dialed Redis %d times", n)
	}

	// A server that accepts and never answers: 504.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	mute := redis.NewClient(&redis.Options{Addr: l.Addr().String(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = mute.Close() })
	if r := get(t, hc, serve(t, mute, dqweb.Options{Timeout: 300 * time.Millisecond})+"queue?q=orders"); r.status != http.StatusGatewayTimeout || !strings.Contains(r.body, "Redis did not answer") {
		t.Errorf("Redis that does not answer: %d, want 504\n%s", r.status, r.body)
	}

	// A server that answers with an error (no password given): 502.
	s := redistest.New(t)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.ConfigSet(context.Background(), "requirepass", "secret").Err(); err != nil {
		t.Fatal(err)
	}
	noauth := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = noauth.Close() })
	if r := get(t, hc, serve(t, noauth, dqweb.Options{})+"queue?q=orders"); r.status != http.StatusBadGateway || !strings.Contains(r.body, "Redis answered with an error") {
		t.Errorf("Redis that refuses the command: %d, want 502\n%s", r.status, r.body)
	}
}

// scriptsFail fails every script call (EVALSHA, EVAL) with err.
type scriptsFail struct{ err error }

func (scriptsFail) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h scriptsFail) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			cmd.SetErr(h.err)
			return h.err
		}
		return next(ctx, cmd)
	}
}

func (scriptsFail) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestOutageIsNotAnUpgrade (issue 24, item 14): Redis failing as a page
// opened a queue was reported as "upgrading queue" (redisq.New's
// wording, which runs its format check first); it is opening it.
func TestOutageIsNotAnUpgrade(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	hooked := redis.NewClient(f.C.Options())
	t.Cleanup(func() { _ = hooked.Close() })
	hooked.AddHook(scriptsFail{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}})
	base := serve(t, hooked, dqweb.Options{})
	r := get(t, client(t), base+"item?q=orders&id=mail:7")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `redisq: opening queue &#34;orders&#34;`) || strings.Contains(r.body, "upgrading") {
		t.Fatalf("item page as Redis fails: %d, want 503 saying it was opening the queue\n%s", r.status, r.body)
	}
}
