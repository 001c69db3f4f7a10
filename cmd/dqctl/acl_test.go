package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// aclLines returns the ACL SETUSER lines of docs/operations.md by user,
// as redis-server takes them, with the password "pw".
func aclLines(t *testing.T) map[string][]interface{} {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	users := map[string][]interface{}{}
	for _, m := range regexp.MustCompile(`(?m)^ACL SETUSER (dq\w+) (.*)$`).FindAllStringSubmatch(string(doc), -1) {
		args := []interface{}{"ACL", "SETUSER", m[1]}
		for _, f := range strings.Fields(m[2]) {
			if f == ">PASSWORD" {
				f = ">pw"
			}
			args = append(args, f)
		}
		users[m[1]] = args
	}
	for _, u := range []string{"dqreader", "dqproducer", "dqconsumer", "dqoperator"} {
		if users[u] == nil {
			t.Fatalf("docs/operations.md has no ACL SETUSER line for %s", u)
		}
	}
	return users
}

// httpGet GETs u and returns the status and body.
func httpGet(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// dashboardAction posts the confirmed action form to the dashboard at u,
// with a CSRF token of its own, and returns the status and body of its
// result page (the POST redirects to it).
func dashboardAction(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	_, page := httpGet(t, http.DefaultClient, u+"queue?q="+url.QueryEscape(form.Get("q")))
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if tok == nil {
		t.Fatal("no CSRF token")
	}
	form.Set("csrf", tok[1])
	form.Set("confirmed", "yes")
	req, _ := http.NewRequest(http.MethodPost, u+"action", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.AddCookie(&http.Cookie{Name: "dqweb_csrf", Value: tok[1]})
	resp, err := http.DefaultClient.Do(req) // follows the redirect with the cookie
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestACLRules runs the ACL users of docs/operations.md against a real
// redis-server: dqreader's writes are refused (its reads are
// TestACLEveryRead's), producers as dqproducer (which
// cannot take), consumers as dqconsumer (a Worker keeping a recurring
// registration going), and every admin command and the dashboard's
// actions as dqoperator. Each reads or changes recurring registrations
// too.
func TestACLRules(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	for _, args := range aclLines(t) {
		if err := f.c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	as := func(user string) []string { return []string{"-redis", f.addr, "-user", user, "-password", "pw"} }
	client := func(user string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: f.addr, Username: user, Password: "pw", MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	stats := func() redisq.Stats {
		t.Helper()
		st, err := f.q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	// What docs/operations.md says of +@read: not enough, with an error
	// that names the script and the line of its TIME call, not TIME.
	t.Run("read category", func(t *testing.T) {
		if err := f.c.Do(ctx, "ACL", "SETUSER", "dqcategory", "on", ">pw", "~{dq:*}:*", "~{dq}:queues", "+@read", "-@write", "+evalsha", "+eval").Err(); err != nil {
			t.Fatal(err)
		}
		q, err := redisq.New(ctx, client("dqcategory"), "orders", redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
		if err != nil {
			t.Fatal(err)
		}
		_, err = q.Stats(ctx)
		if err == nil || !regexp.MustCompile(`can't run this command or subcommand script: [0-9a-f]{40}, on @user_script:\d+\.`).MatchString(err.Error()) {
			t.Errorf("Stats with +@read -@write: %v", err)
		}
	})

	t.Run("reader", func(t *testing.T) {
		a := as("dqreader")
		if _, err := f.q.Register(ctx, "hourly", redisq.Every(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
		defer f.q.Unregister(ctx, "hourly")
		// Its reads are TestACLEveryRead's.

		// Its writes are refused, and change nothing. Issue 24, item 14:
		// they told it to grant a write ("allow it (ACL SETUSER ...
		// +zrem"), and purge and requeue -all printed "0 ... items" first.
		before := stats()
		for _, args := range [][]string{{"purge", "-yes", "orders", "dead"}, {"requeue", "orders", "d1"}, {"requeue", "-yes", "-all", "orders"},
			{"delete-dead", "-yes", "-all", "orders"}, {"delete", "orders", "s1"},
			{"pause", "orders"}, {"destroy", "-yes", "orders"}, {"register", "orders", "x", "every 1h"}, {"unregister", "-yes", "orders", "hourly"},
			{"rate-limit", "orders", "k", "1/1s"}, {"concurrency-limit", "orders", "k", "1"}, {"queue-rate-limit", "orders", "1/1s"}} {
			r := dqctl(t, "", append(a, args...)...)
			if r.code != exitError || !strings.Contains(r.stderr, "can't run this command") && !strings.Contains(r.stderr, "NOPERM") {
				t.Errorf("%v as dqreader: exit %d\n%s", args, r.code, r.stderr)
			}
			if strings.Contains(r.stderr, "ACL SETUSER") || strings.Contains(r.stderr, "can't run this command") && !strings.Contains(r.stderr, "run it as a user that may change queues") {
				t.Errorf("%v as dqreader: the hint is not to run it as a user that may change queues:\n%s", args, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("%v as dqreader printed %q before its error", args, r.stdout)
			}
		}
		if after := stats(); after.Dead != before.Dead || after.Scheduled != before.Scheduled || after.Paused ||
			after.RateLimits != 0 || after.ConcurrencyLimits != 0 || after.QueueRateLimit.N != 0 {
			t.Errorf("dqreader changed the queue: %+v", after)
		}
		if regs, err := f.q.Registrations(ctx); err != nil || len(regs) != 1 {
			t.Errorf("dqreader changed the registrations: %d %v", len(regs), err)
		}
		// A dashboard served as dqreader without -readonly: its actions
		// fail saying to serve it read-only (issue 24, item 14: they said
		// to grant the write).
		u, stop := serving(t, append(a, "serve", "-listen", "127.0.0.1:0")...)
		code, body := dashboardAction(t, u, url.Values{"op": {"purge"}, "state": {"dead"}, "q": {"orders"}})
		stop()
		if code != http.StatusBadGateway || !strings.Contains(body, "the dashboard&#39;s Redis user may not change queue &#34;orders&#34;") ||
			!strings.Contains(body, "-readonly") || strings.Contains(body, "ACL SETUSER") {
			t.Errorf("a purge on the dashboard as dqreader: %d\n%s", code, body)
		}
		if err := client("dqreader").Set(ctx, "{dq:orders}:x", 1, 0).Err(); err == nil {
			t.Error("dqreader may SET")
		}

		// A queue of the format before the sequence hash (its seq a
		// string) takes a writer to convert: the reader fails until a
		// consumer has opened it.
		if err := f.c.Set(ctx, "{dq:legacy}:seq", "3", 0).Err(); err != nil {
			t.Fatal(err)
		}
		// Issue 24, item 14: it said "upgrading queue", and "allow it +get".
		r := dqctl(t, "", append(a, "stats", "legacy")...)
		r.want(t, exitError, `queue "legacy" is stored in the format of an older redisq, which opening it converts`, "open it once as a producer or consumer")
		if strings.Contains(r.stderr, "upgrading") || strings.Contains(r.stderr, "ACL SETUSER") {
			t.Errorf("opening a legacy queue as dqreader: %s", r.stderr)
		}
		legacy, err := redisq.New(ctx, client("dqconsumer"), "legacy")
		if err != nil {
			t.Fatal(err)
		}
		_ = legacy.Close()
		dqctl(t, "", append(a, "stats", "legacy")...).want(t, exitOK, `queue "legacy"`)
	})

	t.Run("producer", func(t *testing.T) {
		c := client("dqproducer")
		q, err := redisq.New(ctx, c, "jobs") // the eviction check is skipped: no CONFIG GET
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(q.Enqueue(ctx, "a", []byte("x"), time.Now().Add(time.Hour)))
		_, err = q.EnqueueAfter(ctx, "b", []byte("x"), time.Hour)
		must(err)
		res, err := q.EnqueueMany(ctx, []redisq.EnqueueItem{{ID: "c", After: time.Hour}, {ID: "d"}, {ID: "a"}})
		must(err)
		if res[0].Err != nil || res[1].Err != nil || !errors.Is(res[2].Err, redisq.ErrDuplicate) {
			t.Fatalf("EnqueueMany: %+v", res)
		}
		_, err = q.Schedule(ctx, "e", nil, time.Now().Add(time.Minute))
		must(err)
		_, err = q.ScheduleAfter(ctx, "e", []byte("y"), 2*time.Minute)
		must(err)
		_, err = q.Cancel(ctx, "a")
		must(err)
		must(q.Reschedule(ctx, "b", time.Now().Add(time.Minute)))
		_, err = q.RescheduleAfter(ctx, "c", time.Second)
		must(err)
		// A service registers its recurring jobs at start.
		_, err = q.Register(ctx, "sweep", redisq.Every(time.Hour), []byte("x"), redisq.CatchUp(1))
		must(err)
		if out, err := q.Register(ctx, "sweep", redisq.Every(time.Minute), nil); err != nil || out != redisq.RegistrationUpdated {
			t.Fatalf("Register again as dqproducer: %v %v", out, err)
		}
		_, err = q.Register(ctx, "gone", redisq.Every(time.Hour), nil)
		must(err)
		_, err = q.Unregister(ctx, "gone")
		must(err)
		if names, err := redisq.ListQueues(ctx, f.c); err != nil || !strings.Contains(fmt.Sprint(names), "jobs") {
			t.Errorf("the producer's queue is not registered: %v %v", names, err)
		}
		// It cannot take.
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = q.Take(tctx)
		cancel()
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "can't run this command") {
			t.Errorf("Take as dqproducer: %v", err)
		}
	})

	t.Run("consumer", func(t *testing.T) {
		admin, err := redisq.New(ctx, f.c, "work")
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		for i := range 8 {
			// Due long ago: all are due at the TakeBatch below (an item
			// due "now" is due at the next ms of Redis TIME).
			if err := admin.Enqueue(ctx, fmt.Sprint("w", i), nil, time.Unix(1, 0)); err != nil {
				t.Fatal(err)
			}
		}
		q, err := redisq.New(ctx, client("dqconsumer"), "work", redisq.WithMaxAttempts(2), redisq.WithVisibilityTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		m, err := q.Take(ctx)
		must(err)
		must(m.Extend(ctx, time.Minute))
		must(m.Ack(ctx))
		ms, err := q.TakeBatch(ctx, 3)
		must(err)
		if len(ms) != 3 {
			t.Fatalf("TakeBatch took %d", len(ms))
		}
		for _, err := range q.AckMany(ctx, ms[:1]) {
			must(err)
		}
		must(ms[1].Nack(ctx))
		_, err = ms[2].DeadLetter(ctx, "bad")
		must(err)
		m, err = q.AckTake(ctx, nil)
		must(err)
		m, err = q.AckTake(ctx, m)
		must(err)
		_, err = m.NackWith(ctx, redisq.NackReason("later"), redisq.NackDelay(time.Millisecond))
		must(err)
		_, err = q.Stats(ctx)
		must(err)
		// take takes until it gets id, acking the others (a nacked item
		// comes back after its backoff, at any point).
		take := func(id string) *redisq.Message {
			t.Helper()
			for {
				tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				m, err := q.Take(tctx)
				cancel()
				must(err)
				if m.ID == id {
					return m
				}
				must(m.Ack(ctx))
			}
		}
		// Wait for an item due in 300ms (the timer), and for one enqueued
		// while waiting (the wake marker).
		_, err = admin.EnqueueAfter(ctx, "timer", nil, 300*time.Millisecond)
		must(err)
		must(take("timer").Ack(ctx))
		go func() {
			time.Sleep(200 * time.Millisecond)
			_, _ = admin.EnqueueAfter(ctx, "marker", nil, 0)
		}()
		must(take("marker").Ack(ctx))
		// A lease that expires is reclaimed by a later claim.
		_, err = admin.EnqueueAfter(ctx, "expire", nil, 0)
		must(err)
		take("expire")
		time.Sleep(1100 * time.Millisecond)
		m = take("expire")
		if m.Attempts != 2 {
			t.Errorf("redelivered at attempt %d", m.Attempts)
		}
		must(m.Ack(ctx))
		// A Take blocked on an empty queue returns when its ctx ends.
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		for {
			m, err := q.Take(tctx)
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatal(err)
				}
				break
			}
			must(m.Ack(ctx))
		}
		cancel()
		must(q.Close())

		// A Worker: its handlers' items are acked, and one still running
		// when Shutdown's time runs out is handed back (Release).
		for i := range 3 {
			_, err := admin.EnqueueAfter(ctx, fmt.Sprint("wk", i), nil, 0)
			must(err)
		}
		wq, err := redisq.New(ctx, client("dqconsumer"), "work")
		must(err)
		defer wq.Close()
		var handled atomic.Int32
		w := redisq.NewWorker(wq, func(hctx context.Context, m *redisq.Message) error {
			if m.ID == "wk2" {
				<-hctx.Done() // until Shutdown gives up on it
				return hctx.Err()
			}
			handled.Add(1)
			return nil
		}, redisq.WorkerOptions{Concurrency: 3})
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx) }()
		for deadline := time.Now().Add(30 * time.Second); handled.Load() < 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the worker handled %d of 2 items", handled.Load())
			}
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if it, err := admin.Get(ctx, "wk2"); err == nil && it.State == redisq.StateInFlight {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("wk2 is not in flight")
			}
		}
		// Its heartbeat is written with dqconsumer's rights: the worker is
		// listed with the message it holds.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			ws, err := admin.Workers(ctx)
			must(err)
			if len(ws) == 1 && len(ws[0].Leases) == 1 && ws[0].Leases[0].ID == "wk2" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the dqconsumer worker's heartbeat is not listed: %+v", ws)
			}
		}
		sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_ = w.Shutdown(sctx)
		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if it, err := admin.Get(ctx, "wk2"); err != nil || it.State != redisq.StateScheduled {
			t.Errorf("wk2 after Shutdown: %v %v, want handed back (scheduled)", it.State, err)
		}
		r, err := admin.Audit(ctx)
		if err != nil || !r.OK() {
			t.Fatalf("audit: %v %v", err, r.Problems)
		}

		// A Worker keeps a recurring registration going: the occurrences
		// after the first (which Register enqueues) are its keeper's. The
		// registration is made after the worker starts, so the keeper
		// learns of it from the change feed (XREAD), not from its re-read
		// of every registration a minute later.
		ticks, err := redisq.New(ctx, f.c, "ticks")
		must(err)
		defer ticks.Close()
		kq, err := redisq.New(ctx, client("dqconsumer"), "ticks")
		must(err)
		defer kq.Close()
		var occurrences atomic.Int32
		kw := redisq.NewWorker(kq, func(_ context.Context, m *redisq.Message) error {
			if name, _, ok := redisq.Occurrence(m.ID); ok && name == "tick" {
				occurrences.Add(1)
			}
			return nil
		}, redisq.WorkerOptions{})
		kctx, stopKeeping := context.WithCancel(ctx)
		go func() { ran <- kw.Run(kctx) }()
		time.Sleep(time.Second) // the keeper's first read, most likely (either way it must pass)
		_, err = ticks.Register(ctx, "tick", redisq.Every(100*time.Millisecond), nil)
		must(err)
		for deadline := time.Now().Add(30 * time.Second); occurrences.Load() < 3; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the worker ran %d occurrences of a registration every 100ms in 30s (its keeper reads every registration once a minute)", occurrences.Load())
			}
		}
		stopKeeping()
		if err := <-ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})

	t.Run("operator", func(t *testing.T) {
		f.neighbour(t)
		a := as("dqoperator")
		dqctl(t, "", append(a, "requeue", "orders", "d1")...).want(t, exitOK, `requeued "d1"`)
		dqctl(t, "", append(a, "delete-dead", "-yes", "-all", "orders")...).want(t, exitOK, "deleted 1 dead item")
		dqctl(t, "", append(a, "delete", "orders", "s1")...).want(t, exitOK, `deleted "s1"`)
		dqctl(t, "", append(a, "pause", "orders")...).want(t, exitOK, "paused")
		dqctl(t, "", append(a, "resume", "orders")...).want(t, exitOK, "resumed")
		dqctl(t, "", append(a, "purge", "-yes", "orders", "inflight")...).want(t, exitOK, "marked 1 inflight item")
		dqctl(t, "", append(a, "requeue", "-yes", "-all", "orders")...).want(t, exitOK)
		dqctl(t, "", append(a, "destroy", "-yes", "orders:eu")...).want(t, exitOK, `destroyed queue "orders:eu"`)
		dqctl(t, "", append(a, "register", "orders", "op", "every 1h", "-payload", "x")...).want(t, exitOK, `created registration "op"`)
		dqctl(t, "", append(a, "register", "orders", "gone", "every 1h")...).want(t, exitOK, `created registration "gone"`)
		dqctl(t, "", append(a, "recurring", "orders")...).want(t, exitOK, "2 registrations")
		dqctl(t, "", append(a, "unregister", "-yes", "orders", "gone")...).want(t, exitOK, `unregistered "gone"`)
		dqctl(t, "", append(a, "queue-rate-limit", "orders", "10/1s")...).want(t, exitOK, `queue "orders": rate limit 10 per 1s`)
		dqctl(t, "", append(a, "limits", "orders")...).want(t, exitOK, "QUEUE RATE LIMIT", "10 per 1s")
		dqctl(t, "", append(a, "queue-rate-limit", "orders", "none")...).want(t, exitOK, `queue "orders": no rate limit of its own`)

		// The dashboard's actions.
		u, stop := serving(t, append(a, "serve", "-listen", "127.0.0.1:0")...)
		defer stop()
		for _, form := range []url.Values{{"op": {"purge"}, "state": {"scheduled"}}, {"op": {"pause"}}, {"op": {"resume"}}, {"op": {"unregister"}, "reg": {"op"}},
			{"op": {"queue-rate-limit"}, "rate": {"3/1s"}}, {"op": {"queue-rate-limit"}, "rate": {"none"}}} {
			form.Set("q", "orders")
			if code, body := dashboardAction(t, u, form); code != http.StatusOK {
				t.Errorf("dashboard %s as dqoperator: %d\n%s", form.Get("op"), code, body)
			}
		}
		if st := stats(); st.Scheduled != 0 || st.Paused || st.QueueRateLimit.N != 0 {
			t.Errorf("after purge and pause/resume: %+v", st)
		}
		if regs, err := f.q.Registrations(ctx); err != nil || len(regs) != 0 {
			t.Errorf("after unregister on the dashboard: %d registrations (%v)", len(regs), err)
		}
		f.audit(t)
	})

	// Limits: the operator sets them, the producer enqueues and cancels
	// under them, the consumer claims, acks and nacks under them, and the
	// operator removes them while items wait. The queue's own rate limit:
	// the operator sets it, the consumer claims under it and snoozes a
	// claim (which gives it back to the window), the reader reads it.
	t.Run("limits", func(t *testing.T) {
		openAs := func(user, name string) *redisq.Queue {
			q, err := redisq.New(ctx, client(user), name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
			return q
		}
		open := func(user string) *redisq.Queue { return openAs(user, "limited") }
		op, prod, cons := open("dqoperator"), open("dqproducer"), open("dqconsumer")
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(op.SetRateLimit(ctx, "r", redisq.RateLimit{N: 1, Per: time.Hour}))
		must(op.SetConcurrencyLimit(ctx, "c", 1))
		for i := range 3 {
			for _, k := range []string{"r", "c"} {
				_, err := prod.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprintf("%s%d", k, i), At: time.Unix(1, 0), Job: redisq.Job{LimitKey: k}})
				must(err)
			}
		}
		ms, err := cons.TakeBatch(ctx, 10)
		must(err)
		if len(ms) != 2 {
			t.Fatalf("took %d, want one of each key", len(ms))
		}
		for _, m := range ms {
			if m.LimitKey == "c" {
				must(m.Nack(ctx))
			} else {
				must(m.Ack(ctx))
			}
		}
		_, err = prod.Cancel(ctx, "c1")
		must(err)
		must(prod.Reschedule(ctx, "r1", time.Now().Add(time.Hour)))
		_, err = op.Cancel(ctx, "c2")
		must(err)
		must(op.SetRateLimit(ctx, "r", redisq.RateLimit{}))
		must(op.SetConcurrencyLimit(ctx, "c", 0))
		dqctl(t, "", append(as("dqreader"), "limits", "limited")...).want(t, exitOK, "has no rate or concurrency limit")

		qprod, qcons := openAs("dqproducer", "whole"), openAs("dqconsumer", "whole")
		for i := range 3 {
			_, err := qprod.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprint("w", i), At: time.Unix(1, 0)})
			must(err)
		}
		dqctl(t, "", append(as("dqoperator"), "queue-rate-limit", "whole", "2/1h")...).want(t, exitOK, `queue "whole": rate limit 2 per 1h0m0s`)
		ms, err = qcons.TakeBatch(ctx, 10)
		must(err)
		if len(ms) != 2 {
			t.Fatalf("took %d under 2 per 1h", len(ms))
		}
		_, err = ms[0].Snooze(ctx, time.Hour)
		must(err)
		must(ms[1].Ack(ctx))
		dqctl(t, "", append(as("dqreader"), "limits", "whole")...).want(t, exitOK, "QUEUE RATE LIMIT", "2 per 1h0m0s", "1/2")
		// The snooze gave its claim back: the third item is claimed.
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := qcons.Take(tctx)
		cancel()
		must(err)
		must(m.Ack(ctx))
		dqctl(t, "", append(as("dqreader"), "stats", "whole")...).want(t, exitOK, "snoozed 1")
		dqctl(t, "", append(as("dqoperator"), "queue-rate-limit", "whole", "none")...).want(t, exitOK, "no rate limit of its own")
		whole, err := redisq.New(ctx, f.c, "whole")
		must(err)
		defer whole.Close()
		if r, err := whole.Audit(ctx); err != nil || !r.OK() {
			t.Fatalf("audit: %v %v", err, r.Problems)
		}
	})
}
