package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// evilReason is a dead reason with an escape sequence, a bidi override
// and an invalid byte.
const evilReason = "bad\x1b[2J\u202eaddr\xff"

// kill makes dead items of the fixture's queue: n items prefix0..,
// dead-lettered with reason, in that order.
func (f *fixture) kill(t *testing.T, prefix string, n int, reason string) {
	t.Helper()
	ctx := context.Background()
	var items []redisq.EnqueueItem
	for i := range n {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprintf("%s%d", prefix, i), At: time.Unix(1, 0)})
	}
	enqueueAll(t, f.q, items)
	for left := n; left > 0; {
		ms, err := f.q.TakeBatch(ctx, min(left, redisq.MaxBatch))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if _, err := m.DeadLetter(ctx, reason); err != nil {
				t.Fatal(err)
			}
		}
		left -= len(ms)
	}
}

// rowOf returns the line of out that ends with suffix.
func rowOf(out, suffix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, suffix) {
			return l
		}
	}
	return ""
}

// TestDeadReasons (issue 24, item 15, "dead letters by cause"): reasons
// groups the dead items by reason, most frequent first, with the first and
// last death (absolute and relative) and says when it grouped only the
// oldest; list -reason lists one group; hostile reasons are escaped.
func TestDeadReasons(t *testing.T) {
	f := newFixture(t, "orders") // d1 "max attempts: smtp 550", d2 "bad address"
	f.kill(t, "smtp", 3, "max attempts: smtp 550")
	f.kill(t, "evil", 1, evilReason)
	a := []string{"-redis", f.addr}

	r := dqctl(t, "", append(a, "reasons", "orders")...)
	r.want(t, exitOK, "COUNT  FIRST", "LAST", "REASON\n", `6 dead items of queue "orders" in 3 groups`,
		"one group: dqctl list orders dead -reason R lists it,\n  dqctl requeue (or delete-dead) orders -reason R acts on it\n")
	stamp := `\S+ ago \((\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\dZ\)`
	for _, want := range []string{`(?m)^4 +` + stamp + ` +` + stamp + ` +"max attempts: smtp 550"$`,
		`(?m)^1 +` + stamp + ` +` + stamp + ` +"bad address"$`, `(?m)^1 .* "bad\\x1b\[2J\\u202eaddr\\xff"$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("reasons lacks %s:\n%s", want, r.stdout)
		}
	}
	if i, j := strings.Index(r.stdout, "smtp 550"), strings.Index(r.stdout, "bad address"); i < 0 || j < i {
		t.Errorf("not the most frequent first:\n%s", r.stdout)
	}
	var sum struct {
		Queue    string
		Dead     int64
		Examined int64
		Complete bool
		Reasons  []struct {
			Reason      string
			Count       int64
			First, Last time.Time
		}
	}
	r = dqctl(t, "", append(a, "reasons", "orders", "-json")...)
	r.want(t, exitOK, `\u001b[2J\u202eaddr\ufffd`)
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Queue != "orders" || sum.Dead != 6 || sum.Examined != 6 || !sum.Complete ||
		len(sum.Reasons) != 3 || sum.Reasons[0].Count != 4 || sum.Reasons[0].Reason != "max attempts: smtp 550" || sum.Reasons[0].First.After(sum.Reasons[0].Last) {
		t.Fatalf("reasons -json: %v %+v\n%s", err, sum, r.stdout)
	}
	// The oldest 2: d1 (smtp 550) and d2 (bad address).
	r = dqctl(t, "", append(a, "reasons", "orders", "-limit", "2")...)
	r.want(t, exitOK, `grouped the oldest 2 of 6 dead items of queue "orders", in 2 groups (-limit 2: up to 100000)`)
	if strings.Contains(r.stdout, "addr\\xff") {
		t.Errorf("-limit 2 grouped more than the oldest 2:\n%s", r.stdout)
	}
	dqctl(t, "", append(a, "reasons", "orders", "-limit", "0")...).want(t, exitUsage, "-limit must be in 1..100000")
	dqctl(t, "", append(a, "reasons", "orders:eu")...).want(t, exitNotFound, `no queue named "orders:eu"`)
	f.neighbour(t)
	dqctl(t, "", append(a, "reasons", "orders:eu")...).want(t, exitOK, `no dead items in queue "orders:eu"`)

	// One group, by its exact reason.
	r = dqctl(t, "", append(a, "list", "orders", "dead", "-reason", "max attempts: smtp 550")...)
	r.want(t, exitOK, "d1 ", "smtp0 ", "smtp2 ", `4 dead items died of "max attempts: smtp 550" among dead items 1-6 of 6`+"\n")
	if strings.Contains(r.stdout, "d2 ") || strings.Contains(r.stdout, "evil0") {
		t.Errorf("list -reason lists another reason's items:\n%s", r.stdout)
	}
	dqctl(t, "", append(a, "list", "orders", "dead", "-reason", evilReason)...).want(t, exitOK, "evil0 ", `1 dead item died of "bad\x1b[2J\u202eaddr\xff"`)
	dqctl(t, "", append(a, "list", "orders", "dead", "-reason", "max attempts")...).want(t, exitOK, `no dead item died of "max attempts" among dead items 1-6 of 6`)
	dqctl(t, "", append(a, "list", "orders", "scheduled", "-reason", "x")...).want(t, exitUsage, "-reason filters dead items: give the state dead, not scheduled")
	dqctl(t, "", append(a, "list", "orders", "dead", "-reason", "")...).want(t, exitUsage, "-reason is empty")
}

// TestListReasonPages: a page of list -reason examines at most 1000 dead
// items, so the group's items after 1000 others come on a later page, which
// the page before names, as list does.
func TestListReasonPages(t *testing.T) {
	f := newFixture(t, "orders")
	f.kill(t, "flood", 1100, "timeout")
	f.kill(t, "rare", 2, "rare")
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "list", "orders", "dead", "-reason", "rare", "-limit", "10")...)
	r.want(t, exitOK, `no dead item died of "rare" among dead items 1-1,000 of 1,104;`+"\n  next page: -offset 1000\n")
	r = dqctl(t, "", append(a, "list", "orders", "dead", "-reason", "rare", "-limit", "10", "-offset", "1000")...)
	r.want(t, exitOK, "rare0 ", "rare1 ", `2 dead items died of "rare" among dead items 1,001-1,104 of 1,104`+"\n")
	r = dqctl(t, "", append(a, "list", "orders", "dead", "-reason", "timeout", "-limit", "3")...)
	r.want(t, exitOK, "flood0 ", "flood2 ", `3 dead items died of "timeout" among dead items 1-5 of 1,104;`+"\n  next page: -offset 5\n")
	// Unfiltered, counts have thousands separators too (not the offsets).
	dqctl(t, "", append(a, "list", "orders", "dead", "-limit", "1", "-offset", "1100")...).want(t, exitOK, "1,101-1,101 of 1,104 dead; next page: -offset 1101\n")
	dqctl(t, "", append(a, "list", "orders", "dead", "-offset", "2000", "-reason", "rare")...).want(t, exitOK, "(no dead items at offset 2000; 1,104 in all)")
}

// TestDeadByReason: requeue and delete-dead -reason act on one group,
// after a confirmation that says how many (unless -yes); a reason no dead
// item died of is not found and changes nothing; -reason excludes ids and
// -all.
func TestDeadByReason(t *testing.T) {
	f := newFixture(t, "orders")
	f.kill(t, "smtp", 2, "max attempts: smtp 550")
	f.kill(t, "evil", 1, evilReason)
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	dead := func() int64 {
		t.Helper()
		st, err := f.q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Dead
	}
	dqctl(t, "n\n", append(a, "requeue", "orders", "-reason", "max attempts: smtp 550")...).
		want(t, exitAborted, `requeue the 3 dead items of queue "orders" that died of "max attempts: smtp 550"? [y/N] `, "aborted; nothing changed")
	if n := dead(); n != 5 {
		t.Fatalf("an aborted requeue -reason changed the dead set: %d", n)
	}
	dqctl(t, "y\n", append(a, "requeue", "orders", "-reason", "max attempts: smtp 550")...).
		want(t, exitOK, `requeued 3 dead items of queue "orders" that died of "max attempts: smtp 550"`)
	for _, id := range []string{"d1", "smtp0", "smtp1"} {
		if it, err := f.q.Get(ctx, id); err != nil || it.State != redisq.StateScheduled || it.Attempts != 0 {
			t.Errorf("%s after requeue -reason: %+v %v", id, it, err)
		}
	}
	if it, err := f.q.Get(ctx, "d2"); err != nil || it.State != redisq.StateDead {
		t.Errorf("d2 (another reason) after requeue -reason: %+v %v", it, err)
	}
	dqctl(t, "", append(a, "delete-dead", "orders", "-reason", evilReason, "-yes")...).
		want(t, exitOK, `deleted 1 dead item of queue "orders" that died of "bad\x1b[2J\u202eaddr\xff"`)
	if _, err := f.q.Get(ctx, "evil0"); err != redisq.ErrNotFound {
		t.Errorf("evil0 after delete-dead -reason: %v", err)
	}
	dqctl(t, "", append(a, "delete-dead", "orders", "-reason", "bad")...).
		want(t, exitNotFound, `no dead item of queue "orders" died of "bad"; nothing changed (dqctl reasons lists the reasons)`)
	dqctl(t, "", append(a, "delete-dead", "orders", "-reason", "bad address")...).want(t, exitAborted, `delete 1 dead item of queue "orders" that died of "bad address"?`)
	if n := dead(); n != 1 {
		t.Fatalf("dead %d, want d2", n)
	}
	f.audit(t)
	for _, args := range [][]string{{"orders", "d2", "-reason", "x"}, {"orders", "-all", "-reason", "x"}} {
		dqctl(t, "", append(append(a, "requeue"), args...)...).want(t, exitUsage, "give item ids or -all or -reason, one of them, not several")
	}
	dqctl(t, "", append(a, "delete-dead", "orders")...).want(t, exitUsage, "give item ids or -all or -reason, one of them, not none")
	dqctl(t, "", append(a, "requeue", "orders", "-reason", "")...).want(t, exitUsage, "-reason is empty")
}

// TestPartitionedReasons: reasons merges the partitions; requeue -reason
// acts on every partition.
func TestPartitionedReasons(t *testing.T) {
	f := newPartFixture(t) // d0 "bad d0", d1 "bad d1", each in its partition
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "reasons", "orders")...)
	r.want(t, exitOK, `"bad d0"`, `"bad d1"`, `2 dead items of queue "orders" (3 partitions) in 2 groups`)
	dqctl(t, "", append(a, "reasons", "orders", "-limit", "1")...).want(t, exitOK, `2 dead items of queue "orders" (3 partitions) in 2 groups`)
	r = dqctl(t, "", append(a, "list", "orders", "dead", "-reason", "bad d1")...)
	r.want(t, exitOK, "d1 ", fmt.Sprintf(`1 dead item died of "bad d1" among dead items 1-2 of 2 in 3 partitions`))
	dqctl(t, "", append(a, "requeue", "orders", "-reason", "bad d1", "-yes")...).want(t, exitOK, `requeued 1 dead item of queue "orders" (3 partitions) that died of "bad d1"`)
	if it, err := f.p.Get(ctx, "d1"); err != nil || it.State != redisq.StateScheduled {
		t.Errorf("d1 after requeue -reason: %+v %v", it, err)
	}
	if it, err := f.p.Get(ctx, "d0"); err != nil || it.State != redisq.StateDead {
		t.Errorf("d0 after requeue -reason of d1's: %+v %v", it, err)
	}
	// A partitioned queue that never held an item has no dead items.
	empty, err := redisq.NewPartitioned(ctx, f.c, "empty", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	dqctl(t, "", append(a, "reasons", "empty")...).want(t, exitOK, `no dead items in queue "empty" (3 partitions)`)
	dqctl(t, "", append(a, "requeue", "empty", "-reason", "x")...).want(t, exitNotFound, "nothing changed")
}
