package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// readRun is one run of a dqctl command that only reads, and what its
// output must hold to show that it read what it should.
type readRun struct {
	args []string
	want []string
}

// readRuns are the runs of every dqctl command that does not write, by
// command, on the data of TestACLEveryRead: every state, format and kind
// of queue each command reads. serve and serve-metrics are run by the
// test itself (pages and a scrape).
var readRuns = map[string][]readRun{
	"queues": {{[]string{"queues"}, []string{"orders "}}, {[]string{"queues", "-scan"}, []string{"orders "}},
		{[]string{"queues", "-sort", "failed"}, []string{"orders "}}, {[]string{"queues", "-json"}, []string{`"name": "orders"`}},
		{[]string{"queues", "-partitions"}, []string{"parts (2 partitions)"}}},
	"stats": {{[]string{"stats", "orders"}, []string{"dead 2"}}, {[]string{"stats", "-json", "orders"}, []string{`"dead": 2`}},
		{[]string{"stats", "parts"}, []string{"2 partitions"}}, {[]string{"stats", "limited"}, []string{`queue "limited"`}}},
	"workers": {{[]string{"workers", "orders"}, []string{"1 live worker"}}, {[]string{"workers", "parts"}, []string{"no live worker"}}},
	"list": {{[]string{"list", "orders", "scheduled"}, []string{"s1 "}}, {[]string{"list", "orders", "inflight"}, []string{"f1 "}},
		{[]string{"list", "orders", "dead"}, []string{"d1 "}}, {[]string{"list", "orders", "completed", "-payloads"}, []string{"c1 "}},
		{[]string{"list", "orders", "dead", "-reason", "bad address"}, []string{"d2 "}},
		{[]string{"list", "orders", "completed", "-kind", "refund"}, []string{"c1 "}},
		{[]string{"list", "-json", "-payloads", "orders", "scheduled"}, []string{`"id": "s1"`}},
		{[]string{"list", "parts", "scheduled"}, []string{"p1 "}}},
	"show": {{[]string{"show", "orders", "s1"}, []string{`"order": 1`}}, {[]string{"show", "orders", "c1"}, []string{"completed"}},
		{[]string{"show", "-json", "orders", "d1"}, []string{`"dead_reason": "max attempts: smtp 550"`}}, {[]string{"show", "parts", "p1"}, []string{"scheduled"}}},
	"reasons": {{[]string{"reasons", "orders"}, []string{`"bad address"`}}},
	"unique":  {{[]string{"unique", "orders", "tenant"}, []string{`unique key "tenant": held by item "u1"`}}},
	"limits": {{[]string{"limits", "limited"}, []string{"QUEUE RATE LIMIT", "5 per 1m0s", "2/5", `"r"`, "1 per 1h0m0s", `"c"`}},
		{[]string{"limits", "limited", "c"}, []string{`"c"`, "1/1"}}},
	"recurring": {{[]string{"recurring", "orders"}, []string{`hourly  "every 1h0m0s"  in `}},
		{[]string{"recurring", "-json", "orders"}, []string{`"name": "hourly"`}}},
	"watch":         {{[]string{"watch", "-n", "2", "-interval", "10ms", "orders"}, []string{"due in the next"}}},
	"serve":         nil,
	"serve-metrics": nil,
}

// TestACLEveryRead (issue 41, item 12): every dqctl command that only
// reads runs for the documented read-only user dqreader, and for the
// operator, with the ACL rules of docs/operations.md on a real server:
// dqctl unique called GET (and PTTL), which the rules lacked. A read
// command missing from readRuns fails the test, so a new one is tried
// too; so does a refusal, whatever the command prints.
func TestACLEveryRead(t *testing.T) {
	for _, c := range commands() {
		if _, ok := readRuns[c.name]; ok == c.write {
			t.Errorf("command %s: write %v, and in readRuns %v", c.name, c.write, ok)
		}
	}
	f := newFixture(t, "orders")
	ctx := context.Background()
	for _, args := range aclLines(t) {
		if err := f.c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A completed item, a unique window, a registration and a live
	// worker in orders; a partitioned queue; limits with waiting items,
	// and the queue's own rate limit, with its claims.
	complete(t, f.q, "c1", redisq.Job{Kind: "refund", Retention: time.Hour}, []byte(`{"ok":true}`))
	_, err := f.q.Add(ctx, redisq.EnqueueItem{ID: "u1", After: time.Hour, Job: redisq.Job{UniqueKey: "tenant", UniqueFor: time.Hour}})
	must(err)
	_, err = f.q.Register(ctx, "hourly", redisq.Every(time.Hour), nil)
	must(err)
	startWorker(t, f.q, "consumer", 1)
	waitWorkers(t, f.q, "the worker beats", func(ws []redisq.WorkerInfo) bool { return len(ws) == 1 })
	p, err := redisq.NewPartitioned(ctx, f.c, "parts", 2)
	must(err)
	defer p.Close()
	_, err = p.EnqueueAfter(ctx, "p1", nil, time.Hour)
	must(err)
	lim, err := redisq.New(ctx, f.c, "limited")
	must(err)
	defer lim.Close()
	must(lim.SetRateLimit(ctx, "r", redisq.RateLimit{N: 1, Per: time.Hour}))
	must(lim.SetConcurrencyLimit(ctx, "c", 1))
	must(lim.SetQueueRateLimit(ctx, redisq.RateLimit{N: 5, Per: time.Minute}))
	for i := range 3 {
		for _, k := range []string{"r", "c"} {
			_, err := lim.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprint(k, i), At: time.Unix(1, 0), Job: redisq.Job{LimitKey: k}})
			must(err)
		}
	}
	if ms, err := lim.TakeBatch(ctx, 10); err != nil || len(ms) != 2 {
		t.Fatalf("took %d (%v), want one of each key: the others wait", len(ms), err)
	}

	// refused reports whether output says that the user may not do
	// something.
	refused := func(out string) bool {
		return strings.Contains(out, "NOPERM") || strings.Contains(out, "can't run this command") || strings.Contains(out, "may not")
	}
	for _, user := range []string{"dqreader", "dqoperator"} {
		t.Run(user, func(t *testing.T) {
			as := []string{"-redis", f.addr, "-user", user, "-password", "pw"}
			for _, name := range slices.Sorted(func(yield func(string) bool) {
				for n := range readRuns {
					if !yield(n) {
						return
					}
				}
			}) {
				for _, run := range readRuns[name] {
					r := dqctl(t, "", append(as, run.args...)...)
					if r.code != exitOK || refused(r.stdout+r.stderr) {
						t.Errorf("%v as %s: exit %d\n%s%s", run.args, user, r.code, r.stdout, r.stderr)
						continue
					}
					for _, w := range run.want {
						if !strings.Contains(r.stdout, w) {
							t.Errorf("%v as %s: the output lacks %q\n%s", run.args, user, w, r.stdout)
						}
					}
				}
			}

			u, stop := serving(t, append(as, "serve", "-listen", "127.0.0.1:0", "-readonly")...)
			hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			for page, want := range map[string]int{"": 200, "queue?q=orders": 200, "queue?q=orders&state=scheduled": 200,
				"queue?q=orders&state=inflight": 200, "queue?q=orders&state=dead": 200, "queue?q=orders&state=completed": 200,
				"queue?q=orders&state=recurring": 200, "queue?q=orders&state=workers": 200, "queue?q=orders&state=dead&reason=bad+address": 200,
				"queue?q=orders&state=completed&kind=refund": 200, "item?q=orders&id=d1": 200, "item?q=orders&id=c1": 200,
				"queue?q=limited": 200, "queue?q=limited&limitkey=r": 200, "queue?q=parts": 200, "queue?q=parts&state=scheduled": 200, "queue?q=parts&state=workers": 200,
				"item?q=parts&id=p1": http.StatusSeeOther /* to its partition's page */} {
				code, body := httpGet(t, hc, u+page)
				if code != want || refused(body) || strings.Contains(body, "cannot be read") {
					t.Errorf("dashboard %s as %s: %d, want %d\n%.3000s", page, user, code, want, body)
				}
			}
			stop()

			u, stop = serving(t, append(as, "serve-metrics", "-listen", "127.0.0.1:0")...)
			code, body := httpGet(t, http.DefaultClient, u)
			stop()
			for _, w := range []string{`redisq_up{queue="orders"} 1`, `redisq_up{queue="limited"} 1`, `redisq_recurring_registrations{queue="orders"} 1`,
				`redisq_rate_limit_waiting_items{key="r",queue="limited"} 2`, `redisq_concurrency_waiting_items{key="c",queue="limited"} 2`,
				`redisq_queue_rate_limit_claims{queue="limited"} 5`, `redisq_queue_rate_limit_used_claims{queue="limited"} 2`} {
				if !strings.Contains(body, w) {
					t.Errorf("metrics as %s lack %s", user, w)
				}
			}
			if code != http.StatusOK || strings.Contains(body, "scrape_error") || strings.Contains(body, "discovery_error") {
				t.Errorf("metrics as %s: %d\n%s", user, code, body)
			}
		})
	}
}
