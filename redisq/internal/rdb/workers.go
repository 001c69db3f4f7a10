package rdb

import (
	"context"
	"math"
)

var (
	scriptBeat         = newScript("beat")
	scriptBye          = newScript("bye")
	scriptWorkerIDs    = newScript("worker_ids")
	scriptWorkerHashes = newScript("worker_hashes")
)

// Beat is one worker heartbeat (lua/beat.lua); Leases is the encoded list
// of the messages its handlers run, More how many did not fit, Life how
// long the heartbeat lasts (ms).
type Beat struct {
	ID, Name, Host            string
	PID, Concurrency, Running int
	Held                      int
	Leases                    string
	More                      int
	Life                      int64
}

// Heartbeat writes b, and removes up to 100 expired workers from the list.
func (r *Runner) Heartbeat(ctx context.Context, b Beat) error {
	_, err := r.run(ctx, scriptBeat, []string{r.Keys.Workers, r.Keys.Worker(b.ID)}, b.ID, b.Name, b.Host, b.PID,
		b.Concurrency, b.Running, b.Held, b.Leases, b.More, b.Life)
	return err
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

// WorkerBeat is one worker's last heartbeat, as stored (Gone when its hash
// expired since it was listed).
type WorkerBeat struct {
	Name, Host                string
	PID, Concurrency, Running int
	Held, More                int
	Started, Beat             int64 // ms
	Leases                    string
	Gone                      bool
}

// workerFields is the number of reply elements per worker of
// lua/worker_hashes.lua.
const workerFields = 10

// WorkerBeats reads the heartbeats of the workers ids (lua/worker_hashes.lua).
func (r *Runner) WorkerBeats(ctx context.Context, ids []string) ([]WorkerBeat, error) {
	keys := make([]string, len(ids))
	args := make([]interface{}, len(ids))
	for i, id := range ids {
		keys[i], args[i] = r.Keys.Worker(id), id
	}
	res, err := r.run(ctx, scriptWorkerHashes, keys, args...)
	if err != nil {
		return nil, err
	}
	out := make([]WorkerBeat, 0, len(ids))
	for i := range ids {
		if (i+1)*workerFields > len(res) {
			break
		}
		f := res[i*workerFields : (i+1)*workerFields]
		str := func(j int) string { s, _ := f[j].(string); return s }
		num := func(j int) int { return int(max(min(ToMS(f[j]), math.MaxInt32), 0)) }
		out = append(out, WorkerBeat{
			Name: str(0), Host: str(1), PID: num(2), Started: ToMS(f[3]), Beat: ToMS(f[4]),
			Concurrency: num(5), Running: num(6), Held: num(7), Leases: str(8), More: num(9),
			Gone: str(4) == "",
		})
	}
	return out, nil
}
