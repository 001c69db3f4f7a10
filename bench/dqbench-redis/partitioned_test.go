package main

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// capTestOptions are -impl partitioned's options for a small, quiet run.
func capTestOptions(t *testing.T) *options {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli needed for a cluster")
	}
	o := &options{impl: "partitioned", redisItems: 300, redisBatch: 100, rounds: 1, Output: report.Output{Command: "dqbench-redis", Quiet: true},
		set: map[string]bool{"redis-items": true}}
	return o
}

// checkCapacityReport checks the report's shape and where each
// configuration's commands ran: an ordinary queue and a 1-partition queue
// on one master, 3 partitions and the equal-load queues on every master.
func checkCapacityReport(t *testing.T, rep *report.CapacityReport) {
	t.Helper()
	if len(rep.Masters) != 3 || rep.Partitions != 3 {
		t.Fatalf("masters %v, partitions %d; want 3", rep.Masters, rep.Partitions)
	}
	if len(rep.Loops) != 2 || rep.Loops[0].Name != "AckTake" || rep.Loops[1].Name != "TakeBatch(100)+AckMany" {
		t.Fatalf("loops %+v", rep.Loops)
	}
	plain, one, many, equal := capConfigs(3)
	for _, l := range rep.Loops {
		if len(l.Configs) != 4 {
			t.Fatalf("%s: %d configurations, want 4", l.Name, len(l.Configs))
		}
		for i, want := range []string{plain, one, many, equal} {
			c := l.Configs[i]
			if c.Config != want || c.Items != 300 || len(c.CPUPerItemNs) != 3 || len(c.CmdsPerItem) != 3 || c.BusiestNs <= 0 {
				t.Fatalf("%s: configuration %d: %+v", l.Name, i, c)
			}
			busy := 0 // masters that ran the queue's commands
			for _, n := range c.CmdsPerItem {
				if n >= 0.5 {
					busy++
				}
			}
			if wantBusy := map[bool]int{false: 1, true: 3}[want == many || want == equal]; busy != wantBusy {
				t.Errorf("%s, %s: commands per item by master %v: %d busy masters, want %d", l.Name, want, c.CmdsPerItem, busy, wantBusy)
			}
		}
	}
}

// -local-cluster 3: the phase starts a cluster, measures every
// configuration on it and closes it.
func TestPartitionedLocalCluster(t *testing.T) {
	o := capTestOptions(t)
	o.localCluster = 3
	if err := o.checkPartitioned(); err != nil {
		t.Fatal(err)
	}
	var meta report.Meta
	rep, err := runPartitioned(o, &meta)
	if err != nil {
		t.Fatal(err)
	}
	checkCapacityReport(t, rep)
	if !strings.Contains(meta.Redis, "3 masters") {
		t.Errorf("meta.Redis = %q", meta.Redis)
	}
	// Closed at the end: no master takes connections any more.
	for _, m := range rep.Masters {
		if c, err := net.DialTimeout("tcp", m.Addr, time.Second); err == nil {
			c.Close()
			t.Errorf("master %s still listens after the run", m.Addr)
		}
	}
	var b strings.Builder
	writeCapacity(&b, o, rep)
	for _, want := range []string{"AckTake, 32 consumers", "TakeBatch(100)+AckMany, 8 consumers",
		"3 partitions / 1 partition alone", "3 partitions / 1 partition, equal load (3 queues)", "3 partitions / ordinary queue"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// -cluster: the phase finds every master from one address and leaves no
// key behind on a cluster that is not its own.
func TestPartitionedGivenCluster(t *testing.T) {
	o := capTestOptions(t)
	cl := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	o.clusterAddrs = cl.Addrs()[0]
	if err := o.checkPartitioned(); err != nil {
		t.Fatal(err)
	}
	var meta report.Meta
	rep, err := runPartitioned(o, &meta)
	if err != nil {
		t.Fatal(err)
	}
	checkCapacityReport(t, rep)
	for _, a := range cl.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: a})
		n, err := c.DBSize(context.Background()).Result()
		c.Close()
		if err != nil || n != 0 {
			t.Errorf("%s: %d keys left (%v)", a, n, err)
		}
	}
}

// The ratios are the other configuration's busiest CPU per item over the
// partitioned queue's (ceilings are 1 s over them), and the target is met
// from 2.5x up.
func TestWriteCapacityRatios(t *testing.T) {
	plain, one, many, equal := capConfigs(3)
	run := func(config string, busiest float64) report.CapacityRun {
		return report.CapacityRun{Config: config, Queues: 1, Items: 100, WallNs: int64(time.Second),
			CPUPerItemNs: []float64{busiest, 0, 0}, CmdsPerItem: []float64{1, 0, 0}, BusiestNs: busiest, RoundsNs: []float64{busiest}}
	}
	rep := &report.CapacityReport{Partitions: 3, Rounds: 1, Items: 100,
		Masters: []report.CapacityMaster{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}},
		Loops: []report.CapacityLoop{
			{Name: "AckTake", Consumers: 32, Configs: []report.CapacityRun{run(plain, 50000), run(one, 20000), run(many, 10000), run(equal, 25000)}},
			{Name: "TakeBatch(100)+AckMany", Batch: 100, Consumers: 8, Configs: []report.CapacityRun{run(plain, 10000), run(one, 10000), run(many, 4000), run(equal, 9960)}},
		}}
	var b strings.Builder
	writeCapacity(&b, &options{}, rep)
	out := b.String()
	for _, want := range []string{
		"3 partitions / 1 partition alone                     2.00x                   2.50x",
		"3 partitions / 1 partition, equal load (3 queues)    2.50x                   2.49x  >= 2.5x   no",
		"3 partitions / ordinary queue                        5.00x                   2.50x",
		"m1 10.0µs   10.0µs-10.0µs   100k/s", // the busiest master, its CPU per item, the ceiling
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep.Loops[1].Configs[3] = run(equal, 10000)
	b.Reset()
	writeCapacity(&b, &options{}, rep)
	if want := "2.50x                   2.50x  >= 2.5x  yes"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
	// A run that stopped before the partitioned queue: no verdict.
	rep.Loops = rep.Loops[:1]
	rep.Loops[0].Configs = rep.Loops[0].Configs[:2]
	b.Reset()
	writeCapacity(&b, &options{}, rep)
	if want := "3 partitions / 1 partition, equal load (3 queues)        -  >= 2.5x    -"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}
