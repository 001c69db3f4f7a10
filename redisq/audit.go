package redisq

import (
	"context"
	"fmt"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// AuditReport is the result of Audit.
type AuditReport struct {
	Items     int      // item hashes found
	Scheduled int      // members of sched
	Leased    int      // members of lease
	Dead      int      // members of dead
	Completed int      // members of done whose time has not passed
	Problems  []string // inconsistencies found (at most 100 listed)
	More      int      // problems beyond those listed
	// Unlisted is how many keys of the queue's Cluster slot Audit did not
	// list (a slot of more than 10,000 keys, see Audit); 0 when it listed
	// every key. An item hash among them is found only when a zset names
	// it.
	Unlisted int64
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
// of sched/lease/dead/done its state names, under the member it records, and
// every zset member has its hash (but for a member of done whose time has
// passed: its hash expired, and the member goes with a later ack or purge). It reads the zsets (ZSCAN pages of 1000) and the
// item hashes' state (HMGET, pipelined by 500): many round trips, no
// long-running command. It finds the item hashes by SCAN of the keyspace
// (pages of 1000 keys: its time grows with the server's keys), or on a
// Cluster within the queue's slot on its master alone: CLUSTER
// COUNTKEYSINSLOT, then one CLUSTER GETKEYSINSLOT of at most 10,000 keys
// (O(keys), 1.6-2.5 ms for 10,000 on the development VM). A larger slot
// (a queue of more than about 10,000 items, or of fewer with the ack
// tombstones of the last 30 s) is listed only in part, since
// GETKEYSINSLOT has no cursor and a whole listing would hold the master's
// thread for O(slot) (about 15 ms per 100,000 keys): Audit then also reads
// the hash of every item the zsets name, so each of those is checked, but
// an item hash that no zset names is found only among the keys listed
// (on Redis 7.0 the slot's newest); AuditReport.Unlisted says how many keys
// were not listed. It is not atomic, so run it while the queue is
// quiescent or expect transient findings. It returns a report, or a
// Redis/context error. Audit works after Close.
func (q *Queue) Audit(ctx context.Context) (*AuditReport, error) {
	rep := &AuditReport{}
	sets := []rdb.Set{rdb.SetSched, rdb.SetLease, rdb.SetDead, rdb.SetDone} // by rdb.States
	zs := make([]map[string]bool, len(sets))
	// expiry: when each member of done goes (its hash expires then, its
	// member stays until a later ack or purge removes it).
	expiry := map[string]float64{}
	// score: each member of sched's score, for the limits' check.
	score := map[string]float64{}
	for i, set := range sets {
		zs[i] = map[string]bool{}
		err := q.db.ScanSet(ctx, set, func(mem string, sc float64) {
			zs[i][mem] = true
			switch set {
			case rdb.SetDone:
				expiry[mem] = sc
			case rdb.SetSched:
				score[mem] = sc
			}
		})
		if err != nil {
			return nil, err
		}
	}
	rep.Scheduled, rep.Leased, rep.Dead = len(zs[0]), len(zs[1]), len(zs[2])

	var keys []string
	var err error
	rep.Unlisted, err = q.db.EachKey(ctx, true, func(ks []string) error {
		keys = append(keys, ks...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// listed is how many of keys were listed; the rest, the hashes of the
	// zsets' members left unlisted, may not exist.
	listed := len(keys)
	if rep.Unlisted > 0 {
		have := make(map[string]bool, len(keys))
		for _, key := range keys {
			have[key] = true
		}
		for z := range zs {
			for mem := range zs[z] {
				if key := q.db.Keys.Item(rdb.MemberID(mem)); !have[key] {
					have[key] = true
					keys = append(keys, key)
				}
			}
		}
	}

	seen := map[string]bool{}
	limited := map[string]rdb.ItemState{} // by member: the items with a limit key or a limit's field
	for start := 0; start < len(keys); start += 500 {
		chunk := keys[start:min(start+500, len(keys))]
		states, err := q.db.ItemStates(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for i, k := range chunk {
			if start+i >= listed && !states[i].Exists {
				continue // no such hash: its member is reported below
			}
			rep.Items++
			st, mem := states[i].State, states[i].Member
			id := q.db.ItemID(k)
			if mem == "" || rdb.MemberID(mem) != id {
				rep.addf("item %q: member %q does not name it", id, mem)
				continue
			}
			seen[mem] = true
			if s := states[i]; s.LimitKey != "" || s.RateWait || s.PlaceWait != rdb.NoPlaceWait || s.Place {
				limited[mem] = s
			}
			w, ok := rdb.SetOf(st)
			if !ok {
				rep.addf("item %q: bad state %q", id, st)
				continue
			}
			for z, set := range sets {
				if zs[z][mem] != (set == w) {
					rep.addf("item %q (state %s): in %s = %v", id, st, q.db.SetName(set), zs[z][mem])
				}
			}
		}
	}
	// Read after the hashes: a member of done whose time has passed by now
	// may have lost its hash, as it should.
	now, err := q.db.Time(ctx)
	if err != nil {
		return nil, err
	}
	for z, set := range sets {
		for mem := range zs[z] {
			if set == rdb.SetDone {
				if float64(now.UnixMilli()) >= expiry[mem] {
					continue
				}
				rep.Completed++
			}
			if !seen[mem] {
				rep.addf("orphan member %q in %s (no matching item hash)", mem, q.db.SetName(set))
			}
		}
	}
	if err := q.auditLimits(ctx, rep, limited, score); err != nil {
		return nil, err
	}
	return rep, nil
}
