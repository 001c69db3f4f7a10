package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/redis/go-redis/v9"
)

// serverSnap is one reading of the whole Redis server: command calls by name
// from INFO commandstats (Redis 7 counts the commands a script runs as well
// as the script call itself), CPU time from INFO cpu and used_memory from
// INFO memory. The -impl redis and
// asynq phases take one before and after what they measure; the server
// should be a scratch one that nothing else uses meanwhile.
type serverSnap struct {
	calls map[string]int64 // nil: unavailable
	usec  map[string]int64 // time in each command (INFO commandstats); nil: unavailable
	cpu   time.Duration    // < 0: unavailable
	mem   int64            // used_memory, bytes; < 0: unavailable
}

func snapServer(ctx context.Context, c *redis.Client) serverSnap {
	calls, usec := commandStats(ctx, c)
	return serverSnap{calls: calls, usec: usec, cpu: serverCPU(ctx, c), mem: serverMem(ctx, c)}
}

// scriptCommands are the commands that run a script: their time in INFO
// commandstats includes the commands the script runs, which are counted
// under their own names too.
var scriptCommands = []string{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"}

// timeSplit splits the server's time from s0 to s by INFO commandstats:
// calls of scripts, the time in them (their commands' included), and the
// time in every other command (a script's own commands and the commands
// sent alone). ok is false when a reading is missing.
func (s serverSnap) timeSplit(s0 serverSnap) (scripts, scriptUs, otherUs int64, ok bool) {
	if s.usec == nil || s0.usec == nil {
		return 0, 0, 0, false
	}
	for k, v := range s.usec {
		if k == "info" {
			continue
		}
		if slices.Contains(scriptCommands, k) {
			scripts += s.calls[k] - s0.calls[k]
			scriptUs += v - s0.usec[k]
		} else {
			otherUs += v - s0.usec[k]
		}
	}
	return scripts, scriptUs, otherUs, true
}

// serverMem returns the server's used_memory (INFO memory; -1: unknown).
func serverMem(ctx context.Context, c *redis.Client) int64 {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// setServerMem records in r the growth of the server's used_memory from s0
// to s1, in all and per item: what the phase left in memory (the ack
// tombstones of the last 30 s, completed items kept for their Retention).
func setServerMem(r *report.Result, items int, s0, s1 serverSnap) {
	if s0.mem < 0 || s1.mem < 0 || items <= 0 {
		return
	}
	r.ServerMemBytes = s1.mem - s0.mem
	r.ServerMemPerItem = float64(r.ServerMemBytes) / float64(items)
	r.Note = report.JoinNote(r.Note, fmt.Sprintf("redis-server used_memory grew %s B over the phase: %.0f B per item (INFO memory; ack tombstones live 30 s, items with a Retention are kept completed)",
		report.Group(r.ServerMemBytes), r.ServerMemPerItem))
}

// commandsSince returns the commands the server ran from s0 to s, the INFO
// readings themselves excluded (-1: unknown).
func (s serverSnap) commandsSince(s0 serverSnap) int64 {
	if s.calls == nil || s0.calls == nil {
		return -1
	}
	var n int64
	for k, v := range s.calls {
		if k != "info" {
			n += v - s0.calls[k]
		}
	}
	return n
}

// cpuSince returns the server's CPU time from s0 to s (-1: unknown).
func (s serverSnap) cpuSince(s0 serverSnap) time.Duration {
	if s.cpu < 0 || s0.cpu < 0 {
		return -1
	}
	return s.cpu - s0.cpu
}

// setServer records in r what the server spent on items, from the first snapshot
// to the last, per item. With three snapshots (before, between enqueueing
// and consuming, after), the note splits the commands between the two.
func setServer(r *report.Result, items int, snaps ...serverSnap) {
	first, last := snaps[0], snaps[len(snaps)-1]
	cmds, cpu := last.commandsSince(first), last.cpuSince(first)
	r.ServerCmds, r.ServerCPUNs = cmds, int64(cpu)
	if items <= 0 || cmds < 0 {
		return
	}
	per := func(n int64) string { return strconv.FormatFloat(float64(n)/float64(items), 'f', 2, 64) }
	r.ServerCmdsPerItem = float64(cmds) / float64(items)
	if cpu >= 0 {
		r.ServerCPUPerItemNs = float64(cpu) / float64(items)
	}
	note := fmt.Sprintf("redis-server: %s commands per item (INFO commandstats, scripts' own calls included), CPU %s per item (INFO cpu; %s in all)",
		per(cmds), report.Dur(int64(r.ServerCPUPerItemNs)), report.Dur(int64(cpu)))
	if len(snaps) == 3 {
		note += fmt.Sprintf("; of the commands, %s per item while enqueueing, %s while consuming",
			per(snaps[1].commandsSince(first)), per(last.commandsSince(snaps[1])))
	}
	if n, sus, ous, ok := last.timeSplit(first); ok && n > 0 && cpu >= 0 {
		// What a script costs beyond the commands it runs is the Lua
		// around them: the script's setup (its arguments, its local
		// functions) and each redis.call's conversions.
		us := func(v int64) string { return report.Dur(v * 1000 / int64(items)) }
		note += fmt.Sprintf("; of its CPU per item (INFO commandstats usec): %s in %s script calls (%s per call), the commands inside them and those sent alone %s, outside any command (sockets, event loop) %s",
			us(sus), per(n), report.Dur(sus*1000/n), us(ous), report.Dur((int64(cpu)-(sus*1000))/int64(items)))
	}
	r.Note = report.JoinNote(r.Note, note)
}

// setIdle records in r the server's commands over an idle phase of length el,
// per 10 s.
func setIdle(r *report.Result, s0, s1 serverSnap, el time.Duration) {
	n := s1.commandsSince(s0)
	if n < 0 || el <= 0 {
		return
	}
	r.ServerCmds = n
	r.IdleCmdsPer10s = float64(n) * float64(10*time.Second) / float64(el)
	r.Note = report.JoinNote(r.Note, fmt.Sprintf("redis-server ran %d commands (scripts' own calls included) in %s idle: %.1f per 10 s",
		n, report.Dur(int64(el)), r.IdleCmdsPer10s))
}
