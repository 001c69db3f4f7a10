package dqweb_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
)

// Which queue is sick (issue 24, item 15): the overview sorts by a column
// (name, scheduled, due, oldest overdue, in flight, dead, error rate)
// through links, the sort in the URL; paused queues say since when;
// counts have thousands separators.

// overviewOrder is the queues of an overview page, in order (as shown).
func overviewOrder(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr data-queue="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// TestOverviewSorts: each sortable column's head is a link that sorts by
// it, worst first, and, sorted, turns it around; ties go by name, unknown
// error rates last; the pager keeps the sort; a bad sort is a 400.
func TestOverviewSorts(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	enqueued := webtest.SickQueues(t, f)
	c := client(t)
	odd := webtest.OddQueue
	for _, s := range []struct {
		query string
		want  []string
	}{
		{"", []string{"alpha", "emails", "orders", odd, "zeta"}},
		{"?sort=name&dir=desc", []string{"zeta", odd, "orders", "emails", "alpha"}},
		{"?sort=dead", []string{"zeta", "orders", "alpha", "emails", odd}},
		{"?sort=dead&dir=asc", []string{"alpha", "emails", odd, "orders", "zeta"}},
		{"?sort=overdue", []string{"alpha", "orders", "emails", odd, "zeta"}},
		{"?sort=due", []string{"alpha", "orders", "emails", odd, "zeta"}},
		{"?sort=scheduled", []string{"orders", "alpha", "emails", odd, "zeta"}},
		{"?sort=inflight", []string{"orders", "alpha", "emails", odd, "zeta"}},
	} {
		r := get(t, c, f.Base+s.query)
		if got := overviewOrder(r.body); r.status != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("overview%s: %d\n got %q\nwant %q", s.query, r.status, got, s.want)
		}
	}
	// The heads: links, the current one marked, and turned around.
	body := get(t, c, f.Base+"?sort=dead").body
	head := section(t, body, "<thead>", "</thead>")
	for _, want := range []string{
		`<th class="n" aria-sort="descending" data-sort="dead"><a href="/dq/?dir=asc&amp;sort=dead" class="sort">Dead ▼</a></th>`,
		`<th data-sort="name"><a href="/dq/?dir=asc&amp;sort=name" class="sort">Queue</a></th>`,
		`<th class="n opt" title="how long the earliest due item has been due" data-sort="overdue"><a href="/dq/?dir=desc&amp;sort=overdue" class="sort">Oldest overdue</a></th>`,
		`data-sort="errors"><a href="/dq/?dir=desc&amp;sort=errors" class="sort">Error rate</a></th>`,
	} {
		if !strings.Contains(head, want) {
			t.Errorf("the table's head lacks %s\n%s", want, head)
		}
	}
	row := overviewRowOf(t, body, "alpha")
	cell := `<td class="n opt warn" data-k="overdue">`
	if i := strings.Index(row, cell); i < 0 {
		t.Errorf("alpha's oldest overdue: %s", row)
	} else {
		shown, _, _ := strings.Cut(row[i+len(cell):], "<")
		webtest.AlphaOverdue(t, shown, enqueued)
	}
	for _, q := range []string{"?sort=bogus", "?sort=dead&dir=up"} {
		if r := get(t, c, f.Base+q); r.status != http.StatusBadRequest {
			t.Errorf("overview%s: %d, want 400", q, r.status)
		}
	}

	// By error rate: alpha 50% (one acked, one dead), emails 0% (one
	// acked), the others unknown (nothing ended), last, by name.
	ctx := context.Background()
	get(t, c, f.Base) // the first reading of every queue
	settle := func(name string, ack, fail int) {
		t.Helper()
		q, err := redisq.New(ctx, f.C, name, redisq.WithMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		for i := range ack + fail {
			m, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if i < ack {
				err = m.Ack(ctx)
			} else {
				_, err = m.DeadLetter(ctx, "x")
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	settle("alpha", 1, 1)
	emails, err := redisq.New(ctx, f.C, "emails")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emails.EnqueueAfter(ctx, "now", nil, 0); err != nil {
		t.Fatal(err)
	}
	settle("emails", 1, 0)
	time.Sleep(1100 * time.Millisecond) // rates need readings a second apart
	r := get(t, c, f.Base+"?sort=errors")
	if got := overviewOrder(r.body); fmt.Sprint(got) != fmt.Sprint([]string{"alpha", "emails", "orders", odd, "zeta"}) {
		t.Errorf("by error rate: %q", got)
	}
	if row := overviewRowOf(t, r.body, "alpha"); !strings.Contains(row, `data-k="errors">50.0%<`) {
		t.Errorf("alpha's error rate: %s", row)
	}
}

// TestOverviewSortPages: sorted by a figure, the overview reads every
// listed queue (up to a bound, which it then states), sorts them, and
// pages through the sorted list; its pager keeps the sort.
func TestOverviewSortPages(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	// 110 more queues, q000..q109, q<i> with i%7 dead items.
	for i := range 110 {
		name := fmt.Sprintf("q%03d", i)
		q, err := redisq.New(ctx, f.C, name, redisq.WithMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		for k := range i % 7 {
			if _, err := q.EnqueueAfter(ctx, fmt.Sprint(k), nil, 0); err != nil {
				t.Fatal(err)
			}
			m, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.DeadLetter(ctx, "x"); err != nil {
				t.Fatal(err)
			}
		}
		if i%7 == 0 {
			if _, err := q.EnqueueAfter(ctx, "x", nil, time.Hour); err != nil { // a queue with no dead item still has data
				t.Fatal(err)
			}
		}
	}
	c := client(t)
	var all []string
	u := f.Base + "?sort=dead"
	for page := 0; ; page++ {
		r := get(t, c, u)
		all = append(all, overviewOrder(r.body)...)
		next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(section(t, r.body, `<p class="pager">`, "</p>"))
		if next == nil {
			break
		}
		if u = f.Srv.URL + html.UnescapeString(next[1]); !strings.Contains(u, "sort=dead") || page > 1 {
			t.Fatalf("the next page %s", u)
		}
	}
	if len(all) != 113 {
		t.Fatalf("%d queues over the pages, want 113", len(all))
	}
	// Worst first: the 15 queues with 6 dead, q006 q013 ... by name.
	if all[0] != "q006" || all[1] != "q013" || all[14] != "q104" || all[15] != "q005" {
		t.Errorf("sorted by dead: %q...", all[:16])
	}
	// Past the bound: the first by name are sorted, and it says so.
	dqweb.SetMaxSorted(t, 50)
	r := get(t, c, f.Base+"?sort=dead")
	if note := section(t, r.body, `id="sortnote"`, "</p>"); !strings.Contains(note, "Sorted among the first 50 queues by name, of the 113 listed") {
		t.Errorf("the note: %s", note)
	}
	if got := overviewOrder(r.body); len(got) != 50 || got[0] != "q006" || strings.Contains(section(t, r.body, `<p class="pager">`, "</p>"), `rel="next"`) {
		t.Errorf("sorted among 50: %d rows, first %q", len(got), got[0])
	}
}

// TestPausedSince: a paused queue says since when, relative and absolute,
// on the overview and on its page.
func TestPausedSince(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	if err := f.Q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := f.Q.Stats(ctx)
	if err != nil || st.PausedSince.IsZero() {
		t.Fatalf("paused since %v: %v", st.PausedSince, err)
	}
	abs := st.PausedSince.UTC().Format("2006-01-02 15:04:05.000 UTC")
	c := client(t)
	row := overviewRowOf(t, get(t, c, f.Base).body, "orders")
	if !strings.Contains(row, `<span class="since">paused since <time datetime="`+st.PausedSince.UTC().Format(time.RFC3339Nano)+`" title="`+abs+`">`) ||
		!strings.Contains(row, `<span class="abs">`+abs+`</span></span>`) {
		t.Errorf("the overview's row: %s", row)
	}
	qp := get(t, c, f.QueueURL("orders")).body
	if since := section(t, qp, `<p class="since" id="paused-since">`, "</p>"); !strings.Contains(since, "Paused since <time") || !strings.Contains(since, abs) {
		t.Errorf("the queue page: %s", since)
	}
	if err := f.Q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if qp := get(t, c, f.QueueURL("orders")).body; strings.Contains(qp, `id="paused-since"`) || strings.Contains(overviewRowOf(t, get(t, c, f.Base).body, "orders"), "paused since") {
		t.Error("a resumed queue still says since when it is paused")
	}
}

// TestThousandsSeparators: counts are written 12,346, on the overview,
// the tabs, the cards, the pager and the reports of actions; data
// attributes keep the plain number.
func TestThousandsSeparators(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	webtest.Fill(t, f.C, "emails", 12_345)
	c := client(t)
	if row := overviewRowOf(t, get(t, c, f.Base).body, "emails"); !strings.Contains(row, `<td class="n" data-k="scheduled">12,346</td>`) {
		t.Errorf("overview: %s", row)
	}
	qp := get(t, c, f.QueueURL("emails")).body
	if !strings.Contains(qp, `<span class="v" data-k="scheduled">12,346</span>`) ||
		!strings.Contains(section(t, qp, `<nav class="tabs"`, "</nav>"), `<span class="count" data-count="12346">12,346</span>`) {
		t.Error("the queue page's counts lack separators")
	}
	tab := get(t, c, f.TabURL("emails", "scheduled")).body
	if p := section(t, tab, `<p class="pager">`, "</p>"); !strings.Contains(p, "1–50 of 12,346") {
		t.Errorf("pager: %s", p)
	}
	if !strings.Contains(tab, `data-confirm="Purge 12,346 scheduled items of queue &#34;emails&#34;?`) {
		t.Error("the purge question lacks separators")
	}
}
