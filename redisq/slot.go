package redisq

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// keySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag (the part between the first '{' and the next '}', when not empty),
// or of the whole key, modulo 16384, as Redis computes it.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(0, key)) % clusterSlots
}

// crc16 continues the CRC16 (XMODEM) crc over s.
func crc16[T string | []byte](crc uint16, s T) uint16 {
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16tab = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// slotKeysAtOnce is the most keys of the queue's slot that Audit lists,
// with one CLUSTER GETKEYSINSLOT: a command of O(keys) on the master's
// main thread (1.6-2.5 ms for 10,000 keys, 15 ms for 100,000 and 146 ms
// for 990,000 on the development VM, Redis 7.0, read from INFO
// commandstats), which has no cursor to page a larger slot with, since
// every call lists from the slot's start.
const slotKeysAtOnce = 10000

// eachQueueKey calls fn with pages of the names of the queue's keys that
// start with prefix, and returns how many keys of the queue's slot it did
// not list. On one server (or a Ring) it SCANs the keyspace and lists
// them all. On a Cluster it reads only the queue's slot, on the master
// that holds it, never the other masters: CLUSTER COUNTKEYSINSLOT, then
// CLUSTER GETKEYSINSLOT of at most slotKeysAtOnce keys, so that a larger
// slot is listed in part (on Redis 7.0 its newest keys, as it lists a
// slot's keys newest first).
func (q *Queue) eachQueueKey(ctx context.Context, prefix string, fn func([]string) error) (int64, error) {
	cc, ok := q.client.(*redis.ClusterClient)
	if !ok {
		return 0, scanKeys(ctx, q.client, globEscape(prefix)+"*", fn)
	}
	node, err := cc.MasterForKey(ctx, q.db.Keys.Sched)
	if err != nil {
		return 0, err
	}
	slot := keySlot(q.db.Keys.Sched)
	n, err := node.ClusterCountKeysInSlot(ctx, slot).Result()
	if err != nil {
		return 0, err
	}
	keys, err := node.ClusterGetKeysInSlot(ctx, slot, int(min(n, slotKeysAtOnce))).Result()
	if err != nil {
		return 0, err
	}
	var unlisted int64
	if n > slotKeysAtOnce {
		unlisted = max(0, n-int64(len(keys)))
	}
	var mine []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			mine = append(mine, k)
		}
	}
	for len(mine) > 0 {
		page := mine[:min(len(mine), scanPage)]
		if err := fn(page); err != nil {
			return unlisted, err
		}
		mine = mine[len(page):]
	}
	return unlisted, nil
}

// deleteQueueKeys deletes the queue's keys that are left after Destroy's
// batches (counters, sequence, marker, timer, tombstones, replies, private
// wake keys) and returns how many it deleted. On a Cluster it reads only
// the queue's slot (CLUSTER GETKEYSINSLOT on its master, in pages of
// scanPage keys plus the keys of other queues that share the slot, which
// stay first in the slot's list), on one server it SCANs.
func (q *Queue) deleteQueueKeys(ctx context.Context) (int64, error) {
	var deleted int64
	del := func(keys []string) error {
		n, err := q.client.Del(ctx, keys...).Result()
		deleted += n
		return err
	}
	cc, ok := q.client.(*redis.ClusterClient)
	if !ok {
		return deleted, scanKeys(ctx, q.client, globEscape(q.db.Keys.Prefix)+"*", del)
	}
	node, err := cc.MasterForKey(ctx, q.db.Keys.Sched)
	if err != nil {
		return 0, err
	}
	slot := keySlot(q.db.Keys.Sched)
	others := 0
	for {
		keys, err := node.ClusterGetKeysInSlot(ctx, slot, others+scanPage).Result()
		if err != nil {
			return deleted, err
		}
		var mine []string
		for _, k := range keys {
			if strings.HasPrefix(k, q.db.Keys.Prefix) {
				mine = append(mine, k)
			}
		}
		if len(mine) == 0 {
			return deleted, nil
		}
		others = len(keys) - len(mine)
		if err := del(mine); err != nil {
			return deleted, err
		}
	}
}
