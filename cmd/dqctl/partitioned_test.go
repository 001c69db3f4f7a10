package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
)

// partFixture is a server with a partitioned queue "orders" of 3
// partitions: scheduled s0..s8 (routed by id, due 1h+i min), dead d0 and
// d1 (each in its id's partition), and scheduled k1 enqueued under the
// ordering key key, whose partition (kp) is not k1's own (ip); and an
// ordinary queue "plain".
type partFixture struct {
	addr   string
	c      *redis.Client
	p      *redisq.Partitioned
	key    string
	kp, ip int
}

func newPartFixture(t *testing.T) *partFixture {
	t.Helper()
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	p, err := redisq.NewPartitioned(ctx, c, "orders", 3, redisq.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 9 {
		_, err := p.EnqueueAfter(ctx, fmt.Sprintf("s%d", i), []byte("x"), time.Hour+time.Duration(i)*time.Minute)
		must(err)
	}
	for _, id := range []string{"d0", "d1"} {
		q := p.Route(id)
		must(q.Enqueue(ctx, id, nil, time.Unix(1, 0)))
		m, err := q.Take(ctx)
		must(err)
		_, err = m.DeadLetter(ctx, "bad "+id)
		must(err)
	}
	f := &partFixture{addr: s.Addr, c: c, p: p, ip: p.PartitionOf("k1")}
	for i := 0; ; i++ {
		f.key = fmt.Sprintf("customer-%d", i)
		if f.kp = p.PartitionOf(f.key); f.kp != f.ip {
			break
		}
	}
	_, err = p.Route(f.key).EnqueueAfter(ctx, "k1", []byte("keyed"), 3*time.Hour)
	must(err)
	plain, err := redisq.New(ctx, c, "plain")
	must(err)
	t.Cleanup(func() { _ = plain.Close() })
	_, err = plain.EnqueueAfter(ctx, "x", nil, time.Hour)
	must(err)
	return f
}

// TestPartitionedQueues: queues shows a partitioned queue as one row with
// the sums of its partitions, not its partitions as queues of their own
// (-partitions lists them under it), and -json nests them.
func TestPartitionedQueues(t *testing.T) {
	f := newPartFixture(t)
	r := dqctl(t, "", "-redis", f.addr, "queues")
	r.want(t, exitOK, "orders (3 partitions)", "plain")
	if strings.Contains(r.stdout, "orders~") {
		t.Errorf("partitions listed as queues without -partitions:\n%s", r.stdout)
	}
	// The row holds the sums: 10 scheduled, 0 due (no oldest overdue), 0 in
	// flight, 2 dead, 0 completed, 0 nacked, 2 dead-lettered, both
	// deliveries failed.
	if !regexp.MustCompile(`orders \(3 partitions\)\s+10\s+0\s+-\s+0\s+2\s+0\s+0\s+2\s+100\.0%\n`).MatchString(r.stdout) {
		t.Errorf("the partitioned row lacks the sums 10 0 - 0 2 0 0 2 100.0%%:\n%s", r.stdout)
	}
	r = dqctl(t, "", "-redis", f.addr, "queues", "-partitions")
	for i := range 3 {
		r.want(t, exitOK, "  "+f.p.Partition(i).Name()+" ")
	}
	r = dqctl(t, "", "-redis", f.addr, "queues", "-json")
	r.want(t, exitOK)
	var rows []struct {
		Name       string `json:"name"`
		Scheduled  int64  `json:"scheduled"`
		Dead       int64  `json:"dead"`
		Partitions []struct {
			Name      string `json:"name"`
			Scheduled int64  `json:"scheduled"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatal(err, r.stdout)
	}
	if len(rows) != 2 || rows[0].Name != "orders" || rows[1].Name != "plain" {
		t.Fatalf("queues -json rows: %+v", rows)
	}
	var sum int64
	for i, p := range rows[0].Partitions {
		if p.Name != f.p.Partition(i).Name() {
			t.Errorf("partition %d named %q, want %q", i, p.Name, f.p.Partition(i).Name())
		}
		sum += p.Scheduled
	}
	if len(rows[0].Partitions) != 3 || rows[0].Scheduled != 10 || sum != 10 || rows[0].Dead != 2 {
		t.Errorf("queues -json orders: %+v", rows[0])
	}
}

// TestPartitionedStatsAndList: stats sums the partitions and adds a line
// per partition; list pages across partitions by cursor, every item once,
// in due order, with its partition.
func TestPartitionedStatsAndList(t *testing.T) {
	f := newPartFixture(t)
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "stats", "orders")...)
	r.want(t, exitOK, `queue "orders" (3 partitions)`, "PARTITION", f.p.Partition(0).Name(), f.p.Partition(2).Name())
	dqctl(t, "", append(a, "watch", "orders", "-n", "1")...).want(t, exitOK, `queue "orders" (3 partitions)`, "scheduled")
	r = dqctl(t, "", append(a, "stats", "orders", "-json")...)
	r.want(t, exitOK)
	var st struct {
		Scheduled  int64 `json:"scheduled"`
		Dead       int64 `json:"dead"`
		Partitions []struct {
			Queue     string `json:"queue"`
			Partition *int   `json:"partition"`
			Scheduled int64  `json:"scheduled"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err, r.stdout)
	}
	if st.Scheduled != 10 || st.Dead != 2 || len(st.Partitions) != 3 || st.Partitions[1].Partition == nil || *st.Partitions[1].Partition != 1 ||
		st.Partitions[1].Queue != f.p.Partition(1).Name() {
		t.Errorf("stats -json: %+v", st)
	}

	// Pages of 4 from the first, following the printed cursor.
	next := regexp.MustCompile(`next page: -cursor (\d+,\d+,\d+)`)
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("list does not end")
		}
		args := append(a, "list", "orders", "scheduled", "-limit", "4")
		if cursor != "" {
			args = append(args, "-cursor", cursor)
		}
		r = dqctl(t, "", args...)
		r.want(t, exitOK, "PARTITION", fmt.Sprintf("%d-%d of 10 scheduled in 3 partitions", 4*page+1, min(4*page+4, 10)))
		for _, line := range strings.Split(r.stdout, "\n")[1:] {
			if f := strings.Fields(line); len(f) > 1 && (strings.HasPrefix(f[0], "s") || f[0] == "k1") {
				seen = append(seen, f[0])
			}
		}
		m := next.FindStringSubmatch(r.stdout)
		if m == nil {
			break
		}
		cursor = m[1]
	}
	want := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "k1"}
	if !slices.Equal(seen, want) {
		t.Errorf("list pages gave %v, want %v", seen, want)
	}
	r = dqctl(t, "", append(a, "list", "orders", "dead", "-json")...)
	r.want(t, exitOK, `"partition": `, `"partition_queue": "orders~`)

	dqctl(t, "", append(a, "list", "orders", "scheduled", "-offset", "3")...).want(t, exitUsage, "give -cursor")
	dqctl(t, "", append(a, "list", "orders", "scheduled", "-cursor", "1,2")...).want(t, exitUsage, "has 2 offsets")
	dqctl(t, "", append(a, "list", "plain", "scheduled", "-cursor", "1")...).want(t, exitUsage, "give -offset")
	// Offsets whose sum would overflow are refused, not printed negative;
	// a huge cursor is not echoed whole.
	r = dqctl(t, "", append(a, "list", "orders", "scheduled", "-cursor", "9223372036854775807,9223372036854775807,1")...)
	r.want(t, exitUsage, "is not a number in 0..9007199254740992")
	huge := strings.Repeat("1,", 20_000) + "1"
	r = dqctl(t, "", append(a, "list", "orders", "scheduled", "-cursor", huge)...)
	r.want(t, exitUsage, "has 20001 offsets")
	if len(r.stderr) > 1000 {
		t.Errorf("a 40 KB cursor echoed in a %d-byte message", len(r.stderr))
	}
	// A partition is an ordinary queue.
	dqctl(t, "", append(a, "list", f.p.Partition(f.kp).Name(), "scheduled")...).want(t, exitOK, "k1")
}

// TestPartitionedItems: show, delete, requeue and delete-dead find an item
// in the partition that holds it, its id's or (k1) its ordering key's,
// and say which; the bulk commands act on every partition.
func TestPartitionedItems(t *testing.T) {
	f := newPartFixture(t)
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	kname := f.p.Partition(f.kp).Name()
	dqctl(t, "", append(a, "show", "orders", "k1")...).want(t, exitOK, "partition  "+fmt.Sprint(f.kp)+` "`+kname+`"`, "keyed")
	dqctl(t, "", append(a, "show", "orders", "s3")...).want(t, exitOK, "partition  "+fmt.Sprint(f.p.PartitionOf("s3")))
	dqctl(t, "", append(a, "show", "orders", "nosuch")...).want(t, exitNotFound, `no item "nosuch" in queue "orders"`)

	dqctl(t, "", append(a, "delete", "orders", "k1")...).want(t, exitOK, `deleted "k1" in partition `+fmt.Sprint(f.kp))
	if _, err := f.p.Partition(f.kp).Get(ctx, "k1"); !errors.Is(err, redisq.ErrNotFound) {
		t.Errorf("k1 after delete: %v", err)
	}
	dqctl(t, "", append(a, "requeue", "orders", "d0")...).want(t, exitOK, `"d0" in partition `+fmt.Sprint(f.p.PartitionOf("d0")))
	if it, err := f.p.Get(ctx, "d0"); err != nil || it.State != redisq.StateScheduled {
		t.Errorf("d0 after requeue: %+v %v", it, err)
	}
	dqctl(t, "", append(a, "requeue", "orders", "s1")...).want(t, exitNotFound, `item "s1" is not dead`)
	dqctl(t, "y\n", append(a, "delete-dead", "orders", "-all")...).want(t, exitOK, `delete the 1 dead item of queue "orders" (3 partitions)?`, "deleted 1 dead item")
	st, err := f.p.Stats(ctx)
	if err != nil || st.Dead != 0 || st.Scheduled != 10 {
		t.Fatalf("after delete-dead -all: %+v %v", st, err)
	}

	// Pause and resume reach every partition; one paused partition shows.
	dqctl(t, "", append(a, "pause", "orders")...).want(t, exitOK, `paused queue "orders" (3 partitions)`)
	for i := range 3 {
		if p, err := f.p.Partition(i).Paused(ctx); err != nil || !p {
			t.Errorf("partition %d paused %v %v", i, p, err)
		}
	}
	dqctl(t, "", append(a, "pause", "orders")...).want(t, exitOK, "already paused; nothing changed")
	dqctl(t, "", append(a, "resume", "orders")...).want(t, exitOK, `resumed queue "orders" (3 partitions)`)
	if p, err := f.p.Paused(ctx); err != nil || p {
		t.Errorf("paused after resume: %v %v", p, err)
	}
	if err := f.p.Partition(2).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "queues")...).want(t, exitOK, "1/3 paused")
	dqctl(t, "", append(a, "resume", "orders")...).want(t, exitOK, "resumed")
	if p, err := f.p.Partition(2).Paused(ctx); err != nil || p {
		t.Errorf("partition 2 paused after resume: %v %v", p, err)
	}

	dqctl(t, "y\n", append(a, "purge", "orders", "scheduled")...).want(t, exitOK,
		`purge 10 scheduled items of queue "orders" (3 partitions)?`, "deleted 10 scheduled items")
	if st, err := f.p.Stats(ctx); err != nil || st.Scheduled != 0 {
		t.Fatalf("after purge: %+v %v", st, err)
	}
	// A partitioned queue that never held an item has no partition keys;
	// the queue (its table) exists, and the bulk commands change nothing,
	// without error.
	empty, err := redisq.NewPartitioned(ctx, f.c, "empty", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	dqctl(t, "y\n", append(a, "purge", "empty", "scheduled")...).want(t, exitOK, "deleted 0 scheduled items")
	dqctl(t, "y\n", append(a, "requeue", "empty", "-all")...).want(t, exitOK, "requeued 0 dead items")
	dqctl(t, "y\n", append(a, "delete-dead", "empty", "-all")...).want(t, exitOK, "deleted 0 dead items")
	dqctl(t, "", append(a, "stats", "empty")...).want(t, exitOK, `queue "empty" (3 partitions)`)
	// A command that works on one ordinary queue names the partitions.
	dqctl(t, "", append(a, "recurring", "orders")...).want(t, exitError, `queue "orders" is partitioned (3 partitions: "orders~`, "give a partition's name")

	dqctl(t, "orders\n", append(a, "destroy", "orders")...).want(t, exitOK, `destroyed queue "orders" (3 partitions)`)
	if _, err := redisq.OpenPartitioned(ctx, f.c, "orders"); !errors.Is(err, redisq.ErrNoQueue) {
		t.Errorf("OpenPartitioned after destroy: %v", err)
	}
	r := dqctl(t, "", append(a, "queues")...)
	if strings.Contains(r.stdout, "orders") {
		t.Errorf("queues after destroy:\n%s", r.stdout)
	}
}
