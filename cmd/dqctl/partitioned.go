package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

// A partitioned queue (redisq.NewPartitioned) is one queue NAME over P
// ordinary queues, its partitions (NAME~i.j). dqctl shows and changes it
// as one queue: queues lists it as one row with the sums (its partitions
// under it with -partitions), stats adds a line per partition, list pages
// across partitions with a cursor of one offset per partition, show finds
// an item in any partition, the commands on a whole queue or state act on
// every partition, and the commands on item ids act on the partition that
// holds each id (its routing partition, else the one Locate finds). Every
// partition's own name is an ordinary queue for every command.

// target is the queue a command names: an ordinary queue (q) or a
// partitioned one (p); Close closes it.
type target struct {
	redisq.Admin // the commands on a whole queue act on every partition of one
	q            *redisq.Queue
	p            *redisq.Partitioned
}

// label names the queue in messages: `queue "emails"`, or `queue
// "emails" (3 partitions)`.
func (t *target) label() string {
	if t.p != nil {
		return fmt.Sprintf("queue %s (%s)", quote(t.p.Name()), plural(int64(t.p.NumPartitions()), "partition"))
	}
	return "queue " + quote(t.q.Name())
}

// checkName returns the usage error of a bad queue name, or nil.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "{}") {
		return usageErr("bad queue name %s: names are non-empty and hold no '{' or '}'", quote(name))
	}
	return nil
}

// target opens the queue name: the partitioned queue of that name when it
// has a partition table (one HGETALL tells), else the ordinary queue,
// which must exist. Close it after.
func (e *env) target(name string) (*target, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p, err := redisq.OpenPartitioned(e.ctx, e.c, name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
	switch {
	case err == nil:
		e.partitioned = true
		return &target{Admin: p, p: p}, nil
	case !errors.Is(err, redisq.ErrNoQueue):
		return nil, err
	}
	q, err := e.open(name)
	if err != nil {
		return nil, err
	}
	return &target{Admin: q, q: q}, nil
}

// partitionedErr explains why a command that works on one ordinary queue
// refuses the partitioned queue name, naming its partitions; it returns
// nil when name is not partitioned (or its table cannot be read).
func (e *env) partitionedErr(name string) error {
	parts, err := redisq.PartitionNames(e.ctx, e.c, name)
	if err != nil {
		return nil
	}
	shown := make([]string, 0, 4)
	for i, n := range parts {
		if i == 3 {
			shown = append(shown, "...")
			break
		}
		shown = append(shown, quote(n))
	}
	return fmt.Errorf("queue %s is partitioned (%s: %s); dqctl %s works on one partition at a time: give a partition's name",
		quote(name), plural(int64(len(parts)), "partition"), strings.Join(shown, ", "), e.cmd.name)
}

// partitionName is partition i of p as messages name it: 1 "emails~1.3".
func partitionName(p *redisq.Partitioned, i int) string {
	return fmt.Sprintf("%d %s", i, quote(p.Partition(i).Name()))
}

// errSeveral: the id is in more than one partition (enqueued under
// ordering keys of different partitions).
type errSeveral struct {
	id    string
	parts []string
}

func (e *errSeveral) Error() string {
	return fmt.Sprintf("item %s is in %d partitions (%s); nothing changed: give the partition's name as the queue",
		quote(e.id), len(e.parts), strings.Join(e.parts, ", "))
}

// locate returns the partition that holds id: its routing partition when
// the id is there (one GetPrefix without payload), else the one Locate
// finds (one GetPrefix per partition), for an item enqueued under an
// ordering key. It returns redisq.ErrNotFound, or *errSeveral when
// several partitions hold the id and none is its routing partition.
func locate(ctx context.Context, p *redisq.Partitioned, id string) (int, error) {
	i := p.PartitionOf(id)
	_, err := p.Partition(i).GetPrefix(ctx, id, 0)
	if !errors.Is(err, redisq.ErrNotFound) {
		return i, err
	}
	at, err := p.Locate(ctx, id)
	switch {
	case err != nil:
		return 0, err
	case len(at) > 1:
		var names []string
		for _, k := range at {
			names = append(names, quote(p.Partition(k).Name()))
		}
		return 0, &errSeveral{id, names}
	}
	return at[0], nil
}

// parseCursor parses -cursor: n offsets, comma-separated ("" is the first
// page).
func parseCursor(s string, n int, name string) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	if c := strings.Count(s, ",") + 1; c != n {
		return nil, usageErr("-cursor %s has %d offsets; queue %s has %s: give the cursor list printed", quote(short(s)), c, quote(name), plural(int64(n), "partition"))
	}
	cur := make([]int64, n)
	for i, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || v < 0 || v > maxCursorOffset {
			return nil, usageErr("-cursor %s: offset %s is not a number in 0..%d", quote(short(s)), quote(short(f)), int64(maxCursorOffset))
		}
		cur[i] = v
	}
	return cur, nil
}

// maxCursorOffset bounds each offset of a cursor, so that the sum of
// MaxPartitions of them (the position a page prints) cannot overflow;
// no partition holds that many items.
const maxCursorOffset = 1 << 53

// short is s cut to 64 bytes for a message, "..." marking the cut.
func short(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// formatCursor is a cursor as -cursor takes it: "17,16,17".
func formatCursor(cur []int64, n int) string {
	if cur == nil {
		cur = make([]int64, n)
	}
	s := make([]string, len(cur))
	for i, v := range cur {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, ",")
}
