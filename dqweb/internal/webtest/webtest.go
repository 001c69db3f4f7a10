// Package webtest holds what the dashboard's tests share: the fixture (a
// redis-server with queues in every state, the dashboard mounted over
// HTTP), the hostile names, ids and reasons, and the helpers that add
// items, workers and registrations. The tests of package dqweb and the
// browser tests of the module dqweb/browser both import it.
package webtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// Main runs the tests of m, with go-redis's log silenced (the tests with
// Redis down would fill the output) and goleak's check that no goroutine
// outlives them: TestMain of each of the dashboard's test packages.
func Main(m *testing.M) {
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// The fixture's queue "orders", as the tests expect to see it.
const (
	XSSID      = `x"'><script>alert(1)</script>`
	XSSPayload = `<script>alert(1)</script>`
	XSSReason  = `<img src=x onerror=alert(2)>`
	OddQueue   = `we<ird>"q`
)

// Fixture is a redis-server with queue "orders":
//   - in flight: charge:1, charge:2 (leased for 10 minutes, attempts 1);
//   - dead: mail:7 (JSON payload, nacked with reason "smtp 421"), XSSID
//     (payload XSSPayload, dead-lettered with reason XSSReason) and blob:1
//     (600 bytes of binary, "bad format");
//   - scheduled: late:1..3 overdue by two minutes, soon:1..5 due in 10m30s,
//     later:1..2 in 45m30s, nextday in 25h;
//
// queue "emails" with one scheduled item, and queue OddQueue with one.
// The dashboard is mounted under /dq/ of Srv (or the Prefix of
// NewFixture's options).
type Fixture struct {
	C    *redis.Client
	Q    *redisq.Queue     // "orders"
	Held []*redisq.Message // charge:1 and charge:2, leased
	Srv  *httptest.Server
	Base string // Srv.URL + "/dq/" (or the Prefix)
}

// The ids of the fixture's "orders" by state, the payload of blob:1, and
// its counts as the dashboard shows them.
var (
	InFlightIDs = []string{"charge:1", "charge:2"}
	DeadIDs     = []string{"mail:7", XSSID, "blob:1"}
	OverdueIDs  = []string{"late:1", "late:2", "late:3"}
	SoonIDs     = []string{"soon:1", "soon:2", "soon:3", "soon:4", "soon:5"}
	LaterIDs    = []string{"later:1", "later:2"}
	BinaryLoad  = func() []byte {
		b := make([]byte, 600)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}()
	FixtureCount = map[string]int64{"scheduled": 11, "due": 3, "inflight": 2, "dead": 3}
)

// NewFixture starts the fixture's redis-server (stopped at the end of the
// test) and fills it; opt configures the dashboard.
func NewFixture(t testing.TB, opt dqweb.Options) *Fixture {
	t.Helper()
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	q, err := redisq.New(ctx, c, "orders", redisq.WithMaxAttempts(1), redisq.WithVisibilityTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	f := &Fixture{C: c, Q: q}
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
		{XSSID, []byte(XSSPayload)},
		{"blob:1", BinaryLoad},
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
		case XSSID:
			_, err = m.DeadLetter(ctx, XSSReason)
		case "blob:1":
			_, err = m.DeadLetter(ctx, "bad format")
		default:
			f.Held = append(f.Held, m)
		}
		must(err)
	}
	for _, id := range OverdueIDs {
		must(q.Enqueue(ctx, id, []byte(`{"late":true}`), time.Now().Add(-2*time.Minute)))
	}
	for _, id := range SoonIDs {
		_, err := q.EnqueueAfter(ctx, id, []byte(`"soon"`), 10*time.Minute+30*time.Second)
		must(err)
	}
	for _, id := range LaterIDs {
		_, err := q.EnqueueAfter(ctx, id, []byte(`"later"`), 45*time.Minute+30*time.Second)
		must(err)
	}
	_, err = q.EnqueueAfter(ctx, "nextday", nil, 25*time.Hour)
	must(err)
	for _, name := range []string{"emails", OddQueue} {
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
	f.Srv = httptest.NewServer(mux)
	t.Cleanup(f.Srv.Close)
	f.Base = f.Srv.URL + prefix
	return f
}

// QueueURL is the page of queue name.
func (f *Fixture) QueueURL(name string) string {
	return f.Base + "queue?" + url.Values{"q": {name}}.Encode()
}

// TabURL is the queue page's tab of state.
func (f *Fixture) TabURL(name, state string) string {
	return f.Base + "queue?" + url.Values{"q": {name}, "state": {state}}.Encode()
}

// ItemURL is the page of item id of queue name.
func (f *Fixture) ItemURL(name, id string) string {
	return f.Base + "item?" + url.Values{"q": {name}, "id": {id}}.Encode()
}

// State returns the state of item id of "orders", or 0 if it is gone.
func (f *Fixture) State(t testing.TB, id string) redisq.State {
	t.Helper()
	it, err := f.Q.Get(context.Background(), id)
	if err == redisq.ErrNotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return it.State
}

// what is shown, controls, invalid UTF-8, NUL, CR LF, glob characters,
// spaces HTML would collapse, a leading quote, and a 1 MiB name.
// Hostile names, ids and reasons: bidi overrides and marks that reorder
// what is shown, controls, invalid UTF-8, NUL, CR LF, glob characters,
// spaces HTML would collapse, a leading quote, and a 1 MiB name.
const (
	RTLQueue  = "rtl\u202egnp.exe"
	RTLShown  = `"rtl\u202egnp.exe"`
	RTLID     = "inv\u202ecod.exe"
	RTLReason = "paid\u202e\u2066 deifirev\u2069"
)

var (
	LongName      = strings.Repeat("L", 1<<20)
	HostileQueues = []string{RTLQueue, "ctl\x1b[31mred\x07", "bad\xffutf8", "glob*?[x]\\", "marks\u200e\u200f\u061c\u202a\u202b\u202c\u202d",
		"  spaced  ", `"quoted"`, "nul\x00q", "crlf\r\nq", LongName}
	HostileIDs = []string{RTLID, "nul\x00id", "crlf\r\nid", "bad\xfeid", "\u2067iso", "glob*", strings.Repeat("I", 1<<20)}
)

// RawRunes are what must never reach a page as themselves.
var RawRunes = regexp.MustCompile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

// HostileFixture is NewFixture (default options) with the hostile queues
// (one scheduled item each) and, in RTLQueue, an item of each hostile id,
// dead with reason RTLReason.
func HostileFixture(t testing.TB) *Fixture {
	t.Helper()
	f := NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	for _, name := range HostileQueues {
		q, err := redisq.New(ctx, f.C, name, redisq.WithMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.EnqueueAfter(ctx, "one", []byte("x"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if name != RTLQueue {
			continue
		}
		for _, id := range HostileIDs {
			if err := q.Enqueue(ctx, id, []byte("payload of "+id[:min(len(id), 20)]), time.Unix(1, 0)); err != nil {
				t.Fatal(err)
			}
		}
		ms, err := q.TakeBatch(ctx, len(HostileIDs))
		if err != nil || len(ms) != len(HostileIDs) {
			t.Fatalf("took %d: %v", len(ms), err)
		}
		for _, m := range ms {
			if _, err := m.DeadLetter(ctx, RTLReason); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f
}

// HostileReasons are hostile causes of death: a bidi override, a control sequence, invalid
// UTF-8 with a newline.
var HostileReasons = []string{RTLReason, "ctl\x1b[31mred\x07", "bad\xffutf8\nline"}

// DieOf makes dead items of f's "orders", one per id, dead-lettered with
// reason.
func DieOf(t testing.TB, f *Fixture, reason string, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		if err := f.Q.Enqueue(ctx, id, []byte("x"), time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for range ids {
		m, err := f.Q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.DeadLetter(ctx, reason); err != nil {
			t.Fatal(err)
		}
	}
}

// SickQueues adds to f: "alpha" with 4 items overdue by 5 minutes, "zeta"
// with 5 dead items. It returns when alpha's items were enqueued, for
// AlphaOverdue.
func SickQueues(t testing.TB, f *Fixture) time.Time {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	alpha, err := redisq.New(ctx, f.C, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := alpha.Enqueue(ctx, fmt.Sprint("a", i), nil, time.Now().Add(-5*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	zeta, err := redisq.New(ctx, f.C, "zeta", redisq.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := zeta.EnqueueAfter(ctx, fmt.Sprint("z", i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		m, err := zeta.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.DeadLetter(ctx, "broken"); err != nil {
			t.Fatal(err)
		}
	}
	return start
}

// Hostile registration names: a bidi override, an invalid byte with a
// newline, and markup.
const (
	RTLReg = "rtl\u202egnp"
	BadReg = "bad\xffname\n"
	XSSReg = `r"'><script>alert(3)</script>`
)

// RegisterAll adds to the fixture's "orders": "hourly" and "taken", whose
// next occurrences are hours behind (their first in the past, no process
// keeps them), the item of taken's cancelled; "daily" (catch-up 2,
// version 7, a 5-byte payload), not yet due; the hostile names; "mars",
// whose stored spec this process cannot compute; and "over", ended. It
// returns them as read back, by name.
func RegisterAll(t testing.TB, f *Fixture) map[string]redisq.Registration {
	t.Helper()
	ctx := context.Background()
	past := redisq.FirstAt(time.Now().Truncate(time.Hour).Add(-3 * time.Hour))
	hour := redisq.Every(time.Hour)
	for _, r := range []struct {
		name    string
		s       redisq.Schedule
		payload string
		opts    []redisq.RegisterOption
	}{
		{"hourly", hour, "", []redisq.RegisterOption{past}},
		{"taken", hour, "", []redisq.RegisterOption{past}},
		{"daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), "hello", []redisq.RegisterOption{redisq.CatchUp(2), redisq.RegistrationVersion(7)}},
		{RTLReg, hour, "", nil},
		{BadReg, hour, "", nil},
		{XSSReg, hour, "", nil},
		{"mars", hour, "", []redisq.RegisterOption{past}},
		{"over", hour, "", []redisq.RegisterOption{past}},
	} {
		if _, err := f.Q.Register(ctx, r.name, r.s, []byte(r.payload), r.opts...); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string][]string{"mars": {"s", "CRON_TZ=Mars/Olympus 0 9 * * *"}, "over": {"end", "1"}} {
		if err := f.C.HSet(ctx, "{dq:orders}:rec:"+k, v[0], v[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	regs, err := f.Q.Registrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]redisq.Registration{}
	for _, g := range regs {
		byName[g.Name] = g
	}
	if _, err := f.Q.Cancel(ctx, byName["taken"].EnqueuedID); err != nil {
		t.Fatal(err)
	}
	return byName
}

// ScheduledOrder is the ids of the scheduled items of q in due order.
func ScheduledOrder(t testing.TB, q *redisq.Queue) []string {
	t.Helper()
	p, err := q.List(context.Background(), redisq.StateScheduled, redisq.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range p.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// HostileWorker is a worker name with a bidi override, an escape and an
// invalid byte.
const HostileWorker = "wk\u202eevil\x1b\xff"

// StartWorker runs a Worker of q named name, of concurrency handlers that
// block until stop (or the end of the test), beating every second (its
// heartbeat lives three), and returns once its heartbeat lists running
// handlers. stop shuts it down: it takes nothing more, leaves the list at
// once, and its handlers' messages are released (due again as they were).
// Releasing rather than acking keeps stop exact: a handler that returned
// before the worker stopped taking would let it claim one more item.
func StartWorker(t testing.TB, q *redisq.Queue, name string, concurrency, running int) (w redisq.WorkerInfo, stop func()) {
	t.Helper()
	ctx := context.Background()
	wk := redisq.NewWorker(q, func(ctx context.Context, m *redisq.Message) error {
		<-ctx.Done()
		return ctx.Err()
	}, redisq.WorkerOptions{Concurrency: concurrency, Heartbeat: time.Second, Name: name, NoRecurring: true})
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			// A context already done: Shutdown ends taking, then stops
			// the handlers and releases their messages.
			sctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := wk.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("worker shutdown: %v", err)
			}
			if err := <-done; err != nil {
				t.Errorf("worker run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ws, err := q.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ws {
			if x.Name == name && x.Running == running && len(x.Leases) == running {
				return x, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %q not listed with %d running handlers in 10s: %+v", name, running, ws)
		}
	}
}

// fillScript stores n scheduled items item:FROM.. in queue KEYS (sched,
// seq) as the enqueue script does, due spread over [now-1m,
// now-1m+spread): a fast way to a large queue for the benchmarks. Its
// result is checked by dqweb's TestFillIsAQueue with redisq's Audit.
var fillScript = redis.NewScript(`
local pre, from, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now, spread = tonumber(ARGV[4]), tonumber(ARGV[5])
local seq = redis.call('HINCRBY', KEYS[2], 'n', n) - n
if seq == 0 then redis.call('HSET', KEYS[2], 's0', 0) end
for i = 0, n - 1 do
  local k = from + i
  local id = 'item:' .. k
  local mem = string.format('%016.0f', seq + i + 1) .. ':' .. id
  local due = now - 60000 + (k * 7919) % spread
  redis.call('HSET', pre .. ':m:' .. id, 'p', '{"n":' .. k .. '}', 'due', due, 'att', 0, 'st', 's', 'mem', mem, 'enq', now)
  redis.call('ZADD', KEYS[1], due, mem)
end
return n
`)

// Fill adds n items to queue name, 10,000 per script call, pipelined.
func Fill(tb testing.TB, c *redis.Client, name string, n int) {
	tb.Helper()
	ctx := context.Background()
	p := "{dq:" + name + "}"
	keys := []string{p + ":sched", p + ":seq"}
	now := time.Now().UnixMilli()
	if err := fillScript.Load(ctx, c).Err(); err != nil {
		tb.Fatal(err)
	}
	const batch = 10_000
	for from := 0; from < n; from += 10 * batch {
		_, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for f := from; f < min(n, from+10*batch); f += batch {
				fillScript.EvalSha(ctx, pipe, keys, p, f, min(batch, n-f), now, int64(2*time.Hour/time.Millisecond))
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// DeadAgain makes a new dead item id in f's queue "orders" (due long ago,
// so that Take leases it first).
func DeadAgain(t testing.TB, f *Fixture, id string) {
	t.Helper()
	ctx := context.Background()
	if err := f.Q.Enqueue(ctx, id, []byte("x"), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	m, err := f.Q.Take(ctx)
	if err != nil || m.ID != id {
		t.Fatalf("took %v %v, want %s", m, err, id)
	}
	if _, err := m.DeadLetter(ctx, "again"); err != nil {
		t.Fatal(err)
	}
}

// AlphaOverdue checks what a page shows as alpha's oldest overdue (see
// SickQueues, which returned enqueued): 5 minutes, and at most what has
// passed since, as the page rounds it (to 10 s), however slow the machine.
func AlphaOverdue(t testing.TB, shown string, enqueued time.Time) {
	t.Helper()
	d, err := time.ParseDuration(shown)
	lo, hi := 5*time.Minute-10*time.Second, 5*time.Minute+time.Since(enqueued)+10*time.Second
	if err != nil || d < lo || d > hi {
		t.Errorf("alpha's oldest overdue shown as %q, want a duration in [%v, %v]", shown, lo, hi)
	}
}
