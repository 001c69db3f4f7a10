package dqprom

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/dq-go/delayqueue/redisq"
)

// discover finds the queues of a server-wide collector for one scrape:
// first the bounded SCAN step, which registers what it finds, then the
// registry. It returns the queues to read, sorted by name, with the
// problems that do not fail the scrape, or the error that does (the
// registry could not be read). Queues stay open from one scrape to the
// next; those no longer found are closed.
func (c *RedisCollector) discover(ctx context.Context) ([]*target, []string, error) {
	var notes []string
	var found []string
	if c.scanner != nil {
		var err error
		if found, err = c.scanner.Next(ctx, c.cfg.scanKeys); err != nil {
			notes = append(notes, "scanning for queues missing from "+redisq.RegistryKey+": "+err.Error())
		}
	}
	names, err := redisq.ListQueues(ctx, c.client)
	if err != nil {
		return nil, nil, err
	}
	names = append(names, found...)
	slices.Sort(names)
	names = slices.Compact(names)
	var ts []*target
	c.opened, ts = rediscover(c.opened, names)
	ts, more := uniqueLabels(ts)
	c.lastLabels = c.lastLabels[:0]
	for _, t := range ts {
		c.lastLabels = append(c.lastLabels, t.label)
	}
	return ts, append(notes, more...), nil
}

// uniqueLabels returns ts without the targets whose label an earlier one
// has, and a note for each one left out. Labels are unique unless two
// names longer than MaxLabelLen share their first bytes and 64 bits of
// SHA-256 (QueueLabel), or two given Queue values have one name: a
// Prometheus scrape with two series of one label set fails whole, so the
// second queue is left out, and said to be.
func uniqueLabels(ts []*target) ([]*target, []string) {
	byLabel := make(map[string]string, len(ts))
	out := ts[:0:0]
	var notes []string
	for _, t := range ts {
		if other, ok := byLabel[t.label]; ok {
			if other == t.name {
				notes = append(notes, fmt.Sprintf("two queues named %q: the second is not reported", t.label))
			} else {
				notes = append(notes, fmt.Sprintf("queues with SHA-256 %s and %s both have the queue label %q: the second is not reported",
					fullHash(other), fullHash(t.name), t.label))
			}
			continue
		}
		byLabel[t.label] = t.name
		out = append(out, t)
	}
	return out, notes
}

func fullHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
