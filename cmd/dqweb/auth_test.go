package dqweb_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/cmd/dqweb"
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
