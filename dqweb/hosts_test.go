package dqweb_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/redis/go-redis/v9"
)

// countingClient is a Redis client that fails every dial and counts them:
// a handler that leaves the count at zero read nothing from Redis.
func countingClient(t testing.TB) (*redis.Client, *atomic.Int64) {
	var dials atomic.Int64
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("the test refuses every connection")
		}})
	t.Cleanup(func() { _ = c.Close() })
	return c, &dials
}

// hostRequests are one request of each kind the handler serves.
func hostRequests() []*http.Request {
	form := url.Values{"op": {"delete-all-dead"}, "q": {"orders"}, "csrf": {strings.Repeat("A", 43)}, "confirmed": {"yes"}}.Encode()
	var rs []*http.Request
	for _, p := range []string{"/dq/", "/dq/queue?q=orders", "/dq/queue?q=orders&limitkey=tenant", "/dq/item?q=orders&id=mail:7", "/dq/item?q=orders&id=mail:7&full=1",
		"/dq/static/dqweb.css", "/dq/static/dqweb.js", "/dq/nope", "/elsewhere", "/dq/action"} {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			r := httptest.NewRequest(m, p, nil)
			if m == http.MethodPost {
				r = httptest.NewRequest(m, p, strings.NewReader(form))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				r.Header.Set("Sec-Fetch-Site", "same-origin")
			}
			r.AddCookie(&http.Cookie{Name: "dqweb_csrf", Value: strings.Repeat("A", 43)})
			rs = append(rs, r)
		}
	}
	return rs
}

// TestHostCheck: a Host that DNS rebinding could produce is refused on
// every route, method and mode, before Redis is asked for anything (the
// client counts dials) and without a cookie; IP literals, localhost and
// the allowed names are served.
func TestHostCheck(t *testing.T) {
	allowed := []string{"ops.example.com", "*.corp.example, proxy.example"}
	for _, ro := range []bool{false, true} {
		c, dials := countingClient(t)
		h := dqweb.Handler(c, dqweb.Options{Prefix: "/dq/", ReadOnly: ro, AllowedHosts: allowed})
		for _, host := range []string{"evil.example", "evil.example:8080", "EVIL.example.", "localhost.evil.example",
			"127.0.0.1.nip.io", "corp.example", "xops.example.com", "ops.example.com.evil", "", "evil.example:8080:1"} {
			for _, r := range hostRequests() {
				r.Host = host
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), "-allow-host") {
					t.Errorf("read-only %v, Host %q, %s %s: %d, want 421 naming -allow-host\n%s", ro, host, r.Method, r.URL, rec.Code, rec.Body)
				}
				if sc := rec.Header().Get("Set-Cookie"); sc != "" {
					t.Errorf("Host %q, %s %s: sets a cookie %q", host, r.Method, r.URL, sc)
				}
			}
		}
		if n := dials.Load(); n != 0 {
			t.Fatalf("read-only %v: refused requests dialed Redis %d times", ro, n)
		}
		for _, host := range []string{"127.0.0.1:8080", "127.0.0.1", "localhost", "LOCALHOST:80", "localhost.", "app.localhost:8080",
			"[::1]:8080", "[::1]", "10.1.2.3:8080", "ops.example.com", "OPS.example.com.:443", "x.corp.example", "a.b.corp.example", "proxy.example"} {
			r := httptest.NewRequest(http.MethodGet, "/dq/static/dqweb.css", nil)
			r.Host = host
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusOK {
				t.Errorf("Host %q: stylesheet %d, want 200", host, rec.Code)
			}
		}
		// Allowed and with Redis down: the page tries Redis, and says so.
		r := httptest.NewRequest(http.MethodGet, "/dq/", nil)
		r.Host = "ops.example.com"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusServiceUnavailable || dials.Load() == 0 {
			t.Errorf("allowed Host, Redis down: %d after %d dials, want 503", rec.Code, dials.Load())
		}
	}
}

// TestAllowHosts: the wrapper refuses a foreign Host without calling the
// handler it wraps.
func TestAllowHosts(t *testing.T) {
	var called atomic.Int64
	h := dqweb.AllowHosts(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called.Add(1) }), "proxy.example")
	for host, want := range map[string]int{"evil.example": 421, "proxy.example:443": 200, "127.0.0.1:80": 200, "localhost": 200} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
	if called.Load() != 3 {
		t.Errorf("wrapped handler called %d times, want 3", called.Load())
	}
}
