package rdb

import (
	"context"
	"math"
	"strconv"
	"strings"
)

var (
	scriptBeat        = newScript("beat")
	scriptBye         = newScript("bye")
	scriptWorkerIDs   = newScript("worker_ids")
	scriptWorkerBeats = newScript("worker_beats")
)

// Beat is one worker heartbeat (lua/beat.lua): what the worker is and does
// (Leases is the encoded list of the messages its handlers run, More how
// many did not fit), Started the Redis time of its first beat (0 on the
// first), how long the heartbeat lasts (Life, ms), and Sweep to drop the
// expired workers from the list too.
type Beat struct {
	ID, Name, Host            string
	PID, Concurrency, Running int
	Held                      int
	Leases                    string
	More                      int
	Started                   int64
	Life                      int64
	Sweep                     bool
}

// Heartbeat writes b and returns Redis TIME (ms): the first beat's is the
// worker's start.
func (r *Runner) Heartbeat(ctx context.Context, b Beat) (int64, error) {
	fields := encodeFields(b.Name, b.Host, strconv.Itoa(b.PID), strconv.FormatInt(b.Started, 10),
		strconv.Itoa(b.Concurrency), strconv.Itoa(b.Running), strconv.Itoa(b.Held), b.Leases, strconv.Itoa(b.More))
	sweep := "0"
	if b.Sweep {
		sweep = "1"
	}
	res, err := r.run(ctx, scriptBeat, []string{r.Keys.Workers, r.Keys.Worker(b.ID)}, b.ID, fields, b.Life, sweep)
	if err != nil {
		return 0, err
	}
	return toInt(res[0]), nil
}

// Bye removes the worker id from the list at once (lua/bye.lua).
func (r *Runner) Bye(ctx context.Context, id string) error {
	_, err := r.run(ctx, scriptBye, []string{r.Keys.Workers, r.Keys.Worker(id)}, id)
	return err
}

// LiveWorker is a worker whose heartbeat has not expired: its id and when
// it expires (ms).
type LiveWorker struct {
	ID      string
	Expires int64
}

// LiveWorkers lists up to n live workers, soonest to expire first
// (lua/worker_ids.lua).
func (r *Runner) LiveWorkers(ctx context.Context, n int) ([]LiveWorker, error) {
	res, err := r.run(ctx, scriptWorkerIDs, []string{r.Keys.Workers}, n)
	if err != nil {
		return nil, err
	}
	var out []LiveWorker
	for i := 1; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		out = append(out, LiveWorker{id, ToMS(res[i+1])})
	}
	return out, nil
}

// WorkerBeat is one worker's last heartbeat, as stored (Gone when it
// expired since it was listed, or does not decode).
type WorkerBeat struct {
	Name, Host                string
	PID, Concurrency, Running int
	Held, More                int
	Started, Beat             int64 // ms
	Leases                    string
	Gone                      bool
}

// WorkerBeats reads the heartbeats of the workers ids
// (lua/worker_beats.lua): data from Redis, every field checked.
func (r *Runner) WorkerBeats(ctx context.Context, ids []string) ([]WorkerBeat, error) {
	keys := make([]string, len(ids))
	args := make([]interface{}, len(ids))
	for i, id := range ids {
		keys[i], args[i] = r.Keys.Worker(id), id
	}
	res, err := r.run(ctx, scriptWorkerBeats, keys, args...)
	if err != nil {
		return nil, err
	}
	out := make([]WorkerBeat, len(ids))
	for i := range out {
		out[i].Gone = true
		if i >= len(res) {
			continue
		}
		v, _ := res[i].(string)
		at, rest, ok := strings.Cut(v, "|")
		f := decodeFields(rest)
		if !ok || len(f) < 9 {
			continue
		}
		num := func(s string) int {
			n, _ := strconv.ParseInt(s, 10, 64)
			return int(max(min(n, math.MaxInt32), 0))
		}
		ms := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
		out[i] = WorkerBeat{Name: f[0], Host: f[1], PID: num(f[2]), Started: ms(f[3]), Concurrency: num(f[4]),
			Running: num(f[5]), Held: num(f[6]), Leases: f[7], More: num(f[8]), Beat: ms(at)}
		if out[i].Started == 0 { // its first beat
			out[i].Started = out[i].Beat
		}
	}
	return out, nil
}

// encodeFields writes fields as "len:field" each, so that a field of any
// bytes comes back exact.
func encodeFields(fields ...string) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
	}
	return b.String()
}

// decodeFields reads encodeFields' text; anything malformed ends it there.
func decodeFields(s string) []string {
	var out []string
	for s != "" {
		n, rest, ok := strings.Cut(s, ":")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k < 0 || k > len(rest) {
			return out
		}
		out = append(out, rest[:k])
		s = rest[k:]
	}
	return out
}
