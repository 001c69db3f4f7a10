package rdb

import (
	"context"

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

// bySHA finds a script by the SHA-1 Redis names it by in errors; byName by
// its file's name.
var (
	bySHA  = map[string]*Script{}
	byName = map[string]*Script{}
)

// newScript assembles lua/NAME.lua.
func newScript(name string, keys ...key) *Script {
	src, life := lifeWrap(assemble(name))
	s := &Script{Script: redis.NewScript(src), name: name, keys: keys, life: life, src: src}
	bySHA[s.Hash()] = s
	byName[name] = s
	return s
}

// Named returns the script of lua/NAME.lua, for tests that load, spot or
// run a script themselves. It panics for an unknown name.
func Named(name string) *Script {
	s, ok := byName[name]
	if !ok {
		panic("rdb: no script " + name)
	}
	return s
}

// Source is the text Redis runs.
func (s *Script) Source() string { return s.src }

// RunScript runs s as the typed functions do (the queue's keys, ARGV[1],
// migration retries, WAIT, a new life, ACL errors), for tests that call a
// script with arguments of their own, a request id of their choosing
// among them.
func (r *Runner) RunScript(ctx context.Context, s *Script, extra []string, args ...interface{}) ([]interface{}, error) {
	return r.run(ctx, s, extra, args...)
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
