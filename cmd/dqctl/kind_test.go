package main

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// addJob enqueues id with job j on q (a Queue or a Partitioned), due
// after d.
func addJob(t *testing.T, q interface {
	Add(context.Context, redisq.EnqueueItem) (time.Time, error)
}, id string, d time.Duration, j redisq.Job) {
	t.Helper()
	if _, err := q.Add(context.Background(), redisq.EnqueueItem{ID: id, Payload: []byte(id), After: d, Job: j}); err != nil {
		t.Fatal(err)
	}
}

// tableRow is a regexp of one table row: its cells separated by the table's
// gaps.
func tableRow(cells ...string) *regexp.Regexp {
	for i, c := range cells {
		cells[i] = regexp.QuoteMeta(c)
	}
	return regexp.MustCompile(`(?m)^` + strings.Join(cells, ` {2,}`) + `( |$)`)
}

func wantRows(t *testing.T, out string, rows ...[]string) {
	t.Helper()
	for _, r := range rows {
		if !tableRow(r...).MatchString(out) {
			t.Errorf("no row %q in:\n%s", r, out)
		}
	}
}

// listIDs are the ids and kinds of the items of a list -json page.
func listIDs(t *testing.T, out string) (ids, kinds []string) {
	t.Helper()
	var page struct {
		Items []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("list -json: %v\n%s", err, out)
	}
	for _, it := range page.Items {
		ids, kinds = append(ids, it.ID), append(kinds, it.Kind)
	}
	return ids, kinds
}

// TestListKind: list has a KIND column ("-" for none), and -kind lists
// the items of one kind (with -reason, of both), saying how many among
// how many examined; -json carries the kind.
func TestListKind(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	addJob(t, f.q, "r1", 30*time.Minute, redisq.Job{Kind: "refund"})
	addJob(t, f.q, "g1", 90*time.Minute, redisq.Job{Kind: "digest"})
	addJob(t, f.q, "r2", 3*time.Hour, redisq.Job{Kind: "refund"})
	addJob(t, f.q, "dash", 4*time.Hour, redisq.Job{Kind: "-"})
	// A dead item of kind refund.
	if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: "rd", At: time.Unix(1, 0), Job: redisq.Job{Kind: "refund"}}); err != nil {
		t.Fatal(err)
	}
	m, err := f.q.Take(ctx)
	if err != nil || m.ID != "rd" || m.Kind != "refund" {
		t.Fatalf("take: %v %+v", err, m)
	}
	if _, err := m.DeadLetter(ctx, "bad refund"); err != nil {
		t.Fatal(err)
	}

	r := dqctl(t, "", append(a, "list", "orders", "scheduled")...)
	r.want(t, exitOK, "1-6 of 6 scheduled\n")
	wantRows(t, r.stdout, []string{"ID", "KIND", "DUE", "ATTEMPTS", "ENQUEUED", "SIZE"},
		[]string{"r1", "refund", "in"}, []string{"g1", "digest", "in"}, []string{"r2", "refund", "in"},
		[]string{"s1", "-", "in"}, []string{"s2", "-", "in"}, []string{"dash", `"-"`, "in"})
	r = dqctl(t, "", append(a, "list", "orders", "dead")...)
	wantRows(t, r.stdout, []string{"ID", "KIND", "DIED", "ATTEMPTS", "SIZE", "REASON"},
		[]string{"d1", "-"}, []string{"d2", "-"}, []string{"rd", "refund"})
	r = dqctl(t, "", append(a, "list", "orders", "inflight")...)
	wantRows(t, r.stdout, []string{"ID", "KIND", "LEASE ENDS"}, []string{"f1", "-", "in"})

	r = dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", "refund")...)
	r.want(t, exitOK, `2 scheduled items of kind "refund" among scheduled items 1-6 of 6`+"\n")
	wantRows(t, r.stdout, []string{"r1", "refund"}, []string{"r2", "refund"})
	for _, id := range []string{"s1", "s2", "g1", "dash"} {
		if regexp.MustCompile(`(?m)^` + id + ` `).MatchString(r.stdout) {
			t.Errorf("-kind refund lists %s:\n%s", id, r.stdout)
		}
	}
	dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", "digest")...).
		want(t, exitOK, `1 scheduled item of kind "digest" among scheduled items 1-6 of 6`+"\n", "g1 ")
	dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", "nosuch")...).
		want(t, exitOK, `no scheduled item of kind "nosuch" among scheduled items 1-6 of 6`+"\n")
	dqctl(t, "", append(a, "list", "orders", "inflight", "-kind", "refund")...).
		want(t, exitOK, `no inflight item of kind "refund" among inflight items 1-1 of 1`+"\n")
	dqctl(t, "", append(a, "list", "orders", "dead", "-kind", "refund", "-reason", "bad refund")...).
		want(t, exitOK, "rd ", `1 dead item of kind "refund" died of "bad refund" among dead items 1-3 of 3`+"\n")
	dqctl(t, "", append(a, "list", "orders", "dead", "-kind", "refund", "-reason", "bad address")...).
		want(t, exitOK, `no dead item of kind "refund" died of "bad address" among dead items 1-3 of 3`+"\n")
	dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", "")...).want(t, exitUsage, "-kind is empty")

	// Pages: one refund a page, then the next one from where it stopped.
	r = dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", "refund", "-limit", "1")...)
	r.want(t, exitOK, "r1 ", `1 scheduled item of kind "refund" among scheduled items 1-1 of 6;`+"\n  next page: -offset 1\n")
	dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", "refund", "-limit", "1", "-offset", "1")...).
		want(t, exitOK, "r2 ", `1 scheduled item of kind "refund" among scheduled items 2-5 of 6;`+"\n  next page: -offset 5\n")

	r = dqctl(t, "", append(a, "list", "-json", "orders", "scheduled", "-kind", "refund")...)
	r.want(t, exitOK)
	if ids, kinds := listIDs(t, r.stdout); !slices.Equal(ids, []string{"r1", "r2"}) || !slices.Equal(kinds, []string{"refund", "refund"}) {
		t.Errorf("list -json -kind refund: %q %q\n%s", ids, kinds, r.stdout)
	}
	r = dqctl(t, "", append(a, "list", "-json", "orders", "scheduled")...)
	if ids, kinds := listIDs(t, r.stdout); !slices.Equal(ids, []string{"r1", "s1", "g1", "s2", "r2", "dash"}) ||
		!slices.Equal(kinds, []string{"refund", "", "digest", "", "refund", "-"}) {
		t.Errorf("list -json: %q %q\n%s", ids, kinds, r.stdout)
	}
	if strings.Count(r.stdout, `"kind": `) != 4 {
		t.Errorf("list -json: want a kind on the 4 items that have one, none on the others:\n%s", r.stdout)
	}
}

// TestShowJob: show prints an item's kind, its headers sorted by name and
// the options of its own that are set; an item without them has no such
// lines; -json has them all.
func TestShowJob(t *testing.T) {
	f := newFixture(t, "orders")
	a := []string{"-redis", f.addr}
	notAfter := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	addJob(t, f.q, "full", time.Hour, redisq.Job{
		Kind:        "refund",
		Headers:     map[string]string{"trace": "00-abc-01", "tenant": "acme", "a-first": "x y", "zeta": "", "m": "1", "b": "2"},
		MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		Timeout: 30 * time.Second, NotAfter: notAfter, Retention: 24 * time.Hour,
	})
	addJob(t, f.q, "unlimited", time.Hour, redisq.Job{MaxAttempts: -1})

	r := dqctl(t, "", append(a, "show", "orders", "full")...)
	r.want(t, exitOK, `id            "full"
state         scheduled
kind          refund
due           `, `
enqueued      `, `
headers       a-first: "x y"
              b: 2
              m: 1
              tenant: acme
              trace: 00-abc-01
              zeta: ""
max attempts  5
backoff       1s, doubling up to 1m0s
timeout       30s a run
not after     2030-01-02 03:04:05.000 UTC
retention     24h0m0s once acked
payload       4 bytes
full
`)
	dqctl(t, "", append(a, "show", "orders", "unlimited")...).want(t, exitOK, "\nmax attempts  no limit\npayload       9 bytes\n")
	r = dqctl(t, "", append(a, "show", "orders", "s1")...)
	r.want(t, exitOK, "state     scheduled\ndue  ")
	for _, l := range []string{"kind", "headers", "max attempts", "backoff", "timeout", "not after", "retention"} {
		if strings.Contains(r.stdout, "\n"+l+" ") {
			t.Errorf("show of an item without a job has a %s line:\n%s", l, r.stdout)
		}
	}

	r = dqctl(t, "", append(a, "show", "-json", "orders", "full")...)
	r.want(t, exitOK)
	var got struct {
		ID string `json:"id"`
		redisq.Job
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "full" || got.Kind != "refund" || len(got.Headers) != 6 || got.Headers["a-first"] != "x y" || got.MaxAttempts != 5 ||
		got.BackoffBase != time.Second || got.BackoffMax != time.Minute || got.Timeout != 30*time.Second ||
		!got.NotAfter.Equal(notAfter) || got.Retention != 24*time.Hour {
		t.Errorf("show -json: %+v\n%s", got, r.stdout)
	}
}

// TestJobNoTerminalInjection: hostile kinds, header names and values are
// printed escaped (dqctl checks every output with assertSafe), and quoted
// where they would be ambiguous.
func TestJobNoTerminalInjection(t *testing.T) {
	f := newFixture(t, "orders")
	a := []string{"-redis", f.addr}
	kind := "k\x1b[31m\u202e"
	addJob(t, f.q, "evil", time.Hour, redisq.Job{Kind: kind, Headers: map[string]string{
		"x\x1b]0;pwned\a": "v\u202eevil\x1b[2J",
		"n:ame":           "plain",
		"bidi":            "\u2067rtl\u2069\u009b",
		"multi":           "line1\nline2\tend",
	}})
	r := dqctl(t, "", append(a, "show", "orders", "evil")...)
	r.want(t, exitOK, "\n"+`kind      "k\x1b[31m\u202e"`+"\n", "\n"+`headers   bidi: "\u2067rtl\u2069\u009b"
          multi: "line1\nline2\tend"
          "n:ame": plain
          "x\x1b]0;pwned\a": "v\u202eevil\x1b[2J"
payload   4 bytes
`)
	r = dqctl(t, "", append(a, "list", "orders", "scheduled")...)
	wantRows(t, r.stdout, []string{"evil", `"k\x1b[31m\u202e"`, "in"})
	dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", kind)...).
		want(t, exitOK, `1 scheduled item of kind "k\x1b[31m\u202e" among scheduled items 1-3 of 3`)
	r = dqctl(t, "", append(a, "show", "-json", "orders", "evil")...)
	r.want(t, exitOK, `"kind": "k\u001b[31m\u202e"`, `"x\u001b]0;pwned\u0007": "v\u202eevil\u001b[2J"`)
	var got struct{ redisq.Job }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Kind != kind || got.Headers["x\x1b]0;pwned\a"] != "v\u202eevil\x1b[2J" {
		t.Errorf("escaped JSON is still the same JSON: %v %+v", err, got)
	}
}

// TestPartitionedListKind: list of a partitioned queue has the KIND
// column after PARTITION, and -kind filters every partition, page after
// page.
func TestPartitionedListKind(t *testing.T) {
	f := newPartFixture(t)
	a := []string{"-redis", f.addr}
	for _, id := range []string{"r0", "r1", "r2", "r3"} {
		addJob(t, f.p, id, 2*time.Hour, redisq.Job{Kind: "refund"})
	}
	addJob(t, f.p, "g0", 2*time.Hour, redisq.Job{Kind: "digest"})
	parts := map[int]bool{}
	for _, id := range []string{"r0", "r1", "r2", "r3"} {
		parts[f.p.PartitionOf(id)] = true
	}
	if len(parts) < 2 {
		t.Fatalf("the refunds are all in one partition: %v", parts)
	}

	r := dqctl(t, "", append(a, "list", "orders", "scheduled", "-limit", "100")...)
	r.want(t, exitOK, "1-15 of 15 scheduled in 3 partitions\n")
	wantRows(t, r.stdout, []string{"ID", "PARTITION", "KIND", "DUE"})
	if !regexp.MustCompile(`(?m)^s0 +\d +- +in `).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^r0 +\d +refund +in `).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^g0 +\d +digest +in `).MatchString(r.stdout) {
		t.Errorf("partitioned list rows:\n%s", r.stdout)
	}

	r = dqctl(t, "", append(a, "list", "orders", "scheduled", "-kind", "refund")...)
	r.want(t, exitOK, `4 scheduled items of kind "refund" among scheduled items 1-15 of 15 in 3 partitions`+"\n")
	for _, id := range []string{"s0", "k1", "g0"} {
		if strings.Contains(r.stdout, "\n"+id+" ") {
			t.Errorf("-kind refund lists %s:\n%s", id, r.stdout)
		}
	}

	// Page by page, one item a page: the cursor goes on across partitions.
	var ids []string
	cursor := ""
	for range 10 {
		args := append(a, "list", "-json", "orders", "scheduled", "-kind", "refund", "-limit", "1")
		if cursor != "" {
			args = append(args, "-cursor", cursor)
		}
		r = dqctl(t, "", args...)
		r.want(t, exitOK)
		var page struct {
			Next  []int64 `json:"next"`
			Items []struct {
				ID        string `json:"id"`
				Kind      string `json:"kind"`
				Partition *int   `json:"partition"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if it.Kind != "refund" || it.Partition == nil || *it.Partition != f.p.PartitionOf(it.ID) {
				t.Errorf("page item %+v", it)
			}
			ids = append(ids, it.ID)
		}
		if page.Next == nil {
			break
		}
		cursor = formatCursor(page.Next, 0)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"r0", "r1", "r2", "r3"}) {
		t.Errorf("pages of -kind refund: %q", ids)
	}
}
