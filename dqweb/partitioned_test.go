package dqweb_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// pfixture is fixture with the partitioned queue "jobs" of 3 partitions:
//   - in flight: 2 items of each partition (run:*), leased for 10 minutes;
//   - dead: 1 item of each partition (dead:*);
//   - scheduled: s000..s059, due 2h+i seconds from now (routed by id), and
//     "keyed", due in 3h, enqueued under the ordering key keyedKey, whose
//     partition is not the id's.
type pfixture struct {
	*webtest.Fixture
	p        *redisq.Partitioned
	run      [3][]string // in flight, by partition
	dead     [3]string   // dead, by partition
	keyedKey string
}

const pname = "jobs"

func newPFixture(t *testing.T, opt dqweb.Options) *pfixture {
	t.Helper()
	f := &pfixture{Fixture: webtest.NewFixture(t, opt)}
	ctx := context.Background()
	p, err := redisq.NewPartitioned(ctx, f.C, pname, 3, redisq.WithMaxAttempts(1), redisq.WithVisibilityTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	f.p = p
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; ; k++ {
		id := fmt.Sprintf("run:%d", k)
		i := p.PartitionOf(id)
		if len(f.run[i]) < 2 {
			f.run[i] = append(f.run[i], id)
			_, err := p.EnqueueAfter(ctx, id, []byte("r"), 0)
			must(err)
		}
		id = fmt.Sprintf("dead:%d", k)
		if i := p.PartitionOf(id); f.dead[i] == "" {
			f.dead[i] = id
			_, err := p.EnqueueAfter(ctx, id, []byte(`{"dead":true}`), 0)
			must(err)
		}
		if len(f.run[0])+len(f.run[1])+len(f.run[2]) == 6 && f.dead[0] != "" && f.dead[1] != "" && f.dead[2] != "" {
			break
		}
	}
	for i := range 3 {
		q := p.Partition(i)
		for range 3 {
			m, err := q.Take(ctx)
			must(err)
			if strings.HasPrefix(m.ID, "dead:") {
				_, err := m.DeadLetter(ctx, "bad input")
				must(err)
			}
		}
	}
	for i := range 60 {
		_, err := p.EnqueueAfter(ctx, fmt.Sprintf("s%03d", i), []byte("s"), 2*time.Hour+time.Duration(i)*time.Second)
		must(err)
	}
	for k := 0; ; k++ {
		key := fmt.Sprintf("customer:%d", k)
		if p.PartitionOf(key) != p.PartitionOf("keyed") {
			f.keyedKey = key
			break
		}
	}
	_, err = p.Route(f.keyedKey).EnqueueAfter(ctx, "keyed", []byte("k"), 3*time.Hour)
	must(err)
	return f
}

// pstats is the Stats of each partition.
func (f *pfixture) pstats(t *testing.T) []redisq.Stats {
	t.Helper()
	ss, err := f.p.PartitionStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// pstate is the state of id in partition i, or 0 when it is not there.
func (f *pfixture) pstate(t *testing.T, i int, id string) redisq.State {
	t.Helper()
	it, err := f.p.Partition(i).Get(context.Background(), id)
	if err == redisq.ErrNotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return it.State
}

// overviewRow is the overview's row of queue name (shown as shown).
func overviewRow(t *testing.T, body, shown string) string {
	t.Helper()
	i := strings.Index(body, `data-queue="`+shown+`"`)
	if i < 0 {
		t.Fatalf("no row of queue %s in\n%s", shown, body)
	}
	row := body[i:]
	return row[:strings.Index(row, "</tr>")]
}

func TestPartitionedOverviewIsOneRow(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	want := map[string]string{"scheduled": "61", "due": "0", "inflight": "6", "dead": "3"}
	check := func(body string) {
		t.Helper()
		row := overviewRow(t, body, pname)
		for k, v := range want {
			if got := count(t, row, k); got != v {
				t.Errorf("row of %s: %s = %s, want %s", pname, k, got, v)
			}
		}
		if !strings.Contains(row, ">3 partitions</span>") {
			t.Errorf("row of %s lacks its partition marker:\n%s", pname, row)
		}
		if strings.Contains(body, `data-queue="`+pname+`~`) {
			t.Errorf("the partitions are listed as queues of their own")
		}
		if !strings.Contains(body, `data-queue="orders"`) {
			t.Errorf("ordinary queues are missing")
		}
	}
	ov := get(t, c, f.Base)
	if ov.status != http.StatusOK {
		t.Fatalf("overview: %d", ov.status)
	}
	check(ov.body)
	// Some partitions paused: k/P; all: paused.
	ctx := context.Background()
	if err := f.p.Partition(1).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	row := overviewRow(t, get(t, c, f.Base).body, pname)
	if !strings.Contains(row, ">1/3 paused</span>") {
		t.Errorf("one partition of three paused, row:\n%s", row)
	}
	if err := f.p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	row = overviewRow(t, get(t, c, f.Base).body, pname)
	if !strings.Contains(row, ">paused</span>") || strings.Contains(row, "/3 paused") {
		t.Errorf("every partition paused, row:\n%s", row)
	}
	// Options.Queues may name it.
	only := newPFixture(t, dqweb.Options{Queues: []string{pname, "orders"}})
	body := get(t, c, only.Base).body
	check(body)
	if n := strings.Count(body, "data-queue="); n != 2 {
		t.Errorf("%d rows for two queues", n)
	}
}

// listIDs returns the ids and partitions listed in section id of body, and
// the link to the next page ("" if none).
func listIDs(t *testing.T, f *pfixture, body, section string) (ids []string, parts []string, next string) {
	t.Helper()
	s := body[strings.Index(body, `<section id="`+section+`" class="list">`):]
	s = s[:strings.Index(s, "</section>")]
	re := regexp.MustCompile(`<tr data-id="([^"]*)">.*?<td class="n part" data-part="(\d)">`)
	if section == "dead" {
		re = regexp.MustCompile(`<article class="deaditem" data-id="([^"]*)">(?s:.*?)data-part="(\d)"`)
	}
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		ids = append(ids, html.UnescapeString(m[1]))
		parts = append(parts, m[2])
	}
	if m := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(s); m != nil {
		next = f.Srv.URL + html.UnescapeString(m[1])
	}
	return ids, parts, next
}

func TestPartitionedQueuePage(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	qp := get(t, c, f.QueueURL(pname))
	if qp.status != http.StatusOK {
		t.Fatalf("queue page: %d\n%s", qp.status, qp.body)
	}
	for k, v := range map[string]string{"scheduled": "61", "inflight": "6", "dead": "3"} {
		if got := count(t, qp.body, k); got != v {
			t.Errorf("queue page: %s = %s, want %s", k, got, v)
		}
	}
	if !regexp.MustCompile(`<span class="k">enqueued</span>.*<span class="sub">70 in all</span>`).MatchString(qp.body) {
		t.Errorf("the enqueued counter is not the sum (70)")
	}
	// The partitions table: one row per partition, its figures, its link.
	ss := f.pstats(t)
	for i := range 3 {
		pn := f.p.Partition(i).Name()
		row := section(t, qp.body, fmt.Sprintf(`<tr data-part="%d"`, i), "</tr>")
		if !strings.Contains(row, `href="/dq/queue?q=`+url.QueryEscape(pn)+`"`) {
			t.Errorf("partition %d: no link to %s:\n%s", i, pn, row)
		}
		for k, v := range map[string]int64{"scheduled": ss[i].Scheduled, "inflight": ss[i].InFlight, "dead": ss[i].Dead} {
			if got := count(t, row, k); got != fmt.Sprint(v) {
				t.Errorf("partition %d: %s = %s, want %d", i, k, got, v)
			}
		}
		// The partition's own page says whose it is.
		pp := get(t, c, f.QueueURL(pn))
		if !strings.Contains(pp.body, fmt.Sprintf(`Partition %d of the 3 of partitioned queue <a href="/dq/queue?q=jobs">jobs</a>`, i)) {
			t.Errorf("partition page of %s does not link back:\n%s", pn, pp.body)
		}
	}
	// The scheduled tab pages across partitions by cursor: 50 then 11, in
	// due order, each with its partition.
	var seen []string
	u := f.TabURL(pname, "scheduled")
	for page := 0; ; page++ {
		r := get(t, c, u)
		if r.status != http.StatusOK {
			t.Fatalf("page %d: %d\n%s", page, r.status, r.body)
		}
		ids, parts, next := listIDs(t, f, r.body, "scheduled")
		for k, id := range ids {
			if want := fmt.Sprint(f.p.PartitionOf(id)); id != "keyed" && parts[k] != want {
				t.Errorf("%s listed in partition %s, want %s", id, parts[k], want)
			}
		}
		seen = append(seen, ids...)
		if page == 0 && (len(ids) != 50 || !strings.Contains(next, "cursor=")) {
			t.Fatalf("first page: %d items, next %q", len(ids), next)
		}
		if next == "" {
			if page != 1 || !strings.Contains(r.body, "51–61 of 61") {
				t.Fatalf("%d pages, want 2; pager of the last: %s", page+1, section(t, r.body, `<p class="pager">`, "</p>"))
			}
			break
		}
		u = next
	}
	var want []string
	for i := range 60 {
		want = append(want, fmt.Sprintf("s%03d", i))
	}
	want = append(want, "keyed")
	if !slices.Equal(seen, want) {
		t.Errorf("listed\n%v\nwant\n%v", seen, want)
	}
	// Dead and in flight: every partition's.
	ids, parts, _ := listIDs(t, f, get(t, c, f.TabURL(pname, "dead")).body, "dead")
	if len(ids) != 3 || !slices.Contains(parts, "0") || !slices.Contains(parts, "1") || !slices.Contains(parts, "2") {
		t.Errorf("dead tab: %v in %v", ids, parts)
	}
	ids, _, _ = listIDs(t, f, get(t, c, f.TabURL(pname, "inflight")).body, "inflight")
	if len(ids) != 6 {
		t.Errorf("in-flight tab: %v", ids)
	}
	for _, bad := range []string{"1,2", "a,b,c", "-1,0,0"} {
		if r := get(t, c, f.TabURL(pname, "scheduled")+"&cursor="+bad); r.status != http.StatusBadRequest {
			t.Errorf("cursor %q: %d, want 400", bad, r.status)
		}
	}
}

func TestPartitionedFind(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	home := f.p.PartitionOf(f.keyedKey)
	wantURL := "/dq/item?" + url.Values{"q": {f.p.Partition(home).Name()}, "id": {"keyed"}}.Encode()
	for _, u := range []string{f.QueueURL(pname) + "&find=keyed", f.QueueURL(pname) + "&find=+keyed+", f.ItemURL(pname, "keyed")} {
		r := get(t, c, u)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != wantURL {
			t.Errorf("%s: %d to %q, want 303 to %q", u, r.status, r.header.Get("Location"), wantURL)
		}
	}
	if r := get(t, c, f.Srv.URL+wantURL); r.status != http.StatusOK || !strings.Contains(r.body, `data-k="state" class="scheduled"`) {
		t.Errorf("item page of the partition: %d", r.status)
	}
	if r := get(t, c, f.QueueURL(pname)+"&find=nope"); r.status != http.StatusNotFound || !strings.Contains(r.body, "No item &#34;nope&#34;") {
		t.Errorf("find nope: %d", r.status)
	}
	if r := get(t, c, f.ItemURL(pname, "nope")); r.status != http.StatusNotFound {
		t.Errorf("item nope: %d", r.status)
	}
}

// paction posts an action on queue jobs with a valid token, confirmed.
func (f *pfixture) paction(t *testing.T, c *http.Client, form url.Values) response {
	t.Helper()
	form.Set("csrf", token(t, c, f.QueueURL(pname)))
	form.Set("q", pname)
	form.Set("confirmed", "yes")
	return post(t, c, f.Base+"action", form)
}

func TestPartitionedActions(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	ctx := context.Background()
	home := f.p.PartitionOf(f.keyedKey)
	// The list's row forms name the partition: "keyed" is deleted from
	// its key's partition, though its id routes elsewhere.
	body := get(t, c, f.TabURL(pname, "scheduled")+"&cursor=17,17,17").body
	pidx := regexp.MustCompile(`name="pidx" value="(\d\.6b65796564)"`).FindStringSubmatch(body)
	if pidx == nil || pidx[1][0] != byte('0'+home) {
		t.Fatalf("no row form of keyed in partition %d: %v", home, pidx)
	}
	r := f.paction(t, c, url.Values{"op": {"delete"}, "pidx": {pidx[1]}})
	if r.status != http.StatusOK || f.pstate(t, home, "keyed") != 0 {
		t.Fatalf("delete keyed: %d, state %v\n%s", r.status, f.pstate(t, home, "keyed"), r.body)
	}
	// A selection from several partitions, by pidx.
	var sel []string
	for _, id := range []string{"s000", "s001", "s002", "s003"} {
		sel = append(sel, fmt.Sprintf("%d.%x", f.p.PartitionOf(id), id))
	}
	r = f.paction(t, c, url.Values{"op": {"run-now"}, "pidx": sel, "state": {"scheduled"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Made 4 items of queue &#34;jobs&#34; (3 partitions) due now") {
		t.Fatalf("run-now selection: %d\n%s", r.status, r.body)
	}
	for _, id := range []string{"s000", "s001", "s002", "s003"} {
		it, err := f.p.Get(ctx, id)
		if err != nil || it.Due.After(time.Now().Add(time.Minute)) {
			t.Errorf("%s not due now: %v %v", id, it.Due, err)
		}
	}
	// By id alone: routed to the partition that holds it.
	r = f.paction(t, c, url.Values{"op": {"requeue"}, "id": {f.dead[2]}})
	if r.status != http.StatusOK || f.pstate(t, 2, f.dead[2]) != redisq.StateScheduled {
		t.Fatalf("requeue %s: %d\n%s", f.dead[2], r.status, r.body)
	}
	// The confirmation names the queue, its partitions, the state and the
	// count, and carries the partitions of the ids.
	form := url.Values{"op": {"purge"}, "q": {pname}, "state": {"scheduled"}, "csrf": {token(t, c, f.QueueURL(pname))}}
	r = post(t, c, f.Base+"action", form)
	if !strings.Contains(r.body, "Purge 61 scheduled items of queue &#34;jobs&#34; (3 partitions)?") {
		t.Errorf("purge question:\n%s", section(t, r.body, `<p class="question">`, "</p>"))
	}
	form = url.Values{"op": {"delete"}, "q": {pname}, "pidx": {sel[0]}, "csrf": {token(t, c, f.QueueURL(pname))}}
	r = post(t, c, f.Base+"action", form)
	if !strings.Contains(r.body, `name="pidx" value="`+sel[0]+`"`) || f.pstate(t, f.p.PartitionOf("s000"), "s000") == 0 {
		t.Errorf("confirmation of a delete by pidx:\n%s", r.body)
	}
	// Whole states: every partition.
	r = f.paction(t, c, url.Values{"op": {"delete-all-dead"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Deleted 2 dead items of queue &#34;jobs&#34; (3 partitions)") {
		t.Fatalf("delete-all-dead: %d\n%s", r.status, r.body)
	}
	r = f.paction(t, c, url.Values{"op": {"purge"}, "state": {"scheduled"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "deleted 61 scheduled items") {
		t.Fatalf("purge: %d\n%s", r.status, r.body)
	}
	for i, st := range f.pstats(t) {
		if st.Scheduled != 0 || st.Dead != 0 || st.InFlight != 2 {
			t.Errorf("partition %d after the purges: %+v", i, st)
		}
	}
	// Pause and resume reach every partition, from one paused or all.
	if err := f.p.Partition(0).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if body := get(t, c, f.QueueURL(pname)).body; !strings.Contains(body, ">1/3 paused</span>") || !strings.Contains(body, `data-op="resume"`) {
		t.Errorf("queue page with 1 of 3 partitions paused shows no 1/3 or no Resume")
	}
	for _, step := range []struct {
		op     string
		paused bool
		says   string
	}{{"pause", true, "Paused queue"}, {"pause", true, "already paused"}, {"resume", false, "Resumed queue"}, {"resume", false, "already running"}} {
		r = f.paction(t, c, url.Values{"op": {step.op}})
		if r.status != http.StatusOK || !strings.Contains(r.body, step.says) {
			t.Fatalf("%s: %d\n%s", step.op, r.status, r.body)
		}
		for i, st := range f.pstats(t) {
			if st.Paused != step.paused {
				t.Errorf("after %s: partition %d paused %v", step.op, i, st.Paused)
			}
		}
	}
}

func TestPartitionedReadOnly(t *testing.T) {
	f := newPFixture(t, dqweb.Options{ReadOnly: true})
	c := client(t)
	for _, u := range []string{f.Base, f.QueueURL(pname), f.TabURL(pname, "dead"), f.TabURL(pname, "scheduled"), f.TabURL(pname, "inflight")} {
		r := get(t, c, u)
		if r.status != http.StatusOK || strings.Contains(r.body, `method="post"`) || strings.Contains(r.body, "data-op=") || !strings.Contains(r.body, "3 partitions") {
			t.Errorf("%s in read-only mode: %d, forms shown or no partitions", u, r.status)
		}
	}
	for _, op := range []string{"requeue", "delete", "purge", "pause", "requeue-all"} {
		r := post(t, c, f.Base+"action", url.Values{"op": {op}, "q": {pname}, "pidx": {"0.6b"}, "state": {"dead"}, "csrf": {strings.Repeat("A", 43)}, "confirmed": {"yes"}})
		if r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
			t.Errorf("%s in read-only mode: %d, want 403", op, r.status)
		}
	}
	for i, st := range f.pstats(t) {
		if st.Dead != 1 || st.Paused {
			t.Errorf("read-only dashboard changed partition %d: %+v", i, st)
		}
	}
}

// TestPartitionedHostileName: a partitioned queue's hostile name is shown
// escaped on every page, its partitions' names too, and its links work.
func TestPartitionedHostileName(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	name := "p\u202egnp.exe\x1b[31m\xff"
	p, err := redisq.NewPartitioned(ctx, f.C, name, 3, redisq.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 6 {
		if _, err := p.EnqueueAfter(ctx, fmt.Sprintf("x%d", i), []byte("x"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	ov := get(t, c, f.Base)
	checkPage(t, "overview", ov, 200<<10)
	shown := `&#34;p\u202egnp.exe\x1b[31m\xff&#34;`
	if !strings.Contains(ov.body, `">`+shown+`</a> <span class="badge parts"`) {
		t.Errorf("overview lacks the escaped partitioned name:\n%s", ov.body)
	}
	for _, u := range []string{f.QueueURL(name), f.TabURL(name, "scheduled"), f.QueueURL(p.Partition(1).Name()), f.QueueURL(name) + "&find=x1"} {
		r := get(t, c, u)
		if strings.Contains(u, "find=") {
			if r.status != http.StatusSeeOther {
				t.Errorf("find: %d", r.status)
			}
			continue
		}
		checkPage(t, u, r, 200<<10)
		if !strings.Contains(r.body, shown) {
			t.Errorf("%s lacks the escaped name", u)
		}
	}
}

// question is the confirmation page's question, as the page holds it.
func question(t *testing.T, body string) string {
	t.Helper()
	return section(t, body, `<p class="question">`, "</p>")
}

// TestSelectionRepeats: an item selected twice counts once. A form with
// both idx and pidx is refused (an idx id may be a pidx one again); on an
// ordinary queue, pidx fields of one id in different partitions are one
// item; on a partitioned queue, they are different items.
func TestSelectionRepeats(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	id := "s010"
	home := f.p.PartitionOf(id)
	form := url.Values{"op": {"delete"}, "q": {pname}, "idx": {fmt.Sprintf("%x", id)}, "pidx": {fmt.Sprintf("%d.%x", home, id)},
		"csrf": {token(t, c, f.QueueURL(pname))}}
	if r := post(t, c, f.Base+"action", form); r.status != http.StatusBadRequest || !strings.Contains(r.body, "both idx and pidx") {
		t.Errorf("idx and pidx of one item, unconfirmed: %d, want 400\n%.2000s", r.status, r.body)
	}
	if r := f.paction(t, c, form); r.status != http.StatusBadRequest || f.pstate(t, home, id) != redisq.StateScheduled {
		t.Errorf("idx and pidx of one item: %d, state %v; want 400, nothing changed", r.status, f.pstate(t, home, id))
	}
	// Ordinary queue: three partitions named, one item.
	x := fmt.Sprintf("%x", "soon:1")
	form = url.Values{"op": {"delete"}, "q": {"orders"}, "pidx": {"0." + x, "1." + x, "2." + x}, "csrf": {token(t, c, f.QueueURL("orders"))}}
	r := post(t, c, f.Base+"action", form)
	if q := question(t, r.body); !strings.Contains(q, "Delete item &#34;soon:1&#34; of queue &#34;orders&#34;?") {
		t.Errorf("question on one item named thrice: %s", q)
	}
	if n := strings.Count(r.body, `type="hidden" name="idx"`) + strings.Count(r.body, `name="pidx"`); n != 1 {
		t.Errorf("the confirmation carries %d ids, want 1", n)
	}
	form.Set("confirmed", "yes")
	r = post(t, c, f.Base+"action", form)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Deleted item &#34;soon:1&#34;.") || strings.Contains(r.body, "Gone") {
		t.Errorf("delete of one item named thrice: %d\n%.3000s", r.status, r.body)
	}
	// Partitioned queue: the same id in two partitions is two items.
	ctx := context.Background()
	if _, err := f.p.EnqueueAfter(ctx, "keyed", []byte("other"), time.Hour); err != nil {
		t.Fatal(err)
	}
	kh, kr := f.p.PartitionOf(f.keyedKey), f.p.PartitionOf("keyed")
	form = url.Values{"op": {"delete"}, "q": {pname}, "pidx": {fmt.Sprintf("%d.%x", kh, "keyed"), fmt.Sprintf("%d.%x", kr, "keyed"), fmt.Sprintf("%d.%x", kh, "keyed")},
		"csrf": {token(t, c, f.QueueURL(pname))}}
	if q := question(t, post(t, c, f.Base+"action", form).body); !strings.Contains(q, "Delete 2 items of queue") {
		t.Errorf("question on keyed in two partitions, one named twice: %s", q)
	}
}

// TestItemActionOnItsPartition: an action on one item whose partition the
// form names asks about that partition's item and goes back to its page,
// though another item of that id lives in the id's routing partition.
func TestItemActionOnItsPartition(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	ctx := context.Background()
	home, routing := f.p.PartitionOf(f.keyedKey), f.p.PartitionOf("keyed")
	if _, err := f.p.EnqueueAfter(ctx, "keyed", []byte("other"), time.Hour); err != nil {
		t.Fatal(err)
	}
	hn := f.p.Partition(home).Name()
	want := fmt.Sprintf("Delete item &#34;keyed&#34; in partition %d (%s) of queue &#34;jobs&#34;?", home, html.EscapeString(dqweb.Quoted(hn)))
	form := url.Values{"op": {"delete"}, "q": {pname}, "pidx": {fmt.Sprintf("%d.%x", home, "keyed")}, "csrf": {token(t, c, f.QueueURL(pname))}}
	r := post(t, c, f.Base+"action", form)
	if q := question(t, r.body); !strings.Contains(q, want) {
		t.Errorf("question: %s\nwant %s", q, want)
	}
	m := regexp.MustCompile(`<a href="([^"]*)">Cancel</a>`).FindStringSubmatch(r.body)
	wantBack := "/dq/item?" + url.Values{"q": {hn}, "id": {"keyed"}}.Encode()
	if m == nil || html.UnescapeString(m[1]) != wantBack {
		t.Errorf("Cancel goes to %v, want %s (not partition %d's item)", m, wantBack, routing)
	}
	// The list's row form asks the same, in the words of its state.
	body := get(t, c, f.TabURL(pname, "scheduled")+"&cursor=20,20,20").body
	if want := strings.Replace(want, "Delete item", "Delete scheduled item", 1); !strings.Contains(body, `data-confirm="`+want) {
		t.Errorf("the list's row forms of keyed do not ask %s", want)
	}
	// Confirmed, and gone meanwhile: the answer names the partition.
	if _, err := f.p.Partition(home).Cancel(ctx, "keyed"); err != nil {
		t.Fatal(err)
	}
	r = f.paction(t, c, url.Values{"op": {"delete"}, "pidx": {fmt.Sprintf("%d.%x", home, "keyed")}})
	if r.status != http.StatusNotFound || !strings.Contains(r.body, fmt.Sprintf("No item &#34;keyed&#34; in partition %d", home)) || f.pstate(t, routing, "keyed") == 0 {
		t.Errorf("delete of keyed gone from partition %d: %d\n%.3000s", home, r.status, r.body)
	}
}

// TestPartitionedItemPageIsExact: the item page of a partitioned queue
// matches the id exactly, as an ordinary queue's does (the search trims).
func TestPartitionedItemPageIsExact(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	for _, u := range []string{f.ItemURL(pname, " s001 "), f.ItemURL("orders", " soon:1 ")} {
		if r := get(t, c, u); r.status != http.StatusNotFound {
			t.Errorf("%s: %d to %q, want 404", u, r.status, r.header.Get("Location"))
		}
	}
	want := "/dq/item?" + url.Values{"q": {f.p.Partition(f.p.PartitionOf("s001")).Name()}, "id": {"s001"}}.Encode()
	if r := get(t, c, f.QueueURL(pname)+"&find=+s001+"); r.status != http.StatusSeeOther || r.header.Get("Location") != want {
		t.Errorf("search of \" s001 \": %d to %q, want %s", r.status, r.header.Get("Location"), want)
	}
}

// TestCursorBounds: a cursor's offsets are at most 1<<53 each, so their
// sum cannot overflow; its offsets are counted before it is split.
func TestCursorBounds(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	for cur, status := range map[string]int{
		"9223372036854775807,1,0":                                     http.StatusBadRequest,
		"9223372036854775807,9223372036854775807,9223372036854775807": http.StatusBadRequest,
		"9007199254740993,0,0":                                        http.StatusBadRequest,
		"9007199254740992,9007199254740992,9007199254740992":          http.StatusOK,
		"5,5,5":  http.StatusOK,
		"+1,0,0": http.StatusBadRequest,
	} {
		r := get(t, c, f.TabURL(pname, "scheduled")+"&cursor="+url.QueryEscape(cur))
		if r.status != status {
			t.Errorf("cursor %s: %d, want %d", cur, r.status, status)
		}
		if strings.Contains(r.body, "–-") || regexp.MustCompile(`<p class="pager">[^<]*-\d`).MatchString(r.body) {
			t.Errorf("cursor %s: a negative number in the pager", cur)
		}
	}
	// A cursor of a million commas is refused without a million fields.
	long := strings.Repeat(",", 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := dqweb.ParseCursor(long, 3)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "1048577 offsets") {
		t.Errorf("cursor of 1<<20 commas: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("refusing a cursor of 1<<20 commas allocated %d bytes", n)
	}
}

// TestPartitionedNameNearMaxName: a partitioned queue whose name is near
// MaxName has partitions the dashboard cannot open: the search and the
// item page say so (400), and the list links none of them.
func TestPartitionedNameNearMaxName(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	long := strings.Repeat("L", dqweb.MaxName-3)
	p, err := redisq.NewPartitioned(ctx, f.C, long, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.EnqueueAfter(ctx, "x1", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	for _, u := range []string{f.QueueURL(long) + "&find=x1", f.ItemURL(long, "x1")} {
		r := get(t, c, u)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "too long for the dashboard") || !strings.Contains(r.body, "x1") {
			t.Errorf("%.60s: %d to %q, want 400 naming the item\n%.2000s", u, r.status, r.header.Get("Location"), r.body)
		}
	}
	r := get(t, c, f.TabURL(long, "scheduled"))
	if r.status != http.StatusOK || strings.Contains(r.body, `href=""`) || !strings.Contains(r.body, `data-part="`+fmt.Sprint(p.PartitionOf("x1"))+`"`) {
		t.Errorf("list: %d, or an empty link, or no partition column\n%.3000s", r.status, r.body)
	}
	if r := get(t, c, f.QueueURL(long)); r.status != http.StatusOK || strings.Contains(r.body, `href=""`) {
		t.Errorf("queue page: %d, or an empty link", r.status)
	}
}

// TestPidxIsStrict: a pidx partition is ASCII digits without sign or
// leading zero.
func TestPidxIsStrict(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	tok := token(t, c, f.QueueURL(pname))
	for _, px := range []string{"+1.6b", "-0.6b", "01.6b", " 1.6b", "1_0.6b", "0x1.6b", "256.6b", "1.", ".6b"} {
		r := post(t, c, f.Base+"action", url.Values{"op": {"delete"}, "q": {pname}, "pidx": {px}, "csrf": {tok}})
		if r.status != http.StatusBadRequest {
			t.Errorf("pidx %q: %d, want 400", px, r.status)
		}
	}
	for _, px := range []string{"0.6b", "2.6b"} {
		if r := post(t, c, f.Base+"action", url.Values{"op": {"delete"}, "q": {pname}, "pidx": {px}, "csrf": {tok}}); r.status != http.StatusOK {
			t.Errorf("pidx %q: %d, want 200", px, r.status)
		}
	}
}

// idHook counts the commands (piped or not) that name one of ids.
type idHook struct {
	ids map[string]bool
	n   *atomic.Int64
}

func (idHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h idHook) count(cmd redis.Cmder) {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && h.ids[s] {
			h.n.Add(1)
			return
		}
	}
}

func (h idHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h idHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
	}
}

// TestSelectionByIDIsBounded: a selection by id (no partitions) on a
// partitioned queue looks each id up in its routing partition only: a
// round trip or two per id, not one per partition; an id elsewhere is
// left alone and named. A single id is still looked for everywhere.
func TestSelectionByIDIsBounded(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	ctx := context.Background()
	big, err := redisq.NewPartitioned(ctx, f.C, "wide", 64)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	hooked := redis.NewClient(f.C.Options())
	t.Cleanup(func() { _ = hooked.Close() })
	h := idHook{ids: map[string]bool{}, n: new(atomic.Int64)}
	var idx []string
	for i := range dqweb.MaxSelect {
		id := fmt.Sprintf("absent:%d", i)
		h.ids[id] = true
		idx = append(idx, fmt.Sprintf("%x", id))
	}
	hooked.AddHook(h)
	base := serve(t, hooked, dqweb.Options{})
	c := client(t)
	tok := token(t, c, base+"queue?q=wide")
	r := post(t, c, base+"action", url.Values{"op": {"delete"}, "q": {"wide"}, "idx": idx, "csrf": {tok}, "confirmed": {"yes"}})
	if n := h.n.Load(); r.status != http.StatusNotFound || n > 3*int64(dqweb.MaxSelect) {
		t.Errorf("%d absent ids of a queue of 64 partitions: %d, %d commands naming them; want 404, at most %d", dqweb.MaxSelect, r.status, n, 3*dqweb.MaxSelect)
	}
	// On jobs: s010 is in its routing partition, keyed is not.
	c = client(t)
	r = f.paction(t, c, url.Values{"op": {"delete"}, "idx": {fmt.Sprintf("%x", "s010"), fmt.Sprintf("%x", "keyed")}})
	home := f.p.PartitionOf(f.keyedKey)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Deleted 1 item") || !strings.Contains(r.body, "not in their routing partitions") ||
		f.pstate(t, f.p.PartitionOf("s010"), "s010") != 0 || f.pstate(t, home, "keyed") != redisq.StateScheduled {
		t.Errorf("delete s010 and keyed by idx: %d\n%.3000s", r.status, r.body)
	}
	r = f.paction(t, c, url.Values{"op": {"delete"}, "idx": {fmt.Sprintf("%x", "keyed")}})
	if r.status != http.StatusOK || f.pstate(t, home, "keyed") != 0 {
		t.Errorf("delete keyed alone by idx: %d\n%.3000s", r.status, r.body)
	}
}

// TestBadTableIsStructural: only redisq's own refusal of the partition
// table of the queue is a bad table, not any error whose text holds the
// words (a queue may be named so).
func TestBadTableIsStructural(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	name := "x bad partition table"
	timeout := fmt.Errorf("redisq: opening queue %q: %w", name+"~0.0", context.DeadlineExceeded)
	if dqweb.BadTable(timeout) {
		t.Errorf("a timeout on a partition of %q is a bad table", name)
	}
	if dqweb.BadTable(errors.New(name)) {
		t.Errorf("an error holding the words is a bad table")
	}
	f.C.HSet(ctx, "{dq:"+name+"}:parts", "n", "2", "v", "1", "p0", "zz", "p1", "zz")
	_, err := redisq.OpenPartitioned(ctx, f.C, name)
	if err == nil || !dqweb.BadTable(err) {
		t.Fatalf("redisq's refusal %v is not a bad table", err)
	}
	c := client(t)
	if r := get(t, c, f.QueueURL(name)); r.status != http.StatusBadGateway || !strings.Contains(r.body, "bad partition table") {
		t.Errorf("queue with a bad table: %d", r.status)
	}
}

// TestSearchBoxIsNotRaw: the search box is not prefilled with an id that
// a page shows only escaped; the notice names it escaped.
func TestSearchBoxIsNotRaw(t *testing.T) {
	f := newPFixture(t, dqweb.Options{})
	c := client(t)
	id := "i\u202e<b>\xfe"
	for _, q := range []string{"orders", pname} {
		r := get(t, c, f.QueueURL(q)+"&find="+url.QueryEscape(id))
		if r.status != http.StatusNotFound || !strings.Contains(r.body, `No item &#34;i\u202e&lt;b&gt;\xfe&#34;`) {
			t.Errorf("%s: search of a hostile id: %d, or the notice does not name it escaped", q, r.status)
		}
		r.status = http.StatusOK
		checkPage(t, q+": search of a hostile id", r, 200<<10)
		r = get(t, c, f.QueueURL(q)+"&find=nope+%C3%A9")
		if !strings.Contains(r.body, `name="find" value="nope é"`) {
			t.Errorf("%s: the search box does not keep a plain id", q)
		}
	}
}
