package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The calls that read or write the keyspace beyond one queue's scripts: the
// registries of queue names, the partition tables, the keys of a queue's
// Cluster slot, and the SCANs that find queues. Every key name they use is
// built here or in keys.go.

// ClusterSlots is the number of Redis Cluster hash slots.
const ClusterSlots = 16384

// KeySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag (the part between the first '{' and the next '}', when not
// empty), or of the whole key, modulo 16384, as Redis computes it.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(CRC16(0, key)) % ClusterSlots
}

// TagSlot is the slot of the keys of the queue name: of its hash tag
// "dq:NAME".
func TagSlot(name string) int { return KeySlot(SeqKey(name)) }

// TagCRC is the CRC16 of the start of a queue's hash tag, "dq:", continued
// over prefix, for those who look for names in given slots (the
// partitions' layout).
func TagCRC(prefix string) uint16 { return CRC16(CRC16(0, "dq:"), prefix) }

// CRC16 continues the CRC16 (XMODEM) crc over s.
func CRC16[T string | []byte](crc uint16, s T) uint16 {
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

// SlotKeysAtOnce is the most keys of the queue's slot that EachKey lists,
// with one CLUSTER GETKEYSINSLOT: a command of O(keys) on the master's
// main thread (1.6-2.5 ms for 10,000 keys, 15 ms for 100,000 and 146 ms
// for 990,000 on the development VM, Redis 7.0, read from INFO
// commandstats), which has no cursor to page a larger slot with, since
// every call lists from the slot's start.
const SlotKeysAtOnce = 10000

// ScanPage is the COUNT of the SCAN and SSCAN pages: each call examines
// about that many keys (or members), a short command.
const ScanPage = 1000

// ValidName reports whether name may be a queue's: not empty, no braces
// (which would end its hash tag).
func ValidName(name string) bool { return name != "" && !strings.ContainsAny(name, "{}") }

// GlobEscape escapes the SCAN MATCH metacharacters in s. It works byte by
// byte, as Redis matches: ranging over runes would turn the bytes of a name
// that is not valid UTF-8 into U+FFFD and match nothing.
func GlobEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ForEachNode runs fn on every node that holds data: c itself, every
// master of a Cluster (concurrently) or every shard of a Ring.
func ForEachNode(ctx context.Context, c redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch v := c.(type) {
	case *redis.Client:
		return fn(ctx, v)
	case *redis.ClusterClient:
		return v.ForEachMaster(ctx, fn)
	case *redis.Ring:
		return v.ForEachShard(ctx, fn)
	}
	return fmt.Errorf("redisq: listing keys needs *redis.Client, *redis.ClusterClient or *redis.Ring, got %T", c)
}

// ScanKeys SCANs every node that holds data for keys matching the glob
// match, calling fn (serialized) with each non-empty page.
func ScanKeys(ctx context.Context, c redis.UniversalClient, match string, fn func([]string) error) error {
	var mu sync.Mutex
	return ForEachNode(ctx, c, func(ctx context.Context, node *redis.Client) error {
		var cur uint64
		for {
			ks, next, err := node.Scan(ctx, cur, match, ScanPage).Result()
			if err != nil {
				return err
			}
			if len(ks) > 0 {
				mu.Lock()
				err = fn(ks)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if cur = next; cur == 0 {
				return nil
			}
		}
	})
}

// seqPattern matches every queue's sequence key, and no other key of a
// queue whose name is valid (see QueueNames).
const seqPattern = "{dq:*}:seq"

// QueueNames returns the queue names of keys that matched seqPattern.
func QueueNames(keys []string) []string {
	var names []string
	for _, k := range keys {
		name := strings.TrimSuffix(strings.TrimPrefix(k, "{dq:"), "}:seq")
		// Names never hold braces (New refuses them); a key such as
		// "{dq:a}:m:}:seq" is an item of queue "a", not a queue.
		if len(name)+len("{dq:}:seq") == len(k) && ValidName(name) {
			names = append(names, name)
		}
	}
	return names
}

// ScanQueues SCANs every node of c for the queues' sequence keys (pages of
// ScanPage), calling fn with the names of each page that has some.
func ScanQueues(ctx context.Context, c redis.UniversalClient, fn func([]string) error) error {
	return ScanKeys(ctx, c, seqPattern, func(keys []string) error {
		if names := QueueNames(keys); len(names) > 0 {
			return fn(names)
		}
		return nil
	})
}

// ScanQueuesPage is one SCAN of node for the queues' sequence keys, from
// cursor, of about count keys: the names seen, and the next cursor (0: the
// pass over the node is complete).
func ScanQueuesPage(ctx context.Context, node *redis.Client, cursor uint64, count int64) ([]string, uint64, error) {
	ks, next, err := node.Scan(ctx, cursor, seqPattern, count).Result()
	return QueueNames(ks), next, err
}

// NodeAddr names a node of ForEachNode.
func NodeAddr(node *redis.Client) string { return node.Options().Addr }

// Register adds names to the set reg (RegistryKey or
// PartitionedRegistryKey): one SADD.
func Register(ctx context.Context, c redis.UniversalClient, reg string, names ...string) error {
	a := make([]interface{}, len(names))
	for i, n := range names {
		a[i] = n
	}
	return c.SAdd(ctx, reg, a...).Err()
}

// Unregister removes name from the set reg: one SREM.
func Unregister(ctx context.Context, c redis.UniversalClient, reg, name string) error {
	return c.SRem(ctx, reg, name).Err()
}

// Registered returns the valid names of the set reg, each once, in SSCAN
// order: pages of ScanPage.
func Registered(ctx context.Context, c redis.UniversalClient, reg string) ([]string, error) {
	seen := map[string]bool{}
	var names []string
	for cur := uint64(0); ; {
		ms, next, err := c.SScan(ctx, reg, cur, "", ScanPage).Result()
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			// A member New would refuse was not added by redisq.
			if ValidName(m) && !seen[m] {
				seen[m] = true
				names = append(names, m)
			}
		}
		if cur = next; cur == 0 {
			return names, nil
		}
	}
}

// Exists is what QueuesExist found of one queue: whether its sequence key
// exists, or that Redis refused to say (an ACL user allowed only some
// keys: unknown).
type Exists struct {
	Exists, Refused bool
}

// QueuesExist reads whether the sequence key of each of names exists: one
// EXISTS each, pipelined by ScanPage. A refusal (an error reply) is
// reported per name; any other error ends the call.
func QueuesExist(ctx context.Context, c redis.UniversalClient, names []string) ([]Exists, error) {
	out := make([]Exists, 0, len(names))
	for len(names) > 0 {
		chunk := names[:min(len(names), ScanPage)]
		names = names[len(chunk):]
		cmds := make([]*redis.IntCmd, len(chunk))
		// Pipelined's error is the first command's error: look at each.
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, n := range chunk {
				cmds[i] = p.Exists(ctx, SeqKey(n))
			}
			return nil
		})
		for _, cmd := range cmds {
			var reply redis.Error
			switch err := cmd.Err(); {
			case err == nil:
				out = append(out, Exists{Exists: cmd.Val() > 0})
			case errors.As(err, &reply):
				out = append(out, Exists{Refused: true})
			default:
				return nil, err
			}
		}
	}
	return out, nil
}

// PartitionTable reads the partition table of the partitioned queue name
// (one HGETALL; empty when there is none).
func PartitionTable(ctx context.Context, c redis.UniversalClient, name string) (map[string]string, error) {
	return c.HGetAll(ctx, PartitionsKey(name)).Result()
}

// Table is one partition table that PartitionTables read, or the error
// reply Redis refused it with (Err: an ACL user allowed only some keys).
type Table struct {
	Fields map[string]string
	Err    error
}

// PartitionTables reads the partition table of each of names: one HGETALL
// each, pipelined. Any error but a refusal ends the call.
func PartitionTables(ctx context.Context, c redis.UniversalClient, names []string) ([]Table, error) {
	cmds := make([]*redis.MapStringStringCmd, len(names))
	_, _ = c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = pl.HGetAll(ctx, PartitionsKey(n))
		}
		return nil
	})
	out := make([]Table, len(names))
	for i, cmd := range cmds {
		f, err := cmd.Result()
		var reply redis.Error
		switch {
		case err == nil:
			out[i].Fields = f
		case errors.As(err, &reply):
			out[i].Err = err
		default:
			return nil, err
		}
	}
	return out, nil
}

// DeletePartitionTable deletes the partition table of name and reports
// how many keys it deleted (0 or 1).
func DeletePartitionTable(ctx context.Context, c redis.UniversalClient, name string) (int64, error) {
	return c.Del(ctx, PartitionsKey(name)).Result()
}

// PartitionTableExists reports whether name has a partition table.
func PartitionTableExists(ctx context.Context, c redis.UniversalClient, name string) (bool, error) {
	n, err := c.Exists(ctx, PartitionsKey(name)).Result()
	return n > 0, err
}

// EachKey calls fn with pages of the names of the queue's keys that start
// with its prefix (items: the item hashes only), and returns how many keys
// of the queue's slot it did not list. On one server (or a Ring) it SCANs
// the keyspace and lists them all. On a Cluster it reads only the queue's
// slot, on the master that holds it, never the other masters: CLUSTER
// COUNTKEYSINSLOT, then CLUSTER GETKEYSINSLOT of at most SlotKeysAtOnce
// keys, so that a larger slot is listed in part (on Redis 7.0 its newest
// keys, as it lists a slot's keys newest first).
func (r *Runner) EachKey(ctx context.Context, items bool, fn func([]string) error) (int64, error) {
	prefix := r.Keys.Prefix
	if items {
		prefix = r.Keys.Items
	}
	cc, ok := r.Client.(*redis.ClusterClient)
	if !ok {
		return 0, ScanKeys(ctx, r.Client, GlobEscape(prefix)+"*", fn)
	}
	node, err := cc.MasterForKey(ctx, r.Keys.Sched)
	if err != nil {
		return 0, err
	}
	slot := KeySlot(r.Keys.Sched)
	n, err := node.ClusterCountKeysInSlot(ctx, slot).Result()
	if err != nil {
		return 0, err
	}
	keys, err := node.ClusterGetKeysInSlot(ctx, slot, int(min(n, SlotKeysAtOnce))).Result()
	if err != nil {
		return 0, err
	}
	var unlisted int64
	if n > SlotKeysAtOnce {
		unlisted = max(0, n-int64(len(keys)))
	}
	var mine []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			mine = append(mine, k)
		}
	}
	for len(mine) > 0 {
		page := mine[:min(len(mine), ScanPage)]
		if err := fn(page); err != nil {
			return unlisted, err
		}
		mine = mine[len(page):]
	}
	return unlisted, nil
}

// ItemID is the id of an item hash key of the queue.
func (r *Runner) ItemID(key string) string { return strings.TrimPrefix(key, r.Keys.Items) }

// DeleteLeftKeys deletes the queue's keys that are left after Destroy's
// batches (counters, sequence, marker, timer, tombstones, replies, private
// wake keys) and returns how many it deleted. On a Cluster it reads only
// the queue's slot (CLUSTER GETKEYSINSLOT on its master, in pages of
// ScanPage keys plus the keys of other queues that share the slot, which
// stay first in the slot's list), on one server it SCANs.
func (r *Runner) DeleteLeftKeys(ctx context.Context) (int64, error) {
	var deleted int64
	del := func(keys []string) error {
		n, err := r.Client.Del(ctx, keys...).Result()
		deleted += n
		return err
	}
	cc, ok := r.Client.(*redis.ClusterClient)
	if !ok {
		return deleted, ScanKeys(ctx, r.Client, GlobEscape(r.Keys.Prefix)+"*", del)
	}
	node, err := cc.MasterForKey(ctx, r.Keys.Sched)
	if err != nil {
		return 0, err
	}
	slot := KeySlot(r.Keys.Sched)
	others := 0
	for {
		keys, err := node.ClusterGetKeysInSlot(ctx, slot, others+ScanPage).Result()
		if err != nil {
			return deleted, err
		}
		var mine []string
		for _, k := range keys {
			if strings.HasPrefix(k, r.Keys.Prefix) {
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
