package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// complete enqueues id on q, due now, with job j (a Retention keeps it
// once acked), takes it and acks it with result.
func complete(t *testing.T, q *redisq.Queue, id string, j redisq.Job, result []byte) {
	t.Helper()
	ctx := context.Background()
	if _, err := q.Add(ctx, redisq.EnqueueItem{ID: id, Payload: []byte("p-" + id), At: time.Unix(1, 0), Job: j}); err != nil {
		t.Fatal(err)
	}
	m, err := q.Take(ctx)
	if err != nil || m.ID != id {
		t.Fatalf("take %s: %v %+v", id, err, m)
	}
	if result != nil {
		if err := m.SetResult(result); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCompletedJSONResult (issue 41, item 14): list -payloads showed a
// JSON result Go-quoted ("{\"ok\":true}"). Valid UTF-8 JSON is shown as
// it is, compacted to one line, with its control and bidi characters
// escaped, still valid JSON; other results are quoted as before.
func TestCompletedJSONResult(t *testing.T) {
	f := newFixture(t, "orders")
	// A raw bidi override and an escaped ESC in its strings.
	complete(t, f.q, "j", redisq.Job{Retention: time.Hour}, []byte("{\n  \"ok\": true,\n  \"to\": \"r\u202eg\\u001b\"\n}"))
	complete(t, f.q, "t", redisq.Job{Retention: time.Hour}, []byte(`not {json`))
	r := dqctl(t, "", "-redis", f.addr, "list", "-full", "-payloads", "orders", "completed")
	r.want(t, exitOK, ` {"ok":true,"to":"r\u202eg\u001b"}`+"\n", ` "not {json"`+"\n")
	var v map[string]any
	line := r.stdout[strings.Index(r.stdout, `{"ok"`):]
	if err := json.Unmarshal([]byte(line[:strings.IndexByte(line, '\n')]), &v); err != nil || v["to"] != "r\u202eg\x1b" {
		t.Errorf("the RESULT cell is not the result's JSON: %v %v", v, err)
	}
}

// TestCompleted (issue "a completed state"): list QUEUE completed has
// its own table (COMPLETED, EXPIRES, RESULT), -json carries the result;
// show prints completion, expiry and the result escaped; stats and queues
// count the completed items; purge completed deletes them.
func TestCompleted(t *testing.T) {
	t.Setenv("COLUMNS", "80") // the width results are cut to
	f := newFixture(t, "orders")
	a := []string{"-redis", f.addr}
	complete(t, f.q, "a", redisq.Job{Kind: "refund", Retention: time.Hour}, []byte("ok"))
	complete(t, f.q, "b", redisq.Job{Retention: 2 * time.Hour}, nil)
	evil := "done, 3 rows\x1b]0;pwned\a\u202e\x1b[2J"
	complete(t, f.q, "evil", redisq.Job{Retention: time.Hour}, []byte(evil))

	r := dqctl(t, "", append(a, "list", "orders", "completed")...)
	r.want(t, exitOK, "1-3 of 3 completed\n")
	wantRows(t, r.stdout, []string{"ID", "KIND", "COMPLETED", "EXPIRES", "ATTEMPTS", "SIZE", "RESULT"})
	if strings.Contains(r.stdout, "DIED") || strings.Contains(r.stdout, "REASON") {
		t.Errorf("completed list has the dead columns:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^a +refund +[0-9.]+m?s ago +in (59m5\ds|1h0m0s) +1 +3 +2 bytes$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^b +- +.* ago +in (1h59m|2h0m)0s +1 +3 +-$`).MatchString(r.stdout) {
		t.Errorf("completed rows:\n%s", r.stdout)
	}
	// -payloads: a preview of the result, escaped, cut to the terminal
	// unless -full.
	r = dqctl(t, "", append(a, "list", "orders", "completed", "-payloads")...)
	wantRows(t, r.stdout, []string{"a", "refund"}, []string{"evil", "-"})
	r.want(t, exitOK, ` ok`+"\n", `"done, 3 rows\x1b]0;pwned\a…`+"\n", "; results cut to the terminal's width (-full: whole)\n")
	if !regexp.MustCompile(`(?m)^b +- +.* +3 +-$`).MatchString(r.stdout) {
		t.Errorf("an empty result is not -:\n%s", r.stdout)
	}
	r = dqctl(t, "", append(a, "list", "orders", "completed", "-payloads", "-full")...)
	r.want(t, exitOK, ` "done, 3 rows\x1b]0;pwned\a\u202e\x1b[2…`+"\n", "1-3 of 3 completed\n")

	r = dqctl(t, "", append(a, "list", "-json", "-payloads", "orders", "completed")...)
	r.want(t, exitOK)
	var page struct {
		Items []struct {
			ID          string    `json:"id"`
			State       string    `json:"state"`
			CompletedAt time.Time `json:"completed_at"`
			Expires     time.Time `json:"expires"`
			ResultSize  int       `json:"result_size"`
			Result      *string   `json:"result"`
			Encoding    string    `json:"result_encoding"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Items) != 3 {
		t.Fatalf("list -json: %v\n%s", err, r.stdout)
	}
	for _, it := range page.Items {
		if it.State != "completed" || it.CompletedAt.IsZero() || it.Expires.Sub(it.CompletedAt) < time.Hour {
			t.Errorf("list -json item %+v", it)
		}
		switch it.ID {
		case "a":
			if it.Result == nil || *it.Result != "ok" || it.Encoding != "utf8" || it.ResultSize != 2 {
				t.Errorf("list -json a: %+v", it)
			}
		case "b":
			if (it.Result != nil && *it.Result != "") || it.ResultSize != 0 {
				t.Errorf("list -json b: %+v", it)
			}
		case "evil":
			if it.Result == nil || *it.Result != evil {
				t.Errorf("list -json evil: %+v", it)
			}
		}
	}
	// Without -payloads, only the size.
	r = dqctl(t, "", append(a, "list", "-json", "orders", "completed")...)
	r.want(t, exitOK, `"result_size": 2`)
	if strings.Contains(r.stdout, `"result":`) {
		t.Errorf("list -json without -payloads has results:\n%s", r.stdout)
	}

	r = dqctl(t, "", append(a, "show", "orders", "evil")...)
	r.want(t, exitOK, "\nstate      completed\n", "\ncompleted  20", "\nexpires    20", "retention  1h0m0s once acked",
		"payload    6 bytes\np-evil\nresult     "+strconv.Itoa(len(evil))+" bytes\n"+`done, 3 rows\x1b]0;pwned\a\u202e\x1b[2J`+"\n")
	r = dqctl(t, "", append(a, "show", "orders", "b")...)
	r.want(t, exitOK, "\nresult     0 bytes\n")
	r = dqctl(t, "", append(a, "show", "-json", "orders", "evil")...)
	r.want(t, exitOK, `"result": "done, 3 rows\u001b]0;pwned\u0007\u202e\u001b[2J"`, `"result_encoding": "utf8"`, `"completed_at": "20`)

	r = dqctl(t, "", append(a, "stats", "orders")...)
	r.want(t, exitOK, "in flight 1, dead 2, completed 3")
	r = dqctl(t, "", append(a, "stats", "-json", "orders")...)
	r.want(t, exitOK, `"completed": 3,`)
	r = dqctl(t, "", append(a, "queues")...)
	wantRows(t, r.stdout, []string{"QUEUE", "SCHEDULED", "DUE", "OLDEST OVERDUE", "INFLIGHT", "DEAD", "COMPLETED"})
	if !regexp.MustCompile(`(?m)^orders +2 +0 +- +1 +2 +3 `).MatchString(r.stdout) {
		t.Errorf("queues completed count:\n%s", r.stdout)
	}

	dqctl(t, "n\n", append(a, "purge", "orders", "completed")...).want(t, exitAborted, "purge 3 completed items of queue \"orders\"?")
	dqctl(t, "", append(a, "purge", "-yes", "orders", "done")...).want(t, exitOK, "deleted 3 completed items")
	dqctl(t, "", append(a, "list", "orders", "completed")...).want(t, exitOK, "(no completed items at offset 0; 0 in all)")
	dqctl(t, "", append(a, "stats", "orders")...).want(t, exitOK, "dead 2, completed 0")
	dqctl(t, "", append(a, "list", "orders", "finished")...).want(t, exitUsage, "want scheduled, inflight, dead or completed")
}

// TestPartitionedCompleted: list completed of a partitioned queue has the
// completed table with its PARTITION column, stats the count per
// partition, and purge completed empties every partition.
func TestPartitionedCompleted(t *testing.T) {
	f := newPartFixture(t)
	a := []string{"-redis", f.addr}
	ids := []string{"c0", "c1", "c2", "c3"}
	for _, id := range ids {
		complete(t, f.p.Route(id), id, redisq.Job{Retention: time.Hour}, []byte("r-"+id))
	}
	r := dqctl(t, "", append(a, "list", "orders", "completed", "-payloads")...)
	r.want(t, exitOK, "1-4 of 4 completed in 3 partitions\n")
	wantRows(t, r.stdout, []string{"ID", "PARTITION", "KIND", "COMPLETED", "EXPIRES", "ATTEMPTS", "SIZE", "RESULT"})
	for _, id := range ids {
		if !regexp.MustCompile(`(?m)^` + id + ` +` + strconv.Itoa(f.p.PartitionOf(id)) + ` +- +.* ago +in (59m5\ds|1h0m0s) +1 +4 +r-` + id + `$`).MatchString(r.stdout) {
			t.Errorf("no row of %s:\n%s", id, r.stdout)
		}
	}
	r = dqctl(t, "", append(a, "stats", "orders")...)
	r.want(t, exitOK, "dead 2, completed 4", "  DUE  INFLIGHT  DEAD  COMPLETED  ENQUEUED  DELIVERED  ACKED\n")
	dqctl(t, "", append(a, "purge", "-yes", "orders", "completed")...).want(t, exitOK, "deleted 4 completed items")
	dqctl(t, "", append(a, "stats", "orders")...).want(t, exitOK, "dead 2, completed 0")
}
