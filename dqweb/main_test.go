package dqweb_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
)

func TestMain(m *testing.M) { webtest.Main(m) }

// client is an HTTP client with a cookie jar (for the CSRF cookie) that
// does not follow redirects.
func client(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t testing.TB, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

func get(t testing.TB, c *http.Client, u string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, c, req)
}

// post sends form as a same-origin browser form submission would, and
// follows the redirect to an action's result page as a browser does.
func post(t testing.TB, c *http.Client, u string, form url.Values) response {
	t.Helper()
	r := postOnly(t, c, u, form)
	if loc := r.header.Get("Location"); r.status == http.StatusSeeOther && strings.Contains(loc, "/result?") {
		next, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		next, err = next.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		return get(t, c, next.String())
	}
	return r
}

// postOnly is post without following the redirect.
func postOnly(t testing.TB, c *http.Client, u string, form url.Values) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return do(t, c, req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token loads page with c and returns the CSRF token of its forms.
func token(t testing.TB, c *http.Client, page string) string {
	t.Helper()
	r := get(t, c, page)
	m := csrfField.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("no CSRF token on %s (status %d)", page, r.status)
	}
	return m[1]
}
