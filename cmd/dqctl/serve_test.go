package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServe runs the dashboard read-only behind basic auth taken from the
// environment.
func TestServe(t *testing.T) {
	f := newFixture(t, "orders")
	t.Setenv("DQCTL_BASIC_AUTH", "ops:s3cret")
	u, stop := serving(t, "-redis", f.addr, "serve", "-listen", "127.0.0.1:0", "-readonly", "-prefix", "/dq")
	if !strings.HasSuffix(u, "/dq/") {
		t.Fatalf("serving at %q, want the prefix /dq/", u)
	}
	req := func(method, user, password string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(method, u+"action", strings.NewReader(url.Values{"op": {"delete-all-dead"}, "q": {"orders"}}.Encode()))
		if method == http.MethodGet {
			r, err = http.NewRequest(method, u, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			r.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := req(http.MethodGet, "", ""); code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
	if code, _ := req(http.MethodGet, "ops", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong password: %d, want 401", code)
	}
	code, body := req(http.MethodGet, "ops", "s3cret")
	if code != http.StatusOK || !strings.Contains(body, `data-queue="orders"`) || !strings.Contains(body, "read-only") {
		t.Errorf("overview: %d\n%s", code, body)
	}
	if code, _ := req(http.MethodPost, "ops", "s3cret"); code != http.StatusForbidden {
		t.Errorf("POST in read-only mode: %d, want 403", code)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d", code)
	}
	t.Setenv("DQCTL_BASIC_AUTH", "nopassword")
	dqctl(t, "", "-redis", f.addr, "serve", "-listen", "127.0.0.1:0").want(t, exitUsage, "user:password")
}

// lockedBuffer collects output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// servingLogged is serving, with stderr kept.
func servingLogged(t *testing.T, args ...string) (string, *lockedBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &lockedBuffer{}
	done := make(chan int)
	go func() {
		code := run(ctx, args, strings.NewReader(""), pw, stderr)
		_ = pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("%v: %v (exit %d)\n%s", args, err, <-done, stderr)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	u, _, _ := strings.Cut(line[strings.Index(line, "http://"):], " ")
	return strings.TrimSpace(u), stderr, func() int { cancel(); return <-done }
}

// hostGet GETs u with the Host header host and basic auth.
func hostGet(t *testing.T, u, host, user, password string) (int, string) {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Host = host
	if user != "" {
		r.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeHostCheck: serve refuses a Host that DNS rebinding could
// produce before basic auth sees it (421, not 401), and answers the
// -allow-host names, repeated or comma-separated, and IP literals.
func TestServeHostCheck(t *testing.T) {
	f := newFixture(t, "orders")
	t.Setenv("DQCTL_BASIC_AUTH", "ops:s3cret")
	u, _, stop := servingLogged(t, "-redis", f.addr, "serve", "-listen", "127.0.0.1:0",
		"-allow-host", "proxy.example,other.example", "-allow-host", "*.corp.example")
	defer stop()
	port := u[strings.LastIndex(u, ":")+1 : strings.LastIndex(u, "/")]
	for host, want := range map[string]int{
		"evil.example:" + port: http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest,
		"proxy.example": http.StatusOK, "other.example:443": http.StatusOK, "a.corp.example": http.StatusOK,
		"127.0.0.1:" + port: http.StatusOK, "localhost:" + port: http.StatusOK,
	} {
		code, body := hostGet(t, u, host, "ops", "s3cret")
		if code != want {
			t.Errorf("Host %q: %d, want %d\n%.300s", host, code, want, body)
		}
		// Without credentials, a refused Host still gets 421, not a
		// password prompt.
		if code, _ := hostGet(t, u, host, "", ""); want != http.StatusOK && code != want {
			t.Errorf("Host %q without credentials: %d, want %d", host, code, want)
		}
	}
	if code, _ := hostGet(t, strings.TrimSuffix(u, "/")+"/elsewhere", "evil.example", "", ""); code != http.StatusMisdirectedRequest {
		t.Errorf("a path outside the dashboard, foreign Host: %d, want 421", code)
	}
}

// TestServeWarnings: what serve warns about, by listen address and mode.
func TestServeWarnings(t *testing.T) {
	addr := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080} }
	for _, c := range []struct {
		addr                  string
		auth, readOnly, named bool
		want, not             []string
	}{
		{"127.0.0.1", false, false, false, nil, nil},
		{"::1", true, true, false, nil, nil},
		{"0.0.0.0", true, false, true, []string{"with -basic-auth but without TLS: the password crosses the network in clear text"}, []string{"anyone"}},
		{"10.0.0.5", true, true, true, []string{"clear text"}, []string{"anyone"}},
		{"0.0.0.0", false, true, true, []string{"anyone who can reach it can read every queue and payload", "they cannot change the queues"}, []string{"can change"}},
		{"::", false, false, false, []string{"anyone who can reach it can read every payload and change the queues", "-allow-host"}, nil},
	} {
		w := strings.Join(serveWarnings(addr(c.addr), c.auth, c.readOnly, c.named), "\n")
		if (c.want == nil) != (w == "") {
			t.Errorf("%+v: warnings %q", c, w)
		}
		for _, s := range c.want {
			if !strings.Contains(w, s) {
				t.Errorf("%+v: warnings %q lack %q", c, w, s)
			}
		}
		for _, s := range c.not {
			if strings.Contains(w, s) {
				t.Errorf("%+v: warnings %q say %q", c, w, s)
			}
		}
	}
}

// TestServeLimits: a request whose headers or body trickle in is cut
// (here after 1s, 10s and 30s by default), and failed logins are logged
// on stderr and, after 10, answered 429.
func TestServeLimits(t *testing.T) {
	old := serverLimits
	serverLimits.readHeader, serverLimits.read = time.Second, time.Second
	defer func() { serverLimits = old }()
	f := newFixture(t, "orders")
	t.Setenv("DQCTL_BASIC_AUTH", "ops:s3cret")
	u, stderr, stop := servingLogged(t, "-redis", f.addr, "serve", "-listen", "127.0.0.1:0")
	defer stop()
	host := strings.TrimPrefix(u[:strings.LastIndex(u, "/")], "http://")
	auth := base64.StdEncoding.EncodeToString([]byte("ops:s3cret"))
	for name, req := range map[string]string{
		"slow headers": "GET / HTTP/1.1\r\nHost: " + host + "\r\n",
		"slow body": "POST /action HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Basic " + auth + "\r\n" +
			"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nop=purge",
	} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		// The rest never comes. The server must answer or hang up; a
		// generous deadline, since the limit is 1s.
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, err := io.ReadAll(conn)
		_ = conn.Close()
		if os.IsTimeout(err) {
			t.Errorf("%s: the connection is still open after %v", name, time.Since(start).Round(time.Millisecond))
		}
		if name == "slow body" && !strings.HasPrefix(string(b), "HTTP/1.1 408") {
			t.Errorf("slow body: answered %.100q, want 408", b)
		}
	}
	for i := range 11 {
		code, _ := hostGet(t, u, host, "ops", fmt.Sprint("guess", i))
		if want := map[bool]int{true: 429, false: 401}[i == 10]; code != want {
			t.Fatalf("login %d with a wrong password: %d, want %d", i+1, code, want)
		}
	}
	if log := stderr.String(); !strings.Contains(log, "failed basic auth") || !strings.Contains(log, "refusing a client") {
		t.Errorf("failed logins not logged on stderr:\n%s", log)
	}
}
