package redisq

import (
	"context"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// auditLimits checks the indexes of the rate and concurrency limits (see
// lua/include/rate_one.lua and conc_one.lua) against the items that Audit read:
// limited holds, by member, each item with a limit key or a limit's field,
// and score each member of sched's score. An item waiting for a rate slot
// (wt) is scheduled and in its key's rw (or rx); one waiting for a place
// (cq) is scheduled and in its key's cq; one holding a place (cf) is
// leased and in its key's cf; and every member of those zsets is such an
// item. And no item waits for a place that is free: a key whose waiting
// items are parked (scheduled at the latest due time) has no more free
// places than waiting items already made due.
func (q *Queue) auditLimits(ctx context.Context, rep *AuditReport, limited map[string]rdb.ItemState, score map[string]float64) error {
	keys := map[string]bool{}
	for _, s := range limited {
		if s.RateWait || s.PlaceWait != rdb.NoPlaceWait || s.Place {
			keys[s.LimitKey] = true
		}
	}
	for _, scan := range []func(context.Context, uint64, int64) ([]string, uint64, error){q.db.LimitKeys, q.db.ConcKeys} {
		var cursor uint64
		for {
			ks, next, err := scan(ctx, cursor, 1000)
			if err != nil {
				return err
			}
			for _, key := range ks {
				keys[key] = true
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	limits, err := q.db.ConcLimits(ctx) // concurrency limits, by key
	if err != nil {
		return err
	}
	// in[member] says which index of its key names it.
	type where struct{ rate, place, given, holds bool }
	in := map[string]where{}
	for key := range keys {
		var taken, parked, given int64
		for _, idx := range rdb.LimitIndexes {
			z := q.db.LimitIndexName(key, idx)
			err := q.db.ScanLimitIndex(ctx, key, idx, func(m string) {
				s, ok := limited[m]
				w := in[m]
				switch idx {
				case rdb.RateWaiting, rdb.RateLetGo:
					w.rate = true
					if !ok || s.State != rdb.Scheduled || !s.RateWait || s.LimitKey != key {
						rep.addf("limit key %q: %s names %q, which does not wait for a rate slot of the key", key, z, m)
					}
				case rdb.PlaceHeld:
					w.holds = true
					if !ok || s.State != rdb.Leased || !s.Place || s.LimitKey != key {
						rep.addf("limit key %q: %s names %q, which holds no place of the key", key, z, m)
					}
					// An expired lease holds its place until a claim
					// reclaims it, which gives the place on.
					taken++
				case rdb.PlaceWaiting:
					w.place = true
					if !ok || s.State != rdb.Scheduled || s.PlaceWait != rdb.WaitsForPlace || s.LimitKey != key || score[m] != float64(rdb.MaxDueMS) {
						rep.addf("limit key %q: %s names %q, which does not wait for a place of the key", key, z, m)
					}
					parked++
				case rdb.PlaceGiven:
					w.given = true
					if !ok || s.State != rdb.Scheduled || s.PlaceWait != rdb.GivenPlace || s.LimitKey != key || score[m] == float64(rdb.MaxDueMS) {
						rep.addf("limit key %q: %s names %q, which was not given a place of the key", key, z, m)
					}
					given++
				}
				in[m] = w
			})
			if err != nil {
				return err
			}
		}
		if parked > 0 {
			switch kk, ok := limits[key]; {
			case !ok:
				rep.addf("limit key %q: %d items wait for a place under no concurrency limit", key, parked)
			case kk == 0:
				rep.addf("limit key %q: the removal of its concurrency limit did not end (%d items wait): call SetConcurrencyLimit(ctx, key, 0) again", key, parked)
			case kk-taken-given > 0:
				rep.addf("limit key %q: %d items wait for a place while %d of %d places are free", key, parked, kk-taken-given, kk)
			}
		}
	}
	for m, s := range limited {
		w := in[m]
		if s.RateWait && s.State == rdb.Scheduled && !w.rate {
			rep.addf("item %q waits for a rate slot of limit key %q but is not in its index", rdb.MemberID(m), s.LimitKey)
		}
		if s.PlaceWait == rdb.WaitsForPlace && !w.place {
			rep.addf("item %q waits for a place of limit key %q but is not in its index", rdb.MemberID(m), s.LimitKey)
		}
		if s.PlaceWait == rdb.GivenPlace && !w.given {
			rep.addf("item %q was given a place of limit key %q but is not in its index", rdb.MemberID(m), s.LimitKey)
		}
		if s.PlaceWait != rdb.NoPlaceWait && s.State != rdb.Scheduled {
			rep.addf("item %q (state %s) says it waits for a place of limit key %q", rdb.MemberID(m), s.State, s.LimitKey)
		}
		if s.Place && !w.holds {
			rep.addf("item %q holds a place of limit key %q but is not in its index", rdb.MemberID(m), s.LimitKey)
		}
	}
	return nil
}
