package rdb

import (
	"github.com/redis/go-redis/v9"
)

// Script is one script of lua/ and how a call of it is made: the queue's
// fixed keys it declares (a call adds the keys only it knows: an item's
// hash, a tombstone), whether a call carries a request id whose reply key
// it declares, and whether it is an acknowledging write. Declaring exactly
// what a call touches keeps it running while its Cluster slot migrates
// whenever Redis can tell where those keys are.
type Script struct {
	*redis.Script
	name string
	keys []key
	// rid: a call (runOnce) declares the key of its request's reply,
	// {dq:NAME}:r:RID, which the script reads or writes when the item is
	// gone.
	rid bool
	// acks: an acknowledging write, which WithReplicaAcks confirms with
	// WAIT before the call returns.
	acks bool
	// life: the script may start the queue's sequence and replies {life,
	// reply} (see lifeWrap).
	life bool
	src  string // what Redis runs, to name the command of a refusal
}

// bySHA finds a script by the SHA-1 Redis names it by in errors.
var bySHA = map[string]*Script{}

// newScript assembles lua/NAME.lua.
func newScript(name string, keys ...key) *Script {
	src, life := lifeWrap(assemble(name, false))
	s := &Script{Script: redis.NewScript(src), name: name, keys: keys, life: life, src: src}
	bySHA[s.Hash()] = s
	return s
}

func (s *Script) withRID() *Script { s.rid = true; return s }
func (s *Script) acked() *Script   { s.acks = true; return s }

// Sources returns the text of every script as Redis runs it, for the
// tests that compare them.
func Sources() []string {
	var out []string
	for _, s := range bySHA {
		out = append(out, s.src)
	}
	return out
}
