package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
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
