package dqweb_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// authTry sends one request to h from addr with user:password ("" for
// none) and returns the response.
func authTry(h http.Handler, addr, user, password string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = addr
	if user != "" {
		r.SetBasicAuth(user, password)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("in")) })

// TestBasicAuthRateLimit: after MaxFailures wrong passwords from one
// address, it is answered 429 with Retry-After, the right password too,
// until the window has passed; other addresses are not affected; requests
// without credentials do not count. The default is 10 a minute.
func TestBasicAuthRateLimit(t *testing.T) {
	h := dqweb.BasicAuth(ok, "ops", "s3cret")
	for i := range 10 {
		if rec := authTry(h, "192.0.2.1:1000", "ops", fmt.Sprint("guess", i)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, rec.Code)
		}
	}
	for _, pw := range []string{"guess", "s3cret"} {
		rec := authTry(h, "192.0.2.1:2000", "ops", pw)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("password %q after 10 failures: %d (Retry-After %q), want 429", pw, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	if rec := authTry(h, "192.0.2.2:1000", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("another address: %d, want 200", rec.Code)
	}
	// IPv6 clients count by /64.
	for i := range 10 {
		authTry(h, fmt.Sprintf("[2001:db8::%x]:1", i+1), "ops", "guess")
	}
	if rec := authTry(h, "[2001:db8::ffff]:1", "ops", "s3cret"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("an address of a /64 that failed 10 times: %d, want 429", rec.Code)
	}

	// A short window: it ends, and the client is served again.
	var log lockedBuffer
	h = dqweb.BasicAuthWith(ok, "ops", "s3cret", dqweb.AuthOptions{MaxFailures: 3, Window: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for range 20 {
		if rec := authTry(h, "192.0.2.1:1", "", ""); rec.Code != http.StatusUnauthorized {
			t.Fatalf("no credentials: %d, want 401", rec.Code)
		}
	}
	for range 3 {
		authTry(h, "192.0.2.1:1", "ops", "wrong")
	}
	if rec := authTry(h, "192.0.2.1:1", "ops", "s3cret"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("after 3 failures: %d, want 429", rec.Code)
	}
	time.Sleep(400 * time.Millisecond)
	if rec := authTry(h, "192.0.2.1:1", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("after the window: %d, want 200", rec.Code)
	}
	if l := log.lines(); len(l) != 2 || !strings.Contains(l[0], "failed basic auth") || !strings.Contains(l[1], "refusing") {
		t.Fatalf("log: %q, want the first failure and the refusal", l)
	}
}

// TestBasicAuthLogIsBounded: a flood of failures from many addresses
// logs at most 30 lines a minute.
func TestBasicAuthLogIsBounded(t *testing.T) {
	var log lockedBuffer
	h := dqweb.BasicAuthWith(ok, "ops", "s3cret", dqweb.AuthOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for i := range 15000 {
		authTry(h, fmt.Sprintf("10.%d.%d.%d:1", i>>16, (i>>8)&255, i&255), "ops", "wrong")
	}
	if n := len(log.lines()); n > 30 {
		t.Fatalf("15,000 failures logged %d lines, want at most 30", n)
	}
	// A refused flood from one address is answered without checking.
	for range 15000 {
		authTry(h, "192.0.2.9:1", "admin", "guess")
	}
	if rec := authTry(h, "192.0.2.9:1", "ops", "s3cret"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("after 15,000 failures: %d, want 429", rec.Code)
	}
}

// fakeClock is a clock the tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestBasicAuthFullTableLocksNoOneOut (issue 24, item 12): 10,050
// addresses failing once each filled the table of clients, after which
// every new client was refused (429, Retry-After: 60), the right password
// included. Now the oldest counts are forgotten: a new client's right
// password gets in, a wrong one is checked (401), and the table stays
// bounded.
func TestBasicAuthFullTableLocksNoOneOut(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	// A long window and no bound of all clients, so that the table fills.
	h := dqweb.BasicAuthAt(ok, "ops", "s3cret", dqweb.AuthOptions{Window: time.Hour, FailuresPerSecond: 1e9, Logger: quietLog()}, clock.now)
	for i := range 10_050 {
		if rec := authTry(h, fmt.Sprintf("10.0.%d.%d:1", i>>8, i&255), "ops", "wrong"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, rec.Code)
		}
		clock.add(time.Millisecond)
	}
	if n := dqweb.AuthTracked(h); n > 10_000 {
		t.Errorf("%d clients tracked, want at most 10,000", n)
	}
	if rec := authTry(h, "192.0.2.7:1", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("a new client with the right password after 10,050 failing addresses: %d (Retry-After %q), want 200",
			rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := authTry(h, "192.0.2.8:1", "ops", "wrong"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a new client with a wrong password: %d, want 401", rec.Code)
	}
	// The latest clients' counts are kept: 10 failures still refuse.
	for range 9 {
		authTry(h, "10.0.39.65:1", "ops", "wrong")
	}
	if rec := authTry(h, "10.0.39.65:1", "ops", "s3cret"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a recent client after 10 failures: %d, want 429", rec.Code)
	}
}

// TestBasicAuthBoundsRotatingAddresses (issue 24, item 12): 300 guesses
// from 300 addresses within 0.1 s were all checked. Now all clients
// together get FailuresPerSecond (a burst of 10 s worth): the rest are
// refused unchecked, the right password from a new address too, until a
// token comes back, while a client that logged in before still gets in.
func TestBasicAuthBoundsRotatingAddresses(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	h := dqweb.BasicAuthAt(ok, "ops", "s3cret", dqweb.AuthOptions{Logger: quietLog()}, clock.now)
	if rec := authTry(h, "198.51.100.1:1", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("the operator: %d", rec.Code)
	}
	checked, refused := 0, 0
	for i := range 300 {
		switch rec := authTry(h, fmt.Sprintf("10.1.%d.%d:1", i>>8, i&255), "ops", fmt.Sprint("guess", i)); rec.Code {
		case http.StatusUnauthorized:
			checked++
		case http.StatusTooManyRequests:
			refused++
			if ra := rec.Header().Get("Retry-After"); ra != "1" {
				t.Fatalf("refused by the bound of all clients with Retry-After %q, want 1", ra)
			}
		default:
			t.Fatalf("guess %d: %d", i, rec.Code)
		}
		if i%3 == 0 {
			clock.add(time.Millisecond) // 300 guesses in 0.1 s
		}
	}
	if checked != 50 || refused != 250 {
		t.Fatalf("300 guesses from 300 addresses in 0.1 s: %d checked, %d refused; want 50 (10 s of the default 5 a second) and 250", checked, refused)
	}
	if rec := authTry(h, "198.51.100.1:2", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("the operator, known, during the flood: %d, want 200", rec.Code)
	}
	if rec := authTry(h, "203.0.113.5:1", "ops", "s3cret"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a new address during the flood: %d, want 429 (its check would answer a guess)", rec.Code)
	}
	clock.add(200 * time.Millisecond) // one token back
	if rec := authTry(h, "203.0.113.5:1", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("a new address once a token is back: %d, want 200", rec.Code)
	}
	// A right password gives its token back: the next guess is checked.
	if rec := authTry(h, "10.2.0.1:1", "ops", "guess"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a guess after a right password gave back its token: %d, want 401", rec.Code)
	}
	if rec := authTry(h, "10.2.0.2:1", "ops", "guess"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the next guess: %d, want 429", rec.Code)
	}
}

// TestBasicAuthBoundsOneIPv6Site (issue 24, item 12): one IPv6 /48 holds
// 65,536 /64s, each a client of its own, enough to fill the table every
// minute. Now the /64s of a /48 share 4 × MaxFailures per window; then
// the /48 is refused unchecked (the table holds a bounded number of its
// clients), except a /64 of it that logged in before; other /48s are not
// affected.
func TestBasicAuthBoundsOneIPv6Site(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	h := dqweb.BasicAuthAt(ok, "ops", "s3cret", dqweb.AuthOptions{FailuresPerSecond: 1e9, Logger: quietLog()}, clock.now)
	if rec := authTry(h, "[2001:db8:1:ffff::1]:1", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("the operator: %d", rec.Code)
	}
	checked := 0
	for i := range 1000 {
		rec := authTry(h, fmt.Sprintf("[2001:db8:1:%x::1]:1", i), "ops", "guess")
		if rec.Code == http.StatusUnauthorized {
			checked++
		}
	}
	if checked != 40 {
		t.Fatalf("1000 /64s of one /48: %d guesses checked, want 40 (4 × MaxFailures)", checked)
	}
	if n := dqweb.AuthTracked(h); n > 41 {
		t.Fatalf("%d clients tracked after one /48's guesses, want at most 41", n)
	}
	if rec := authTry(h, "[2001:db8:1:ffff::2]:1", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("the operator's /64, known, in the refused /48: %d, want 200", rec.Code)
	}
	if rec := authTry(h, "[2001:db8:2::1]:1", "ops", "guess"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("another /48: %d, want 401", rec.Code)
	}
	clock.add(time.Minute)
	if rec := authTry(h, "[2001:db8:1:abcd::1]:1", "ops", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("the /48 after the window: %d, want 200", rec.Code)
	}
}
