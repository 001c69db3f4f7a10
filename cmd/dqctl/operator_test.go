package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

// The operator's points of issue 20, one test each.

// TestFlagsAfterArguments: flags may follow the positional arguments
// (the README says connection flags go before or after the command), and
// "--" ends the flags, for an id that starts with "-".
func TestFlagsAfterArguments(t *testing.T) {
	f := newFixture(t, "orders")
	r := dqctl(t, "", "-redis", f.addr, "show", "orders", "s1", "-json")
	r.want(t, exitOK, `"id": "s1"`)
	dqctl(t, "", "show", "orders", "s1", "-redis", f.addr).want(t, exitOK, "state     scheduled")
	dqctl(t, "", "-redis", f.addr, "list", "orders", "-limit", "1", "dead", "-reverse").want(t, exitOK, "d2", "1-1 of 2 dead; next page: -offset 1")
	if _, err := f.q.EnqueueAfter(context.Background(), "-5", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", "-redis", f.addr, "show", "orders", "-5").want(t, exitUsage, `goes after "--"`)
	dqctl(t, "", "-redis", f.addr, "show", "-json", "orders", "--", "-5").want(t, exitOK, `"id": "-5"`)
	dqctl(t, "", "-redis", f.addr, "delete", "orders", "s2", "--", "-5", "-json").want(t, exitNotFound, `deleted "-5"`, `no item "-json"`)
}

// TestTimeoutAppliesToCommands: -timeout bounds an ordinary command's
// Redis work, not only the first PING: with the server refusing to run
// scripts for 20s (CLIENT PAUSE WRITE pauses EVALSHA), a stats with
// -timeout 500ms fails saying so, long before the pause ends.
func TestTimeoutAppliesToCommands(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	if err := f.c.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	defer f.c.Do(ctx, "CLIENT", "UNPAUSE")
	start := time.Now()
	r := dqctl(t, "", "-redis", f.addr, "-timeout", "500ms", "stats", "orders")
	r.want(t, exitError, "no answer within -timeout 500ms")
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("stats with -timeout 500ms took %v", d)
	}
	dqctl(t, "y\n", "-redis", f.addr, "-timeout", "500ms", "purge", "orders", "dead").want(t, exitError, "no answer within -timeout 500ms")
	if err := f.c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", "-redis", f.addr, "-timeout", "5s", "stats", "orders").want(t, exitOK)
	// The time the operator takes to answer a prompt does not count: the
	// answer comes after twice the timeout, and the purge is done.
	var out, errb strings.Builder
	code := run(ctx, []string{"-redis", f.addr, "-timeout", "500ms", "purge", "orders", "dead"}, &slowReader{time.Second, "y\n"}, &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), "deleted 2 dead items") {
		t.Errorf("purge answered after 1s with -timeout 500ms: exit %d\n%s%s", code, out.String(), errb.String())
	}
	dqctl(t, "", "-redis", f.addr, "-timeout", "0s", "stats", "orders").want(t, exitUsage, "-timeout must be positive")
}

// TestListCutsReasons: a 1 KiB dead reason is cut to the terminal's
// width ($COLUMNS here, the output not being a terminal), and -full
// prints it whole; -json always does.
func TestListCutsReasons(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	reason := strings.Repeat("r", redisq.MaxReasonLen-20) + "END"
	if err := f.q.Enqueue(ctx, "long", []byte("x"), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	m, err := f.q.Take(ctx)
	if err != nil || m.ID != "long" {
		t.Fatalf("took %v %v", m, err)
	}
	if _, err := m.DeadLetter(ctx, reason); err != nil {
		t.Fatal(err)
	}
	for _, cols := range []int{80, 120} {
		t.Setenv("COLUMNS", fmt.Sprint(cols))
		r := dqctl(t, "", "-redis", f.addr, "list", "orders", "dead")
		r.want(t, exitOK, "…", "long", "reasons cut to the terminal's width (-full: whole)")
		for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > cols && !strings.HasPrefix(l, "1-3 of 3 dead") {
				t.Errorf("COLUMNS=%d: a line of %d columns: %q", cols, n, l)
			}
		}
		if strings.Contains(r.stdout, "END") {
			t.Errorf("the reason is not cut:\n%s", r.stdout)
		}
	}
	dqctl(t, "", "-redis", f.addr, "list", "-full", "orders", "dead").want(t, exitOK, reason)
	dqctl(t, "", "-redis", f.addr, "list", "-json", "orders", "dead").want(t, exitOK, reason)
}

// TestListFitsTheTerminal (issue 41, item 14): list of a queue of
// hostile ids and kinds was 89 columns wide at COLUMNS=80 (a reason kept
// 20 columns whatever the others took). Every line of every state's
// list, and of reasons, fits the terminal now, measured in display
// columns (a Han character takes two): ids and kinds are elided in their
// middle, reasons and results cut at their end, and the summary says so
// and wraps; -full prints them whole.
func TestListFitsTheTerminal(t *testing.T) {
	f := newFixture(t, "hostile")
	ctx := context.Background()
	ids := []string{evilReg + "-order:1000", "漢字の注文:1001", strings.Repeat("x", 60) + ":1002"}
	kind := "refund\x1b[31m\u202e漢字"
	for i, id := range ids {
		j := redisq.Job{Kind: kind, Retention: time.Hour}
		if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: id, Payload: []byte(id), At: time.Unix(1, 0), Job: j}); err != nil {
			t.Fatal(err)
		}
		m, err := f.q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			_, err = m.DeadLetter(ctx, "card declined \u202e漢字 "+strings.Repeat("r", 200))
		case 1:
			err = m.SetResult([]byte(`{"refund":"漢字` + strings.Repeat("r", 100) + `"}`))
			if err == nil {
				err = m.Ack(ctx)
			}
		} // the third stays in flight
		if err != nil {
			t.Fatal(err)
		}
	}
	sched := strings.Repeat("y", 60) + ":漢字"
	if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: sched, After: time.Hour, Job: redisq.Job{Kind: kind}}); err != nil {
		t.Fatal(err)
	}
	// columns is the display width of a line: two for a Han character
	// (the only wide ones here), one for any other rune.
	columns := func(l string) int {
		n := 0
		for _, r := range l {
			n++
			if unicode.Is(unicode.Han, r) {
				n++
			}
		}
		return n
	}
	a := []string{"-redis", f.addr}
	for _, cols := range []int{80, 100} {
		t.Setenv("COLUMNS", fmt.Sprint(cols))
		for _, args := range [][]string{{"list", "hostile", "dead"}, {"list", "hostile", "scheduled"}, {"list", "hostile", "inflight"},
			{"list", "-payloads", "hostile", "completed"}, {"reasons", "hostile"}} {
			r := dqctl(t, "", append(a, args...)...)
			r.want(t, exitOK, "cut to the terminal's width (-full: whole)")
			for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
				if n := columns(l); n > cols {
					t.Errorf("COLUMNS=%d %v: a line of %d columns: %q", cols, args, n, l)
				}
			}
		}
	}
	t.Setenv("COLUMNS", "80")
	r := dqctl(t, "", append(a, "list", "hostile", "dead")...)
	r.want(t, exitOK, "ids, kinds and reasons cut")
	if !regexp.MustCompile(`(?m)^"ev\\x1b\S*…\S*:1000"  `).MatchString(r.stdout) {
		t.Errorf("the hostile id is not elided in its middle:\n%s", r.stdout)
	}
	r = dqctl(t, "", append(a, "list", "-full", "hostile", "dead")...)
	r.want(t, exitOK, cell(ids[0]), cell(kind), strings.Repeat("r", 200))
	r = dqctl(t, "", append(a, "list", "-full", "hostile", "scheduled")...)
	r.want(t, exitOK, sched)
	r = dqctl(t, "", append(a, "list", "-full", "hostile", "inflight")...)
	r.want(t, exitOK, ids[2])
}

// TestShowCutsPayload: show prints what of a 10 MiB payload fits the
// terminal ($COLUMNS x $LINES, else 80x24), saying so; -full prints it
// all.
func TestShowCutsPayload(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	big := strings.Repeat(strings.Repeat("p", 200)+"\n", (10<<20)/201)
	binary := make([]byte, 1<<20)
	for i := range binary {
		binary[i] = byte(i)
	}
	for id, p := range map[string][]byte{"big": []byte(big), "bin": binary} {
		if _, err := f.q.EnqueueAfter(ctx, id, p, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	r := dqctl(t, "", "-redis", f.addr, "show", "orders", "big")
	r.want(t, exitOK, fmt.Sprintf("payload   %d bytes", len(big)),
		fmt.Sprintf("(cut to fit the terminal: 16 of %d lines shown, long lines cut; %d bytes in all; -full prints everything)", (10<<20)/201+1, len(big)))
	if len(r.stdout) > 4<<10 {
		t.Errorf("show printed %d bytes of a 10 MiB payload", len(r.stdout))
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if utf8.RuneCountInString(l) > 80 && !strings.HasPrefix(l, "(cut to fit") {
			t.Errorf("a line of %d columns", utf8.RuneCountInString(l))
		}
	}
	t.Setenv("LINES", "50")
	r = dqctl(t, "", "-redis", f.addr, "show", "orders", "bin")
	r.want(t, exitOK, "00000000  00 01 02 03", "(cut to fit the terminal: 42 of 65536 lines shown; 1048576 bytes in all", "00000290  90 91")
	if strings.Contains(r.stdout, "000002a0 ") {
		t.Errorf("more hex lines than fit:\n%s", r.stdout)
	}
	r = dqctl(t, "", "-redis", f.addr, "show", "-full", "orders", "big")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, big) || strings.Contains(r.stdout, "cut to fit") {
		t.Errorf("show -full did not print the whole payload (%d bytes of output)", len(r.stdout))
	}
	// Small payloads are whole, with no note; one byte is "1 byte".
	if _, err := f.q.EnqueueAfter(ctx, "one", []byte("x"), time.Hour); err != nil {
		t.Fatal(err)
	}
	r = dqctl(t, "", "-redis", f.addr, "show", "orders", "one")
	r.want(t, exitOK, "payload   1 byte\nx\n")
	if strings.Contains(r.stdout, "cut") {
		t.Errorf("a one-byte payload is said to be cut:\n%s", r.stdout)
	}
}

// TestWatchFits80Columns: every line of watch fits 80 columns, and the
// chart is scaled to the window's largest bar, not to "later" (1000
// items due after the window) or "overdue".
func TestWatchFits80Columns(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	var items []redisq.EnqueueItem
	for i := range 1000 {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprint("later:", i), After: 3 * time.Hour})
	}
	for i := range 4 {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprint("soon:", i), After: 90 * time.Second})
	}
	items = append(items, redisq.EnqueueItem{ID: "soon:x", After: 5*time.Minute + 30*time.Second})
	res, err := f.q.EnqueueMany(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	r := dqctl(t, "", "-redis", f.addr, "watch", "-n", "2", "-interval", "10ms", "orders")
	r.want(t, exitOK, "(0.0/s)")
	for _, l := range strings.Split(r.stdout, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	full := strings.Repeat("#", chartWidth)
	for _, want := range []string{"+2m0s |" + full + " 4", "+6m0s |" + strings.Repeat("#", chartWidth/4) + strings.Repeat(" ", chartWidth-chartWidth/4) + " 1",
		"later |" + full[1:] + "> 1002"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chart lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestMessagesSayWhatHappened: a read says no queue without "nothing
// changed"; the db is named; a second delete of an in-flight item says it
// was already marked, exit 3; help lists the commands' arguments and flags.
func TestMessagesSayWhatHappened(t *testing.T) {
	f := newFixture(t, "orders")
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "stats", "nosuch")...)
	r.want(t, exitNotFound, `no queue named "nosuch" on `+f.addr+" (dqctl queues lists them)")
	if strings.Contains(r.stderr, "nothing changed") {
		t.Errorf("a read says nothing changed: %s", r.stderr)
	}
	dqctl(t, "", append(a, "purge", "-yes", "nosuch", "dead")...).want(t, exitNotFound, "; nothing changed")
	dqctl(t, "", append(a, "-db", "3", "queues")...).want(t, exitOK, "no queues on "+f.addr+" db 3")
	dqctl(t, "", append(a, "-db", "3", "stats", "orders")...).want(t, exitNotFound, `no queue named "orders" on `+f.addr+" db 3")

	dqctl(t, "", append(a, "delete", "orders", "f1")...).want(t, exitOK, `marked "f1": in flight`)
	r = dqctl(t, "", append(a, "delete", "orders", "f1")...)
	r.want(t, exitNotFound, `item "f1" is in flight and already marked`, "nothing changed")
	if strings.Contains(r.stdout, "marked") {
		t.Errorf("a second delete says marked again: %s", r.stdout)
	}

	r = dqctl(t, "", "help")
	r.want(t, exitOK, "  show [-full] [-json] QUEUE ID\n", "  list [-cursor cursor] [-full] [-json] [-kind kind] [-limit n] [-offset n]\n        [-payloads] [-reason reason] [-reverse] QUEUE STATE\n",
		"  pause QUEUE\n", "  queues [-json] [-partitions] [-scan] [-sort key]\n", "  serve-metrics [-allow-host name] [-limit-scan n] [-listen host:port]\n")
	dqctl(t, "", "help", "list").want(t, exitOK, "Usage: dqctl list [-cursor cursor] [-full] [-json]", "-offset n", "items per page")
	dqctl(t, "", "help", "nosuch").want(t, exitUsage, `unknown command "nosuch"`)
	dqctl(t, "", "list", "-h").want(t, exitOK, "Usage: dqctl list [-cursor cursor] [-full] [-json]")
}

// TestStatsJSONBuckets: the lateness buckets of stats -json say what they
// hold: each its own count, its upper bound (null for the last) and the
// cumulative count, so the last one holds every delivery.
func TestStatsJSONBuckets(t *testing.T) {
	f := newFixture(t, "orders")
	r := dqctl(t, "", "-redis", f.addr, "stats", "-json", "orders")
	r.want(t, exitOK, `"paused": false`)
	if strings.Contains(r.stdout, "le_seconds") {
		t.Errorf("stats -json still says le_seconds:\n%s", r.stdout)
	}
	var st struct {
		Lateness struct {
			Count   int64
			Buckets []struct {
				UpperBound      *float64 `json:"upper_bound_seconds"`
				Count           int64    `json:"count"`
				CumulativeCount int64    `json:"cumulative_count"`
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	bs := st.Lateness.Buckets
	if len(bs) != len(redisq.LatenessBounds())+1 || st.Lateness.Count != 3 {
		t.Fatalf("%d buckets, count %d", len(bs), st.Lateness.Count)
	}
	var sum int64
	for i, b := range bs {
		sum += b.Count
		if b.CumulativeCount != sum || (b.UpperBound == nil) != (i == len(bs)-1) {
			t.Errorf("bucket %d: %+v (sum %d)", i, b, sum)
		}
	}
	if last := bs[len(bs)-1]; last.CumulativeCount != 3 {
		t.Errorf("the last bucket holds %d of 3 deliveries", last.CumulativeCount)
	}
}

// TestPauseResume: pause and resume change the queue's state, say so,
// say when nothing changed, and refuse a queue that does not exist.
func TestPauseResume(t *testing.T) {
	f := newFixture(t, "orders")
	f.neighbour(t)
	a := []string{"-redis", f.addr}
	ctx := context.Background()
	dqctl(t, "", append(a, "resume", "orders")...).want(t, exitOK, `queue "orders" is not paused; nothing changed`)
	dqctl(t, "", append(a, "pause", "orders")...).want(t, exitOK, `paused queue "orders": consumers take nothing until dqctl resume`)
	if p, err := f.q.Paused(ctx); err != nil || !p {
		t.Fatalf("paused: %v %v", p, err)
	}
	dqctl(t, "", append(a, "pause", "orders")...).want(t, exitOK, `queue "orders" is already paused; nothing changed`)
	dqctl(t, "", append(a, "stats", "orders")...).want(t, exitOK, "PAUSED: no item is delivered")
	r := dqctl(t, "", append(a, "queues")...)
	r.want(t, exitOK, "PAUSED")
	// Since when, relative and absolute.
	if !regexp.MustCompile(`paused (?:\S+ ago|now) \(\d\d:\d\d:\d\dZ\)\n`).MatchString(r.stdout) || strings.Count(r.stdout, "paused") != 1 {
		t.Errorf("queues:\n%s", r.stdout)
	}
	dqctl(t, "", append(a, "queues", "-json")...).want(t, exitOK, `"paused": true`)
	dqctl(t, "", append(a, "resume", "orders")...).want(t, exitOK, `resumed queue "orders": consumers take due items again`)
	if p, err := f.q.Paused(ctx); err != nil || p {
		t.Fatalf("paused after resume: %v %v", p, err)
	}
	dqctl(t, "", append(a, "pause", "nosuch")...).want(t, exitNotFound, `no queue named "nosuch"`, "nothing changed")
	dqctl(t, "", append(a, "pause")...).want(t, exitUsage, "wrong number of arguments")
}

// TestQueuesScan: queues lists the registry; -scan finds a queue missing
// from it too.
func TestQueuesScan(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	hidden, err := redisq.New(ctx, f.c, "hidden", redisq.WithoutRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer hidden.Close()
	if _, err := hidden.EnqueueAfter(ctx, "x", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	r := dqctl(t, "", "-redis", f.addr, "queues")
	r.want(t, exitOK, "orders")
	if strings.Contains(r.stdout, "hidden") {
		t.Errorf("an unregistered queue is listed without -scan:\n%s", r.stdout)
	}
	dqctl(t, "", "-redis", f.addr, "queues", "-scan").want(t, exitOK, "hidden ", "orders ")
	dqctl(t, "", "-redis", f.addr, "-db", "1", "queues").want(t, exitOK, "dqctl queues -scan finds unregistered ones")
}

// TestServeMetricsNamesAndHosts: serve-metrics names the queues given in
// their order (the argument list was rotated in place), and refuses a
// foreign Host as serve does.
func TestServeMetricsNamesAndHosts(t *testing.T) {
	f := newFixture(t, "orders")
	f.neighbour(t)
	ctx := context.Background()
	third, err := redisq.New(ctx, f.c, "zeta")
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := third.EnqueueAfter(ctx, "x", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		done <- run(runCtx, []string{"-redis", f.addr, "serve-metrics", "-listen", "127.0.0.1:0", "orders", "orders:eu", "zeta",
			"-allow-host", "metrics.example"}, strings.NewReader(""), &out, &out)
	}()
	defer func() { cancel(); <-done }()
	var line string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if line = out.String(); strings.Contains(line, "\n") {
			break
		}
	}
	if !strings.Contains(line, `serving metrics of "orders", "orders:eu", "zeta" on http://`) {
		t.Fatalf("serve-metrics says %q", line)
	}
	u := strings.TrimSpace(line[strings.Index(line, "http://"):])
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metrics")
	port := host[strings.LastIndex(host, ":")+1:]
	for h, want := range map[string]int{host: 200, "localhost:" + port: 200, "metrics.example": 200,
		"evil.example:" + port: http.StatusMisdirectedRequest} {
		code, body := hostGet(t, u, h, "", "")
		if code != want {
			t.Errorf("Host %s: %d, want %d", h, code, want)
		}
		if want == 200 && !strings.Contains(body, `redisq_up{queue="zeta"} 1`) {
			t.Errorf("Host %s: no metrics of zeta", h)
		}
		if want != 200 && strings.Contains(body, "orders") {
			t.Errorf("Host %s: the refusal names a queue: %s", h, body)
		}
		// Issue 24, item 14: the refusal told to run dqctl serve.
		if want != 200 && (!strings.Contains(body, "allow this name: dqctl serve-metrics -allow-host evil.example.") || strings.Contains(body, "dqctl serve ")) {
			t.Errorf("Host %s: the refusal does not say how to allow it in serve-metrics: %s", h, body)
		}
	}
}

// TestServeFlags: serve's -queues (and -queue), -title and -refresh reach
// the dashboard.
func TestServeFlags(t *testing.T) {
	f := newFixture(t, "orders")
	f.neighbour(t)
	u, stop := serving(t, "-redis", f.addr, "serve", "-listen", "127.0.0.1:0", "-queues", "orders:eu", "-queue", "a,b",
		"-title", "ops board", "-refresh", "7s")
	defer stop()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	for _, want := range []string{"ops board", `data-refresh="7"`, `data-queue="orders:eu"`, `data-queue="a,b"`} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Contains(body, `data-queue="orders"`) {
		t.Errorf("a queue left out of -queues is listed")
	}
	dqctl(t, "", "-redis", f.addr, "serve", "-listen", "127.0.0.1:0", "-queues", "a{b}").want(t, exitUsage, "bad queue name")
}

// slowReader returns s after waiting d, as an operator at a prompt.
type slowReader struct {
	d time.Duration
	s string
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	time.Sleep(r.d)
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}
