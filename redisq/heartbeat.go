package redisq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// Who holds the work: every running Worker writes a heartbeat, so that an
// operator can tell a big backlog from "every worker is dead" and see which
// process holds which message since when (Queue.Workers, dqctl workers,
// the dashboard's Workers tab).
//
// The list of live workers is a zset of the queue (worker id -> when its
// heartbeat expires), and each heartbeat a hash that expires with it (see
// internal/rdb/keys.go). A beat is one script every WorkerOptions.Heartbeat
// (5 s) of four commands (TIME, ZADD, HSET, PEXPIRE), with at most 16 KiB
// of lease list; every twelfth also drops up to 100 expired workers from
// the list. A Worker that stops deletes its entry; one that dies leaves it
// to expire, three beats later.

// DefaultHeartbeat is WorkerOptions.Heartbeat when it is 0.
const DefaultHeartbeat = 5 * time.Second

// heartbeatLife is how many beats a heartbeat outlives its writer by.
const heartbeatLife = 3

// sweepEvery is how many beats a worker makes between two drops of the
// expired workers from the list (the readers skip them meanwhile).
const sweepEvery = 12

// maxBeatLeaseBytes bounds the lease list of one heartbeat; the messages
// beyond it are counted (WorkerInfo.MoreLeases), not listed.
const maxBeatLeaseBytes = 16 << 10

// workerPage is how many workers one read script returns.
const workerPage = 100

// WorkerInfo is one live Worker of a queue, as its last heartbeat shows it
// (Queue.Workers). Times are by the Redis clock.
type WorkerInfo struct {
	Queue       string    `json:"queue"` // the queue it works on (a partition's, for a partitioned queue)
	ID          string    `json:"id"`    // random, per Worker value
	Name        string    `json:"name"`  // WorkerOptions.Name, or the host name
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Started     time.Time `json:"started"` // its first heartbeat
	Beat        time.Time `json:"beat"`    // its last heartbeat
	Expires     time.Time `json:"expires"` // when the heartbeat lapses unless renewed
	Concurrency int       `json:"concurrency"`
	Running     int       `json:"running"` // handlers running
	// Held counts the messages it has taken and not yet settled or handed
	// back: the running ones, and those being acked (of all its queues,
	// for a worker over several: NewMultiWorker).
	Held int `json:"held"`
	// Leases are the messages its handlers run, oldest claim first, as of
	// the last beat; MoreLeases counts those the heartbeat had no room for.
	Leases     []WorkerLease `json:"leases,omitempty"`
	MoreLeases int           `json:"more_leases,omitempty"`
}

// WorkerLease is one message a worker's handler runs.
type WorkerLease struct {
	ID      string    `json:"id"`
	Claimed time.Time `json:"claimed"` // Message.ClaimedAt
	Attempt int       `json:"attempt"`
}

// MaxWorkers is the most workers Workers returns.
const MaxWorkers = 10000

// Workers returns the live Workers of the queue (every process), sorted by
// name then id, as their last heartbeats show them: a Worker beats every
// WorkerOptions.Heartbeat and leaves the list when it stops; one that died
// (SIGKILL, a lost host) leaves it three beats after its last. It reads
// the live ids in one script (at most MaxWorkers), then their heartbeats,
// 100 per script (at most 16 KiB of lease list each), so every reply is
// bounded. It returns ErrClosed after Close, or a Redis/context error.
func (q *Queue) Workers(ctx context.Context) ([]WorkerInfo, error) {
	if q.isClosed() {
		return nil, ErrClosed
	}
	ids, err := q.db.LiveWorkers(ctx, MaxWorkers)
	if err != nil {
		return nil, err
	}
	var out []WorkerInfo
	for len(ids) > 0 {
		page := ids[:min(len(ids), workerPage)]
		ids = ids[len(page):]
		names := make([]string, len(page))
		for i, l := range page {
			names[i] = l.ID
		}
		beats, err := q.db.WorkerBeats(ctx, names)
		if err != nil {
			return nil, err
		}
		for i, b := range beats {
			if b.Gone { // expired since
				continue
			}
			out = append(out, WorkerInfo{
				Queue: q.name, ID: page[i].ID, Expires: msTime(page[i].Expires),
				Name: b.Name, Host: b.Host, PID: b.PID, Started: msTime(b.Started), Beat: msTime(b.Beat),
				Concurrency: b.Concurrency, Running: b.Running, Held: b.Held,
				Leases: decodeLeases(b.Leases), MoreLeases: b.More,
			})
		}
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// encodeLeases writes ls as "claimed ms,attempt,len:id" each, in order,
// until the next would pass max bytes; it returns the text and how many
// did not fit. The length prefix keeps any id (of any bytes) exact.
func encodeLeases(ls []WorkerLease, max int) (string, int) {
	var b strings.Builder
	for i, l := range ls {
		e := strconv.FormatInt(l.Claimed.UnixMilli(), 10) + "," + strconv.Itoa(l.Attempt) + "," + strconv.Itoa(len(l.ID)) + ":" + l.ID
		if b.Len()+len(e) > max {
			return b.String(), len(ls) - i
		}
		b.WriteString(e)
	}
	return b.String(), 0
}

// decodeLeases reads encodeLeases' text. It is data from Redis: anything
// malformed ends the list there.
func decodeLeases(s string) []WorkerLease {
	var out []WorkerLease
	for s != "" {
		ms, rest, ok1 := strings.Cut(s, ",")
		att, rest, ok2 := strings.Cut(rest, ",")
		n, rest, ok3 := strings.Cut(rest, ":")
		c, err1 := strconv.ParseInt(ms, 10, 64)
		a, err2 := strconv.Atoi(att)
		k, err3 := strconv.Atoi(n)
		if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil || err3 != nil || k < 0 || k > len(rest) {
			return out
		}
		out = append(out, WorkerLease{ID: rest[:k], Claimed: msTime(c), Attempt: a})
		s = rest[k:]
	}
	return out
}

// newWorkerID returns a random worker id.
func newWorkerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}

// heartbeat beats every w.beatEvery until stop is closed, then says bye:
// on each of the worker's queues (each partition), listing the leases of
// that queue's messages.
func (w *Worker) heartbeat(stop <-chan struct{}) {
	if w.beatEvery <= 0 {
		return
	}
	life := heartbeatLife * w.beatEvery
	host, pid := hostName(), os.Getpid()
	t := time.NewTicker(w.beatEvery)
	defer t.Stop()
	failing := make([]bool, len(w.beatQs))
	started := make([]int64, len(w.beatQs)) // the first beat's Redis time, per queue
	for beats := 0; ; beats++ {
		eachQueue(w.beatQs, func(i int, q *Queue) {
			ctx, cancel := context.WithTimeout(w.base, min(w.beatEvery, settleTimeout))
			running, held, ls := w.snapshot(q)
			enc, more := encodeLeases(ls, maxBeatLeaseBytes)
			now, err := q.db.Heartbeat(ctx, rdb.Beat{ID: w.id, Name: w.name, Host: host, PID: pid, Concurrency: w.n,
				Running: running, Held: held, Leases: enc, More: more, Started: started[i], Life: life.Milliseconds(),
				Sweep: beats%sweepEvery == 0})
			cancel()
			if err == nil && started[i] == 0 {
				started[i] = now
			}
			switch {
			case err != nil && !failing[i]:
				// Once: the worker works without it, but it is missing from
				// Queue.Workers, dqctl workers and the dashboard.
				w.log.Warn("redisq: worker: heartbeat failed; the worker is not shown among the queue's workers until one succeeds",
					"queue", q.name, "err", err)
				failing[i] = true
			case err != nil:
				w.log.Debug("redisq: worker: heartbeat failed", "queue", q.name, "err", err)
			default:
				failing[i] = false
			}
		})
		select {
		case <-t.C:
		case <-stop:
			eachQueue(w.beatQs, func(_ int, q *Queue) {
				ctx, cancel := context.WithTimeout(w.base, settleTimeout)
				_ = q.db.Bye(ctx, w.id)
				cancel()
			})
			return
		}
	}
}

// eachQueue runs f for each of qs, concurrently when there are several,
// so that one slow server does not hold up the others' calls.
func eachQueue(qs []*Queue, f func(i int, q *Queue)) {
	if len(qs) == 1 {
		f(0, qs[0])
		return
	}
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Add(1)
		go func() { defer wg.Done(); f(i, q) }()
	}
	wg.Wait()
}

// snapshot returns the running handlers' messages of q, oldest claim
// first, and the counts the heartbeat reports (held: the worker's, of all
// its queues).
func (w *Worker) snapshot(q *Queue) (running, held int, ls []WorkerLease) {
	w.mu.Lock()
	for _, s := range w.lanes {
		if j := s.cur; j != nil && j.state == jobRunning && j.m.q == q {
			ls = append(ls, WorkerLease{ID: j.m.ID, Claimed: j.m.ClaimedAt, Attempt: j.m.Attempts})
		}
	}
	held = w.held
	w.mu.Unlock()
	slices.SortStableFunc(ls, func(a, b WorkerLease) int { return a.Claimed.Compare(b.Claimed) })
	return len(ls), held, ls
}
