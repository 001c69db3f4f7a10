package rdb

import (
	"context"
	"strconv"
)

// State is an item's state as its hash's field st stores it: each state
// lives in one zset of the queue (see Keys).
type State string

const (
	Scheduled State = "s" // in sched
	Leased    State = "l" // in lease
	Dead      State = "d" // in dead
	Completed State = "c" // in done, kept for its retention
)

// States are the states, in the order of the Sets that hold them.
var States = []State{Scheduled, Leased, Dead, Completed}

// Set is one of the queue's zsets of items, one per State.
type Set int

const (
	SetSched Set = iota
	SetLease
	SetDead
	SetDone
)

// SetOf returns the zset that holds the items in state s, and false for
// no state of an item.
func SetOf(s State) (Set, bool) {
	for i, st := range States {
		if st == s {
			return Set(i), true
		}
	}
	return 0, false
}

// SetName is the key of zset s, for reports.
func (r *Runner) SetName(s Set) string {
	switch s {
	case SetSched:
		return r.Keys.Sched
	case SetLease:
		return r.Keys.Lease
	case SetDead:
		return r.Keys.Dead
	}
	return r.Keys.Done
}

// PlaceWait is an item's field cq: what it waits for under its limit
// key's concurrency limit.
type PlaceWait string

const (
	NoPlaceWait   PlaceWait = ""
	WaitsForPlace PlaceWait = "1" // parked: scheduled at MaxDueMS until a place frees
	GivenPlace    PlaceWait = "2" // a freed place was given to it: due, not yet leased
)

// ScanSet calls fn with every member of zset s and its score: ZSCAN pages
// of ScanPage (many short commands; not atomic).
func (r *Runner) ScanSet(ctx context.Context, s Set, fn func(member string, score float64)) error {
	return r.scanZ(ctx, r.SetName(s), fn)
}

// LimitIndex is one of the zsets of a limit key that name its items (see
// lua/include/rate_read.lua and conc_keys.lua).
type LimitIndex int

const (
	RateWaiting  LimitIndex = iota // rw: waiting for a rate slot
	RateLetGo                      // rx: waiting under an earlier rate limit, being let go
	PlaceHeld                      // cf: leased, holding a place
	PlaceWaiting                   // cq: waiting for a place
	PlaceGiven                     // cp: given a freed place, not yet leased
)

// LimitIndexes are the limit indexes, in order.
var LimitIndexes = []LimitIndex{RateWaiting, RateLetGo, PlaceHeld, PlaceWaiting, PlaceGiven}

// LimitIndexName is the key of index i of limit key key, for reports.
func (r *Runner) LimitIndexName(key string, i LimitIndex) string {
	rw, rx, cf, cq, cp := r.Keys.LimitIndexes(key)
	return [...]string{rw, rx, cf, cq, cp}[i]
}

// ScanLimitIndex calls fn with every member of index i of limit key key:
// ZSCAN pages of ScanPage.
func (r *Runner) ScanLimitIndex(ctx context.Context, key string, i LimitIndex, fn func(member string)) error {
	return r.scanZ(ctx, r.LimitIndexName(key, i), func(m string, _ float64) { fn(m) })
}

func (r *Runner) scanZ(ctx context.Context, z string, fn func(member string, score float64)) error {
	var cur uint64
	for {
		mem, next, err := r.Client.ZScan(ctx, z, cur, "", ScanPage).Result()
		if err != nil {
			return err
		}
		for j := 0; j+1 < len(mem); j += 2 {
			score, _ := strconv.ParseFloat(mem[j+1], 64)
			fn(mem[j], score)
		}
		if cur = next; cur == 0 {
			return nil
		}
	}
}

// ConcLimits reads every concurrency limit of the queue: limit key ->
// K (one HGETALL; 0 while a removal lets the key's items go).
func (r *Runner) ConcLimits(ctx context.Context) (map[string]int64, error) {
	kv, err := r.Client.HGetAll(ctx, r.Keys.Conc).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(kv))
	for key, v := range kv {
		out[key], _ = strconv.ParseInt(v, 10, 64)
	}
	return out, nil
}
