package dqweb_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // the tests with Redis down would fill the output
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// The fixture's queue "orders", as the tests expect to see it.
const (
	xssID      = `x"'><script>alert(1)</script>`
	xssPayload = `<script>alert(1)</script>`
	xssReason  = `<img src=x onerror=alert(2)>`
	oddQueue   = `we<ird>"q`
)

// fixture is a redis-server with queue "orders":
//   - in flight: charge:1, charge:2 (leased for 10 minutes, attempts 1);
//   - dead: mail:7 (JSON payload, nacked with reason "smtp 421"), xssID
//     (payload xssPayload, dead-lettered with reason xssReason) and blob:1
//     (600 bytes of binary, "bad format");
//   - scheduled: late:1..3 overdue by two minutes, soon:1..5 due in 10m30s,
//     later:1..2 in 45m30s, nextday in 25h;
//
// queue "emails" with one scheduled item, and queue oddQueue with one.
// The dashboard is mounted under /dq/ of srv.
type fixture struct {
	c    *redis.Client
	q    *redisq.Queue
	held []*redisq.Message
	srv  *httptest.Server
	base string // srv.URL + "/dq/"
}

var (
	inFlightIDs = []string{"charge:1", "charge:2"}
	deadIDs     = []string{"mail:7", xssID, "blob:1"}
	overdueIDs  = []string{"late:1", "late:2", "late:3"}
	soonIDs     = []string{"soon:1", "soon:2", "soon:3", "soon:4", "soon:5"}
	laterIDs    = []string{"later:1", "later:2"}
	binaryLoad  = func() []byte {
		b := make([]byte, 600)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}()
	fixtureCount = map[string]int64{"scheduled": 11, "due": 3, "inflight": 2, "dead": 3}
)

func newFixture(t testing.TB, opt dqweb.Options) *fixture {
	t.Helper()
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	q, err := redisq.New(ctx, c, "orders", redisq.WithMaxAttempts(1), redisq.WithVisibilityTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: c, q: q}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Due now, in this order, so that five Takes lease exactly these.
	now := []struct {
		id      string
		payload []byte
	}{
		{"charge:1", []byte(`{"order":1,"amount":"12.50"}`)},
		{"charge:2", []byte(`{"order":2,"amount":"7.00"}`)},
		{"mail:7", []byte(`{"to":"u7@example.com","order":7}`)},
		{xssID, []byte(xssPayload)},
		{"blob:1", binaryLoad},
	}
	for _, it := range now {
		_, err := q.EnqueueAfter(ctx, it.id, it.payload, 0)
		must(err)
	}
	for i := range now {
		m, err := q.Take(ctx)
		must(err)
		if m.ID != now[i].id {
			t.Fatalf("took %q, want %q", m.ID, now[i].id)
		}
		switch m.ID {
		case "mail:7":
			_, err = m.NackWith(ctx, redisq.NackReason("smtp 421"))
		case xssID:
			_, err = m.DeadLetter(ctx, xssReason)
		case "blob:1":
			_, err = m.DeadLetter(ctx, "bad format")
		default:
			f.held = append(f.held, m)
		}
		must(err)
	}
	for _, id := range overdueIDs {
		must(q.Enqueue(ctx, id, []byte(`{"late":true}`), time.Now().Add(-2*time.Minute)))
	}
	for _, id := range soonIDs {
		_, err := q.EnqueueAfter(ctx, id, []byte(`"soon"`), 10*time.Minute+30*time.Second)
		must(err)
	}
	for _, id := range laterIDs {
		_, err := q.EnqueueAfter(ctx, id, []byte(`"later"`), 45*time.Minute+30*time.Second)
		must(err)
	}
	_, err = q.EnqueueAfter(ctx, "nextday", nil, 25*time.Hour)
	must(err)
	for _, name := range []string{"emails", oddQueue} {
		other, err := redisq.New(ctx, c, name)
		must(err)
		_, err = other.EnqueueAfter(ctx, "one", []byte("hello"), time.Hour)
		must(err)
	}
	if opt.Prefix == "" {
		opt.Prefix = "/dq/"
	}
	prefix := strings.TrimSuffix(opt.Prefix, "/") + "/"
	mux := http.NewServeMux()
	mux.Handle(prefix, dqweb.Handler(c, opt))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	f.base = f.srv.URL + prefix
	return f
}

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

func (f *fixture) queueURL(name string) string {
	return f.base + "queue?" + url.Values{"q": {name}}.Encode()
}

// tabURL is the queue page's tab of state.
func (f *fixture) tabURL(name, state string) string {
	return f.base + "queue?" + url.Values{"q": {name}, "state": {state}}.Encode()
}

func (f *fixture) itemURL(name, id string) string {
	return f.base + "item?" + url.Values{"q": {name}, "id": {id}}.Encode()
}

// state returns the state of item id of "orders", or 0 if it is gone.
func (f *fixture) state(t testing.TB, id string) redisq.State {
	t.Helper()
	it, err := f.q.Get(context.Background(), id)
	if err == redisq.ErrNotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return it.State
}
