package redisq

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// AuditReport is the result of Audit.
type AuditReport struct {
	Items     int      // item hashes found
	Scheduled int      // members of sched
	Leased    int      // members of lease
	Dead      int      // members of dead
	Problems  []string // inconsistencies found (at most 100 listed)
	More      int      // problems beyond those listed
}

// OK reports whether the audit found no problem.
func (r *AuditReport) OK() bool { return len(r.Problems) == 0 }

func (r *AuditReport) addf(format string, a ...interface{}) {
	if len(r.Problems) >= 100 {
		r.More++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
}

// Audit checks the queue's invariants: every item hash is in exactly the one
// of sched/lease/dead its state names, under the member it records, and every
// zset member has its hash. It reads the zsets in chunks and finds the item
// hashes by SCAN of the keyspace, or on a Cluster within the queue's slot
// on its master alone (CLUSTER GETKEYSINSLOT for a slot of up to 10,000
// keys, else a SCAN of that master): many round trips, no long-running
// command. It is not atomic, so run it while the queue is quiescent or
// expect transient findings. It returns a
// report, or a Redis/context error. Audit works after Close.
func (q *Queue) Audit(ctx context.Context) (*AuditReport, error) {
	rep := &AuditReport{}
	zs := make([]map[string]bool, 3)
	for i := 0; i < 3; i++ {
		zs[i] = map[string]bool{}
		var cur uint64
		for {
			mem, c, err := q.client.ZScan(ctx, q.keys[i], cur, "", 1000).Result()
			if err != nil {
				return nil, err
			}
			for j := 0; j+1 < len(mem); j += 2 {
				zs[i][mem[j]] = true
			}
			if cur = c; cur == 0 {
				break
			}
		}
	}
	rep.Scheduled, rep.Leased, rep.Dead = len(zs[0]), len(zs[1]), len(zs[2])

	var keys []string
	err := q.eachQueueKey(ctx, q.mpref, func(ks []string) error {
		keys = append(keys, ks...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Items = len(keys)

	seen := map[string]bool{}
	for start := 0; start < len(keys); start += 500 {
		chunk := keys[start:min(start+500, len(keys))]
		cmds := make([]*redis.SliceCmd, len(chunk))
		if _, err := q.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range chunk {
				cmds[i] = p.HMGet(ctx, k, "st", "mem")
			}
			return nil
		}); err != nil {
			return nil, err
		}
		for i, k := range chunk {
			v := cmds[i].Val()
			st, _ := v[0].(string)
			mem, _ := v[1].(string)
			id := strings.TrimPrefix(k, q.mpref)
			if mem == "" || memberID(mem) != id {
				rep.addf("item %q: member %q does not name it", id, mem)
				continue
			}
			seen[mem] = true
			want := map[string]int{"s": 0, "l": 1, "d": 2}
			w, ok := want[st]
			if !ok {
				rep.addf("item %q: bad state %q", id, st)
				continue
			}
			for z := 0; z < 3; z++ {
				if zs[z][mem] != (z == w) {
					rep.addf("item %q (state %s): in %s = %v", id, st, q.keys[z], zs[z][mem])
				}
			}
		}
	}
	for z := 0; z < 3; z++ {
		for mem := range zs[z] {
			if !seen[mem] {
				rep.addf("orphan member %q in %s (no matching item hash)", mem, q.keys[z])
			}
		}
	}
	return rep, nil
}

// globEscape escapes the SCAN MATCH metacharacters in s. It works byte by
// byte, as Redis matches: ranging over runes would turn the bytes of a name
// that is not valid UTF-8 into U+FFFD and match nothing.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
