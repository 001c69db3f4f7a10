package rdb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkScriptPrefix measures what a script costs the server before its
// first command: every call of a script runs its prefix (the includes it
// uses: local functions, key names, constants) before the script's own
// lines. It runs, at 1,000 calls/s as the steady benchmark does (a server
// that idles between calls: colder caches than a tight loop), with the
// arguments of a claim that acks:
//
//   - evalsha/return-1: a script that returns at once, the floor;
//   - evalsha/prefix: ack_claim cut before its first line of its own;
//   - fcall/prefix: the same local functions defined once, in a Redis
//     function library, and a function that computes the key names.
//
// server-µs/call is the server's time per call (INFO commandstats). The
// difference between the last two is what moving the scripts into a
// function library would save per call (docs/performance.md).
//
//	go test ./redisq/internal/rdb -run '^$' -bench ScriptPrefix -benchtime 5000x
func BenchmarkScriptPrefix(b *testing.B) {
	s := redistest.New(b)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()

	src := scriptAckClaim.Source()
	own := strings.Index(src, "\nlocal now, frac = now_ms()")
	if own < 0 {
		b.Fatal("ack_claim: no line 'local now, frac = now_ms()' to cut before")
	}
	prefix := src[:own] + "\ndo return {0} end\nend local r = body() return {NEW_LIFE, r}"

	// The library: the prefix's lines but its key names at the top level,
	// the key names in the function (they come from the call's ARGV[1]).
	var defs, keyLines []string
	for _, l := range strings.Split(strings.TrimPrefix(src[:own], "local NEW_LIFE = 0 local function body() "), "\n") {
		if strings.HasPrefix(l, "local K_") {
			keyLines = append(keyLines, strings.ReplaceAll(l, "ARGV[1]", "args[1]"))
			continue
		}
		defs = append(defs, l)
	}
	lib := "#!lua name=dqprefix\nlocal K_PREFIX = ''\n" + strings.Join(defs, "\n") +
		"\nredis.register_function('dqprefix', function(keys, args)\n" + strings.Join(keyLines, "\n") + "\nreturn {0}\nend)\n"
	if err := c.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		b.Fatalf("FUNCTION LOAD: %v", err)
	}

	keys := []string{"{dq:b}:sched", "{dq:b}:lease", "{dq:b}:dead", "{dq:b}:wake", "{dq:b}:stats", "{dq:b}:seq",
		"{dq:b}:timer", "{dq:b}:late", "{dq:b}:i:a", "{dq:b}:a:t"}
	args := []interface{}{"{dq:b}:i:", 1, 30000000, 0, 1000000, 3600000000, 100, "tid", 1, "a", "t", ""}
	run := func(b *testing.B, call func() *redis.Cmd, stat string) {
		if err := call().Err(); err != nil {
			b.Fatal(err)
		}
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		b.ResetTimer()
		for range b.N {
			<-tick.C
			if err := call().Err(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		var calls, usec int64
		for _, l := range strings.Split(info, "\n") {
			if strings.HasPrefix(l, "cmdstat_"+stat+":") {
				fmt.Sscanf(strings.TrimPrefix(l, "cmdstat_"+stat+":"), "calls=%d,usec=%d", &calls, &usec)
			}
		}
		if calls != int64(b.N) {
			b.Fatalf("INFO commandstats: %d calls of %s, want %d", calls, stat, b.N)
		}
		b.ReportMetric(float64(usec)/float64(calls), "server-µs/call")
	}
	ret1 := redis.NewScript("return 1")
	pre := redis.NewScript(prefix)
	b.Run("evalsha/return-1", func(b *testing.B) {
		run(b, func() *redis.Cmd { return ret1.Run(ctx, c, keys, args...) }, "evalsha")
	})
	b.Run("evalsha/prefix", func(b *testing.B) {
		run(b, func() *redis.Cmd { return pre.Run(ctx, c, keys, args...) }, "evalsha")
	})
	b.Run("fcall/prefix", func(b *testing.B) {
		run(b, func() *redis.Cmd { return c.FCall(ctx, "dqprefix", keys, args...) }, "fcall")
	})
}
