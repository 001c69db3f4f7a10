package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// TestUnique: unique shows a key's window (the item that took it, when it
// ends), says when there is none (exit 3), and -release ends it so that
// the next enqueue of the key is stored; show lists an item's unique key.
// Keys and ids are escaped.
func TestUnique(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	key := "tenant\x1b[2J\u202e"
	u := redisq.Job{UniqueKey: key, UniqueFor: time.Hour}
	if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: "u1", After: time.Hour, Job: u}); err != nil {
		t.Fatal(err)
	}
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "unique", "orders", "--", key)...)
	r.want(t, exitOK, `unique key "tenant\x1b[2J\u202e": held by item "u1" until `, "(in ")
	if strings.ContainsAny(r.stdout, "\x1b\u202e") {
		t.Errorf("raw control characters printed: %q", r.stdout)
	}
	r = dqctl(t, "", append(a, "show", "orders", "u1")...)
	r.want(t, exitOK, `"tenant\x1b[2J\u202e", unique for 1h0m0s`)
	r = dqctl(t, "", append(a, "unique", "orders", "nope")...)
	r.want(t, exitNotFound, `no window of unique key "nope" in queue "orders": an enqueue of it is stored`)

	if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: "u2", Job: u}); !errors.Is(err, redisq.ErrUniqueHeld) {
		t.Fatalf("enqueue while held: %v", err)
	}
	r = dqctl(t, "", append(a, "unique", "-release", "orders", "--", key)...)
	r.want(t, exitOK, `released the window of unique key "tenant\x1b[2J\u202e": its next enqueue is stored`)
	if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: "u2", Job: u}); err != nil {
		t.Fatalf("enqueue after release: %v", err)
	}
	r = dqctl(t, "", append(a, "unique", "-release", "orders", "nope")...)
	r.want(t, exitNotFound, `no window of unique key "nope" in queue "orders"; nothing changed`)
}
