package main

import (
	"context"
	"strings"
	"testing"

	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// A short steady run of the plain Worker beside worker-mux and
// worker-retain: each delivers every item once, retain keeps them all
// completed (and measures them), the comparison table prints, and no key
// is left behind.
func TestWorkerMuxAndRetain(t *testing.T) {
	srv := redistest.New(t)
	rep, stdout := runJSON(t, "-impl", "worker,worker-mux,worker-retain", "-redis", srv.Addr,
		"-rate", "200", "-duration", "1s", "-delay", "0", "-delay-max", "100ms", "-idle", "0", "-redis-items", "0",
		"-quiet", "-hist=false")
	by := map[string]report.Result{}
	for _, r := range rep.Results {
		by[r.Name] = r
	}
	for _, name := range []string{"worker", "worker-mux", "worker-retain"} {
		r, ok := by[name]
		if !ok {
			t.Fatalf("no result %q in %+v", name, rep.Results)
		}
		if r.Items != 200 || r.Delivered != 200 || r.Duplicates != 0 || r.Early != 0 {
			t.Errorf("%s: items %d, delivered %d, duplicates %d, early %d; want 200, 200, 0, 0", name, r.Items, r.Delivered, r.Duplicates, r.Early)
		}
		if r.ServerCmdsPerItem <= 0 || r.ServerCPUPerItemNs <= 0 {
			t.Errorf("%s: server commands %v, CPU %v per item; want both > 0", name, r.ServerCmdsPerItem, r.ServerCPUPerItemNs)
		}
		if want := map[string]int{"worker-retain": 200}[name]; r.Kept != want {
			t.Errorf("%s: %d items kept, want %d", name, r.Kept, want)
		}
	}
	if r := by["worker-retain"]; r.KeptBytesPerItem <= 0 {
		t.Errorf("worker-retain: %v bytes per kept item, want > 0", r.KeptBytesPerItem)
	}
	for _, want := range []string{"kinds vs plain Worker (steady)", "server commands per item", "used_memory freed by purging, per kept item",
		"worker-retain: 200 items kept completed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	if keys, err := c.Keys(context.Background(), "*dqbench-*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("keys left: %v (%v)", keys, err)
	}
}

// worker-mux and worker-retain are -impl values of their own; a typo is
// refused.
func TestJobsImplChecked(t *testing.T) {
	for impl, ok := range map[string]bool{"worker-mux": true, "worker-retain": true, "worker,worker-mux,asynq": true, "worker-muxx": false} {
		o := &options{impl: impl, mode: "steady", producers: 1, consumers: 4, rate: 1000, wakeCap: 1e9}
		if err := o.check(); (err == nil) != ok {
			t.Errorf("-impl %s: check = %v", impl, err)
		}
	}
}
