package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

func uniqueFlags(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.release, "release", false, "end the window now: the next enqueue of the key is stored (the item that took it is not changed)")
}

// cmdUnique shows a unique key's window, or ends it (-release).
func cmdUnique(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	defer q.Close()
	key := e.args[1]
	if e.release {
		ok, err := q.ReleaseUnique(e.ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			return notFound("no window of unique key %s in queue %s; nothing changed", quote(key), quote(e.args[0]))
		}
		e.printf("released the window of unique key %s: its next enqueue is stored\n", quote(key))
		return nil
	}
	w, err := q.UniqueWindow(e.ctx, key)
	if errors.Is(err, redisq.ErrNotFound) {
		return notFound("no window of unique key %s in queue %s: an enqueue of it is stored", quote(key), quote(e.args[0]))
	}
	if err != nil {
		return err
	}
	now, err := e.c.Time(e.ctx).Result()
	if err != nil {
		return err
	}
	e.printf("%s\n", uniqueSays(w, now))
	return nil
}

// uniqueSays describes a held window at now (Redis TIME).
func uniqueSays(w redisq.UniqueWindow, now time.Time) string {
	return fmt.Sprintf("unique key %s: held by item %s until %s (%s); meanwhile an enqueue of the key is refused (Unique) or replaces that item while it waits (Debounce)",
		quote(w.Key), quote(w.ID), stamp(w.Until), rel(w.Until, now))
}
