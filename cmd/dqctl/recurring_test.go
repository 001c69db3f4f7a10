package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// evilReg is a registration name with an escape sequence, a C1 control,
// a bidi override and an invalid byte.
const evilReg = "ev\x1b]0;x\a\u009b\u202eil\xff"

// registrations adds to the fixture's queue: "hourly", whose next
// occurrence is hours behind (FirstAt in the past, no process keeps it);
// "daily" (catch-up 2, version 7, a 5-byte payload), not yet due; evilReg;
// "mars", whose stored spec this process cannot compute (as a later
// version or a missing zone would leave it); and "over", ended.
func (f *fixture) registrations(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	past := time.Now().Truncate(time.Hour).Add(-3 * time.Hour)
	for _, r := range []struct {
		name    string
		s       redisq.Schedule
		payload string
		opts    []redisq.RegisterOption
	}{
		{"hourly", redisq.Every(time.Hour), "", []redisq.RegisterOption{redisq.FirstAt(past)}},
		{"daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), "hello", []redisq.RegisterOption{redisq.CatchUp(2), redisq.RegistrationVersion(7)}},
		{evilReg, redisq.Every(time.Hour), "", nil},
		{"mars", redisq.Every(time.Hour), "", []redisq.RegisterOption{redisq.FirstAt(past)}},
		{"over", redisq.Every(time.Hour), "", []redisq.RegisterOption{redisq.FirstAt(past)}},
	} {
		if _, err := f.q.Register(ctx, r.name, r.s, []byte(r.payload), r.opts...); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.c.HSet(ctx, "{dq:orders}:rec:mars", "s", "CRON_TZ=Mars/Olympus 0 9 * * *").Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.c.HSet(ctx, "{dq:orders}:rec:over", "end", "1").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRecurring: recurring lists the registrations with their schedule,
// next and last occurrence, catch-up, version, payload size and update
// time; one no process keeps is behind, one whose spec cannot be computed
// here or that ended says so; names and specs are escaped as ids are.
func TestRecurring(t *testing.T) {
	f := newFixture(t, "orders")
	f.neighbour(t)
	a := []string{"-redis", f.addr}
	dqctl(t, "", append(a, "recurring", "orders")...).want(t, exitOK, `no recurring registrations in queue "orders" (dqctl register adds one)`)
	dqctl(t, "", append(a, "recurring", "nosuch")...).want(t, exitNotFound, `no queue named "nosuch"`)
	f.registrations(t)

	r := dqctl(t, "", append(a, "recurring", "orders")...)
	r.want(t, exitOK, "NAME", "SCHEDULE", "NEXT", "LAST", "SEEN", "CATCHUP", "POLICY", "SKIPPED", "VERSION", "PAYLOAD", "UPDATED",
		"5 registrations in queue \"orders\"; 1 behind: no process keeps them")
	lines := map[string]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		name, _, _ := strings.Cut(l, " ")
		lines[name] = l
	}
	// Times are relative with the absolute one beside them (UTC; the date
	// when it is not today's); SEEN is when live code last registered it.
	abs := `(\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\dZ`
	for name, want := range map[string]*regexp.Regexp{
		"hourly":                           regexp.MustCompile(`^hourly +"every 1h0m0s" +behind: no process keeps it \(due [23]h\d+m\d+s ago, ` + abs + `\) +[34]h\d+m\d+s ago \(` + abs + `\) +\S+ ago +0 +- +0 +0 +0 +\S+ ago$`),
		"daily":                            regexp.MustCompile(`^daily +"every 24h0m0s, phase 9h0m0s" +in \S+ \(` + abs + `\) +- +\S+ ago +2 +- +0 +7 +5 +\S+ ago$`),
		`"ev\x1b]0;x\a\u009b\u202eil\xff"`: regexp.MustCompile(`^"ev\\x1b\]0;x\\a\\u009b\\u202eil\\xff" +"every 1h0m0s" +in \S+ \(` + abs + `\) +- `),
		"mars":                             regexp.MustCompile(`^mars +"CRON_TZ=Mars/Olympus 0 9 \* \* \*" +cannot compute here: redisq: cron spec "CRON_TZ=Mars/Olympus 0 9 \* \* \*": unknown time zone Mars/Olympus +[34]h`),
		"over":                             regexp.MustCompile(`^over +"every 1h0m0s" +ended +[34]h`),
	} {
		if !want.MatchString(lines[name]) {
			t.Errorf("row of %s: %q, want %v\n%s", name, lines[name], want, r.stdout)
		}
	}
	if i, j := strings.Index(r.stdout, "daily "), strings.Index(r.stdout, "hourly "); i < 0 || j < i {
		t.Errorf("not sorted by name:\n%s", r.stdout)
	}

	var out struct {
		Now           time.Time
		Registrations []struct {
			Name, Spec    string
			SpecError     string `json:"spec_error"`
			CatchUp       int    `json:"catch_up"`
			Version       int64
			EnqueuedID    string `json:"enqueued_id"`
			Last, Next    *time.Time
			Ended, Behind bool
			PayloadSize   int64 `json:"payload_size"`
		}
	}
	r = dqctl(t, "", append(a, "recurring", "orders", "-json")...)
	r.want(t, exitOK, `\u001b]0;x\u0007\u009b\u202eil\ufffd`)
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Registrations) != 5 || out.Now.IsZero() {
		t.Fatalf("recurring -json: %v %+v\n%s", err, out, r.stdout)
	}
	byName := map[string]int{}
	for i, g := range out.Registrations {
		byName[g.Name] = i
	}
	h, d := out.Registrations[byName["hourly"]], out.Registrations[byName["daily"]]
	m, o := out.Registrations[byName["mars"]], out.Registrations[byName["over"]]
	switch {
	case !h.Behind || h.Next == nil || !h.Next.Before(out.Now) || h.Last == nil || h.Ended:
		t.Errorf("hourly: %+v", h)
	case d.Behind || d.Next == nil || !d.Next.After(out.Now) || d.Last != nil || d.CatchUp != 2 || d.Version != 7 || d.PayloadSize != 5 ||
		d.Spec != "every 24h0m0s, phase 9h0m0s" || !strings.HasPrefix(d.EnqueuedID, "rec:daily@"):
		t.Errorf("daily: %+v", d)
	case m.Next != nil || !strings.Contains(m.SpecError, "unknown time zone Mars/Olympus") || m.Behind:
		t.Errorf("mars: %+v", m)
	case !o.Ended || o.Next != nil || o.Behind:
		t.Errorf("over: %+v", o)
	}
	if _, ok := byName["ev\x1b]0;x\a\u009b\u202eil\ufffd"]; !ok {
		t.Errorf("the hostile name is not the same JSON string once escaped: %v", byName)
	}
	// The neighbour "orders:eu" has none; its name extends "orders".
	dqctl(t, "", append(a, "recurring", "orders:eu")...).want(t, exitOK, "no recurring registrations")
}

// TestRegister: register makes or replaces a registration from a spec
// and says what it did; a bad spec, flag or name is a usage error that
// changes nothing; a stale version and an unknown queue exit 3.
func TestRegister(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	get := func(name string) redisq.Registration {
		t.Helper()
		g, err := f.q.Registration(ctx, name)
		if err != nil {
			t.Fatalf("registration %q: %v", name, err)
		}
		return g
	}

	// Flags after the arguments, as for every command.
	r := dqctl(t, "", append(a, "register", "orders", "sweep", "every 5m", "-payload", `{"task":"sweep"}`, "-catch-up", "3", "-version", "2")...)
	r.want(t, exitOK, `created registration "sweep" of queue "orders": every 5m0s; enqueued "rec:sweep@`, "due in ",
		"dqctl does not keep it going: a Worker (or Queue.KeepRecurring)")
	g := get("sweep")
	if g.Spec != "every 5m0s" || string(g.Payload) != `{"task":"sweep"}` || g.CatchUp != 3 || g.Version != 2 || g.Next.IsZero() {
		t.Fatalf("registered: %+v", g)
	}
	if _, err := f.q.Get(ctx, g.EnqueuedID); err != nil {
		t.Fatalf("its first occurrence %q: %v", g.EnqueuedID, err)
	}
	dqctl(t, "", append(a, "register", "-payload", `{"task":"sweep"}`, "-catch-up", "3", "-version", "2", "orders", "sweep", "every 5m")...).
		want(t, exitOK, `registration "sweep" of queue "orders" already has this schedule, payload, catch-up and policy; nothing changed`)
	r = dqctl(t, "", append(a, "register", "orders", "sweep", "every 5m", "-version", "1")...)
	r.want(t, exitNotFound, `registration "sweep" of queue "orders" has version 2 stored, over -version 1; nothing changed (give -version 2 or more to replace it)`)
	if g := get("sweep"); g.Spec != "every 5m0s" || g.CatchUp != 3 {
		t.Fatalf("a stale register changed it: %+v", g)
	}

	// -payload-file, from a file and from stdin; -first-at.
	file := filepath.Join(t.TempDir(), "p.bin")
	if err := os.WriteFile(file, []byte{0, 1, 0xff}, 0o600); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "register", "orders", "sweep", "CRON_TZ=Europe/Paris 0 9 * * *", "-payload-file", file, "-version", "2")...).
		want(t, exitOK, `updated registration "sweep" of queue "orders": CRON_TZ=Europe/Paris 0 9 * * *; enqueued "rec:sweep@`)
	if g := get("sweep"); g.Spec != "CRON_TZ=Europe/Paris 0 9 * * *" || string(g.Payload) != "\x00\x01\xff" || g.CatchUp != 0 {
		t.Fatalf("updated: %+v", g)
	}
	first := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	dqctl(t, "from stdin", append(a, "register", "orders", "later", "every 1h", "-payload-file", "-", "-first-at", first.Format(time.RFC3339))...).
		want(t, exitOK, `enqueued "rec:later@2030-01-02T03:04:05Z", due in `, "(2030-01-02 03:04:05.000 UTC)")
	if g := get("later"); string(g.Payload) != "from stdin" || !g.Enqueued.Equal(first) {
		t.Fatalf("later: %+v", g)
	}
	// A name that starts with "-" goes after "--".
	dqctl(t, "", append(a, "register", "orders", "--", "-dash", "every 1h")...).want(t, exitOK, `created registration "-dash"`)

	// Usage errors change nothing.
	before, err := f.q.Registrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"orders", "x", "every 5 minutes"}, `redisq: schedule "every 5 minutes": time: unknown unit`},
		{[]string{"orders", "x", "CRON_TZ=Mars/Olympus 0 9 * * *"}, `redisq: cron spec "CRON_TZ=Mars/Olympus 0 9 * * *": unknown time zone`},
		{[]string{"orders", "x", "0 0 30 2 *"}, `schedule "0 0 30 2 *" has no occurrence after now`},
		{[]string{"orders", "x", "every 1h", "-catch-up", "101"}, "-catch-up must be in 0..100"},
		{[]string{"orders", "x", "every 1h", "-version", "-1"}, "-version must be in 0..9007199254740991"},
		{[]string{"orders", "x", "every 1h", "-version", "9007199254740992"}, "-version must be in 0..9007199254740991"},
		{[]string{"orders", "x", "every 1h", "-first-at", "tomorrow"}, `-first-at "tomorrow" is not an RFC 3339 time`},
		{[]string{"orders", "x", "every 1h", "-payload", "", "-payload-file", file}, "give -payload or -payload-file, not both"},
		{[]string{"orders", "x", "every 1h", "-payload-file", filepath.Join(t.TempDir(), "none")}, "-payload-file: open"},
		{[]string{"orders", "", "every 1h"}, "empty registration name"},
		{[]string{"orders", strings.Repeat("n", 257), "every 1h"}, "registration name of 257 bytes, over 256"},
		{[]string{"orders", "x"}, "wrong number of arguments"},
	} {
		dqctl(t, "", append(append(a, "register"), c.args...)...).want(t, exitUsage, c.says, "usage: dqctl register [-catch-up n]")
	}
	if after, err := f.q.Registrations(ctx); err != nil || len(after) != len(before) {
		t.Fatalf("a refused register changed the registrations: %d, then %d (%v)", len(before), len(after), err)
	}

	// An unknown queue is a likely typo; -create makes it.
	dqctl(t, "", append(a, "register", "order", "x", "every 1h")...).
		want(t, exitNotFound, `no queue named "order" on `, "nothing changed", "-create registers in a queue with no data yet")
	if r := dqctl(t, "", append(a, "queues")...); strings.Contains(r.stdout, "order ") {
		t.Fatalf("a refused register made the queue:\n%s", r.stdout)
	}
	dqctl(t, "", append(a, "register", "-create", "fresh", "x", "every 1h")...).want(t, exitOK, `created registration "x" of queue "fresh"`)
	dqctl(t, "", append(a, "queues")...).want(t, exitOK, "fresh ")
	dqctl(t, "", append(a, "recurring", "fresh")...).want(t, exitOK, "x     \"every 1h0m0s\"")
}

// TestUnregister: unregister asks, then removes the registration and
// cancels its scheduled occurrence; an unknown name exits 3.
func TestUnregister(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	f.registrations(t)
	g, err := f.q.Registration(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	dqctl(t, "n\n", append(a, "unregister", "orders", "daily")...).
		want(t, exitAborted, `unregister "daily" (every 24h0m0s, phase 9h0m0s) of queue "orders"? No occurrence of it is enqueued any more`, "aborted; nothing changed")
	dqctl(t, "", append(a, "unregister", "orders", "daily")...).want(t, exitAborted) // EOF: no
	if _, err := f.q.Registration(ctx, "daily"); err != nil {
		t.Fatalf("an aborted unregister removed it: %v", err)
	}
	dqctl(t, "y\n", append(a, "unregister", "orders", "daily")...).
		want(t, exitOK, `unregistered "daily" of queue "orders"; cancelled its scheduled occurrence`)
	if _, err := f.q.Registration(ctx, "daily"); err != redisq.ErrNotFound {
		t.Fatalf("still registered: %v", err)
	}
	if _, err := f.q.Get(ctx, g.EnqueuedID); err != redisq.ErrNotFound {
		t.Fatalf("its occurrence %q is still there: %v", g.EnqueuedID, err)
	}
	dqctl(t, "", append(a, "unregister", "-yes", "orders", "daily")...).
		want(t, exitNotFound, `no registration "daily" in queue "orders"; nothing changed (dqctl recurring lists them)`)
	dqctl(t, "", append(a, "unregister", "orders", evilReg, "-yes")...).want(t, exitOK, `unregistered "ev\x1b]0;x\a\u009b\u202eil\xff"`)
	// hourly's occurrence came and is still scheduled (nobody took it):
	// it is cancelled too. Taken, it runs to its end.
	m, err := f.q.Take(ctx)
	if err != nil || !strings.HasPrefix(m.ID, "rec:") {
		t.Fatalf("took %v %v", m, err)
	}
	name, _, _ := redisq.Occurrence(m.ID)
	dqctl(t, "", append(a, "unregister", "-yes", "orders", name)...).
		want(t, exitOK, `unregistered "`+name+`" of queue "orders"; no occurrence of it was scheduled (one taken runs to its end)`)
	dqctl(t, "", append(a, "unregister", "-yes", "nosuch", "daily")...).want(t, exitNotFound, `no queue named "nosuch"`, "nothing changed")
	dqctl(t, "", append(a, "unregister", "-yes", "orders", "")...).want(t, exitUsage, "empty registration name")
	r := dqctl(t, "", append(a, "recurring", "orders")...)
	r.want(t, exitOK, "2 registrations")
}

// TestRecurringHelp: help lists the three commands with their flags and
// arguments, and says that dqctl does not keep a registration going.
func TestRecurringHelp(t *testing.T) {
	dqctl(t, "", "help").want(t, exitOK, "  recurring [-json] QUEUE\n",
		"  register [-catch-up n] [-catch-up-window d] [-create] [-first-at time]\n        [-overlap policy] [-payload text] [-payload-file file]\n        [-version version] QUEUE NAME SCHEDULE\n",
		"  unregister [-yes] QUEUE NAME\n", "dqctl does not keep it going")
	dqctl(t, "", "help", "register").want(t, exitOK, "Usage: dqctl register", "dqctl does not keep it going: a Worker (or Queue.KeepRecurring)",
		"-first-at time", "-payload-file file")
}

// TestServeMetricsRecurring: serve-metrics serves the recurring metrics,
// of every queue on the server or of the queues given; a registration
// whose schedule it cannot compute is a scrape error.
func TestServeMetricsRecurring(t *testing.T) {
	f := newFixture(t, "orders")
	f.neighbour(t)
	f.registrations(t)
	for _, args := range [][]string{{}, {"orders", "orders:eu"}} {
		u, stop := serving(t, append([]string{"-redis", f.addr, "serve-metrics", "-listen", "127.0.0.1:0"}, args...)...)
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for _, m := range []string{`redisq_recurring_registrations{queue="orders"} 5`, `redisq_recurring_registrations{queue="orders:eu"} 0`,
			`redisq_recurring_next_occurrence_timestamp_seconds{name="hourly",queue="orders"} `,
			`redisq_recurring_last_occurrence_timestamp_seconds{name="hourly",queue="orders"} `,
			`redisq_recurring_next_occurrence_timestamp_seconds{name="ev\\x1b]0;x\\x07\\u009b\\u202eil\\xff",queue="orders"} `,
			`redisq_up{queue="orders"} 1`} {
			if !strings.Contains(string(body), m) {
				t.Errorf("%v: metrics lack %s:\n%s", args, m, body)
			}
		}
		// The one scrape error is "mars", whose schedule cannot be computed
		// here (issue 24, item 2: it was silent, so no alert fired).
		if n := strings.Count(string(body), "redisq_recurring_scrape_error{"); n != 1 ||
			!strings.Contains(string(body), `redisq_recurring_scrape_error{error="registration \"mars\": schedule \"CRON_TZ=Mars/Olympus 0 9 * * *\" cannot be computed`) ||
			strings.Contains(string(body), `next_occurrence_timestamp_seconds{name="mars"`) ||
			strings.Contains(string(body), `next_occurrence_timestamp_seconds{name="over"`) {
			t.Errorf("%v: a scrape error other than mars's, or a next occurrence of a registration that has none:\n%s", args, body)
		}
		if code := stop(); code != exitOK {
			t.Fatalf("serve-metrics exited %d", code)
		}
	}
}

// TestRecurringOrphaned (issue 24, item 3): recurring shows when live code
// last registered each registration, marks those none has within
// redisq.OrphanAfter as orphaned, counts them with what to do, and -json
// has seen and orphaned; a Register by live code clears it.
func TestRecurringOrphaned(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	f.registrations(t)
	// hourly was last registered 10 minutes ago, daily never by this
	// version (as a registration from before it).
	old := time.Now().Add(-10 * time.Minute).UnixMilli()
	if err := f.c.HSet(ctx, "{dq:orders}:rec:hourly", "sn", old).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.c.HDel(ctx, "{dq:orders}:rec:daily", "sn").Err(); err != nil {
		t.Fatal(err)
	}
	r := dqctl(t, "", append(a, "recurring", "orders")...)
	r.want(t, exitOK, "; 2 orphaned: no live code has registered them for 3m0s (their Register call was removed, their processes stopped or run no Worker, "+
		"or dqctl register made them); any keeper still enqueues their occurrences: once their code is gone, dqctl unregister orders NAME removes them\n")
	for name, want := range map[string]string{"hourly": `  orphaned \(seen 10m\ds ago\) +0 `, "daily": `  orphaned \(never seen\) +2 `, "mars": `  \S+ ago +0 `} {
		row := ""
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, name+" ") {
				row = l
			}
		}
		if !regexp.MustCompile(want).MatchString(row) {
			t.Errorf("row of %s: %q, want %s", name, row, want)
		}
	}
	var out struct {
		Now           time.Time
		Registrations []struct {
			Name     string
			Seen     *time.Time
			Orphaned bool
		}
	}
	r = dqctl(t, "", append(a, "recurring", "orders", "-json")...)
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err, r.stdout)
	}
	for _, g := range out.Registrations {
		switch g.Name {
		case "hourly":
			if !g.Orphaned || g.Seen == nil || g.Seen.UnixMilli() != old {
				t.Errorf("hourly: orphaned %v, seen %v, want %v", g.Orphaned, g.Seen, time.UnixMilli(old))
			}
		case "daily":
			if !g.Orphaned || g.Seen != nil {
				t.Errorf("daily: orphaned %v, seen %v", g.Orphaned, g.Seen)
			}
		default:
			if g.Orphaned || g.Seen == nil || out.Now.Sub(*g.Seen) > time.Minute {
				t.Errorf("%s: orphaned %v, seen %v", g.Name, g.Orphaned, g.Seen)
			}
		}
	}
	// Live code registers daily again (a process starting).
	if _, err := f.q.Register(ctx, "daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), []byte("hello"), redisq.CatchUp(2), redisq.RegistrationVersion(7)); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "recurring", "orders")...).want(t, exitOK, "; 1 orphaned: ")
}

// TestPauseResumeRecurring: pause-recurring cancels the scheduled
// occurrence and recurring shows the registration paused; a second pause
// says so; resume-recurring enqueues the next occurrence; an unknown name
// exits 3.
func TestPauseResumeRecurring(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	f.registrations(t)
	g, err := f.q.Registration(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "pause-recurring", "orders", "daily")...).
		want(t, exitOK, `paused "daily" of queue "orders"; cancelled its scheduled occurrence (not yet due)`)
	if _, err := f.q.Get(ctx, g.EnqueuedID); err != redisq.ErrNotFound {
		t.Fatalf("its occurrence %q is still there: %v", g.EnqueuedID, err)
	}
	dqctl(t, "", append(a, "recurring", "orders")...).want(t, exitOK, "paused ", "(dqctl resume-recurring)")
	dqctl(t, "", append(a, "pause-recurring", "orders", "daily")...).want(t, exitOK, "or it was paused already")
	dqctl(t, "", append(a, "resume-recurring", "orders", "daily")...).
		want(t, exitOK, `resumed "daily" of queue "orders": its next occurrence after now is enqueued`)
	g2, err := f.q.Registration(ctx, "daily")
	if err != nil || !g2.Paused.IsZero() || g2.Next.IsZero() {
		t.Fatalf("after resume: %+v %v", g2, err)
	}
	if _, err := f.q.Get(ctx, g2.EnqueuedID); err != nil {
		t.Fatalf("the resumed occurrence %q: %v", g2.EnqueuedID, err)
	}
	dqctl(t, "", append(a, "resume-recurring", "orders", "daily")...).want(t, exitOK, `"daily" of queue "orders" is not paused; nothing changed`)
	dqctl(t, "", append(a, "pause-recurring", "orders", "nope")...).want(t, exitNotFound, `no registration "nope" in queue "orders"; nothing changed`)
}

// TestRegisterPolicies: register takes -overlap and -catch-up-window,
// recurring shows them with the occurrences they skipped, and a bad
// value is a usage error.
func TestRegisterPolicies(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	dqctl(t, "", append(a, "register", "orders", "sync", "every 1h0m0s", "-overlap", "sometimes")...).
		want(t, exitUsage, `-overlap "sometimes": want allow or skip`)
	dqctl(t, "", append(a, "register", "orders", "sync", "every 1h0m0s", "-overlap", "skip", "-catch-up-window", "10m")...).
		want(t, exitOK, `created registration "sync" of queue "orders": every 1h0m0s`)
	g, err := f.q.Registration(ctx, "sync")
	if err != nil || g.Overlap != redisq.OverlapSkip || g.CatchUpWindow != 10*time.Minute || g.CatchUp != redisq.MaxCatchUp {
		t.Fatalf("stored: %+v %v", g, err)
	}
	dqctl(t, "", append(a, "register", "orders", "sync", "every 1h0m0s", "-overlap", "skip", "-catch-up-window", "10m")...).
		want(t, exitOK, "already has this schedule, payload, catch-up and policy; nothing changed")
	dqctl(t, "", append(a, "register", "orders", "sync", "every 1h0m0s", "-overlap", "skip", "-catch-up-window", "10m", "-catch-up", "0")...).
		want(t, exitOK, `updated registration "sync"`)
	if g, err = f.q.Registration(ctx, "sync"); err != nil || g.CatchUp != 0 {
		t.Fatalf("-catch-up 0 with a window: %+v %v", g, err)
	}
	// A skip, as the claim records it.
	if err := f.c.HSet(ctx, "{dq:orders}:rec:sync", "sk", 2, "ls", "rec:sync@x", "lw", "late").Err(); err != nil {
		t.Fatal(err)
	}
	r := dqctl(t, "", append(a, "recurring", "orders")...)
	r.want(t, exitOK, "skip overlap, window 10m0s", "2 (last late)")
	r = dqctl(t, "", append(a, "recurring", "orders", "-json")...)
	r.want(t, exitOK, `"overlap": "skip"`, `"catch_up_window": "10m0s"`, `"skipped": 2`, `"last_skip_reason": "late"`)
	// Issue 41, item 9: a reason stored by anyone else is escaped like
	// every other field (dqctl checks the output holds no raw control or
	// bidi character), in the table and in the JSON.
	if err := f.c.HSet(ctx, "{dq:orders}:rec:sync", "lw", "la\u202ete\x1b[2J\xff").Err(); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "recurring", "orders")...).want(t, exitOK, `2 (last "la\u202ete\x1b[2J\xff")`)
	dqctl(t, "", append(a, "recurring", "orders", "-json")...).want(t, exitOK, `"last_skip_reason": "la\u202ete\u001b[2J\ufffd"`)
}

// TestBackfill: backfill enqueues the past occurrences of a range, due
// now, and says how many; called again it leaves them; bad times are
// usage errors and an unknown registration exits 3.
func TestBackfill(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	if _, err := f.q.Register(ctx, "hourly", redisq.Every(time.Hour), []byte("h")); err != nil {
		t.Fatal(err)
	}
	g, err := f.q.Registration(ctx, "hourly")
	if err != nil {
		t.Fatal(err)
	}
	from, to := g.Enqueued.Add(-210*time.Minute).Format(time.RFC3339), g.Enqueued.Add(time.Hour).Format(time.RFC3339)
	dqctl(t, "", append(a, "backfill", "orders", "hourly", from, to)...).
		want(t, exitOK, `backfilled registration "hourly" of queue "orders": 3 occurrences enqueued, due now`)
	for i := 1; i <= 3; i++ {
		id := redisq.OccurrenceID("hourly", g.Enqueued.Add(-time.Duration(i)*time.Hour))
		if it, err := f.q.Get(ctx, id); err != nil || it.State != redisq.StateScheduled || string(it.Payload) != "h" {
			t.Fatalf("%s: %+v %v", id, it, err)
		}
	}
	dqctl(t, "", append(a, "backfill", "orders", "hourly", from, to)...).want(t, exitOK, "0 occurrences enqueued", "3 left as they are")
	dqctl(t, "", append(a, "backfill", "orders", "hourly", to, from)...).want(t, exitUsage, "is not before TO")
	dqctl(t, "", append(a, "backfill", "orders", "hourly", "yesterday", to)...).want(t, exitUsage, `"yesterday" is not an RFC 3339 time`)
	dqctl(t, "", append(a, "backfill", "orders", "nope", from, to)...).want(t, exitNotFound, `no registration "nope" in queue "orders"`)
}
