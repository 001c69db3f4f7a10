package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

var (
	scriptMigrate  = newScript("migrate", kStats, kSeq)
	scriptPause    = newScript("pause", kSeq).acked()
	scriptResume   = newScript("resume", kSeq, kWake).acked()
	scriptGiveUp   = newScript("give_up_timer", kWake, kTimer)
	scriptUnblock  = newScript("unblock")
	scriptStopFeed = newScript("stop_feed")
	scriptParts    = newScript("partitions")
)

// Migrate converts the data of a queue stored by an earlier version, once
// (lua/migrate.lua); partitioned is set, and nothing changed, when the name
// is a partitioned queue's.
func (r *Runner) Migrate(ctx context.Context) (partitioned bool, err error) {
	res, err := r.run(ctx, scriptMigrate, []string{r.Keys.Parts})
	if err != nil {
		return false, err
	}
	return toInt(res[0]) == 2, nil
}

// Pause marks the queue paused (lua/pause.lua), Resume unmarks it and
// rings the wake marker (lua/resume.lua).
func (r *Runner) Pause(ctx context.Context) error {
	_, err := r.run(ctx, scriptPause, nil)
	return err
}

func (r *Runner) Resume(ctx context.Context) error {
	_, err := r.run(ctx, scriptResume, nil)
	return err
}

// GiveUpTimer gives the queue's timer up if the Queue value timerID owns it
// and wakes another waiter to take it over (lua/give_up_timer.lua).
func (r *Runner) GiveUpTimer(ctx context.Context, timerID string) error {
	_, err := r.run(ctx, scriptGiveUp, nil, timerID)
	return err
}

// Unblock wakes the BZPOPMIN of the waiter whose private key is key
// (lua/unblock.lua); the key expires on its own.
func (r *Runner) Unblock(ctx context.Context, key string) error {
	return scriptUnblock.Run(ctx, r.Client, []string{key}).Err()
}

// StopFeed ends the XREAD of the keeper whose private stream is key
// (lua/stop_feed.lua).
func (r *Runner) StopFeed(ctx context.Context, key string) error {
	return scriptStopFeed.Run(ctx, r.Client, []string{key}).Err()
}

// Partitions creates the partition table of the partitioned queue name
// with the partitions names unless it exists (lua/partitions.lua), and
// returns the table's fields, or ordinary set when an ordinary queue holds
// the name (and no table).
func Partitions(ctx context.Context, client redis.UniversalClient, name string, names []string) (table map[string]string, ordinary bool, err error) {
	args := make([]interface{}, 0, 1+len(names))
	args = append(args, len(names))
	for _, n := range names {
		args = append(args, n)
	}
	res, err := scriptParts.Run(ctx, client, []string{PartitionsKey(name), SeqKey(name)}, args...).Slice()
	if err != nil {
		return nil, false, err
	}
	if len(res) == 1 && toInt(res[0]) == -1 {
		return nil, true, nil
	}
	table = make(map[string]string, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		k, _ := res[i].(string)
		v, _ := res[i+1].(string)
		table[k] = v
	}
	return table, false, nil
}
