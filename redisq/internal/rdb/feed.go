package rdb

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// FeedRead is what one ReadFeed returned.
type FeedRead struct {
	Last    string // the id of the last new entry of the change feed; "" when none came
	Stopped bool   // the private stream got an entry: the reader is to stop
}

// ReadFeed blocks, on c (the wait client), for up to block on the queue's
// change feed of the registrations (entries after the id after) and the
// private stream priv, reading up to 100 entries of each (one XREAD). A
// timeout is not an error.
func (r *Runner) ReadFeed(ctx context.Context, c redis.UniversalClient, priv, after string, block time.Duration) (FeedRead, error) {
	res, err := c.XRead(ctx, &redis.XReadArgs{
		Streams: []string{r.Keys.Recx, priv, after, "0"},
		Count:   100,
		Block:   block,
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return FeedRead{}, err
	}
	var fr FeedRead
	for _, s := range res {
		if s.Stream == priv && len(s.Messages) > 0 {
			fr.Stopped = true
		}
		if s.Stream == r.Keys.Recx && len(s.Messages) > 0 {
			fr.Last = s.Messages[len(s.Messages)-1].ID
		}
	}
	return fr, nil
}
