package rdb

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// A script's header states what a call passes, one line a position, as
// asynq's internal/rdb does:
//
//	-- KEYS[1] -> {dq:NAME}:sched
//	-- KEYS[4...] -> {dq:NAME}:m:ID, the hash of each item
//	-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
//	-- ARGV: none
//	-- Output: {1}
//
// "[i...]" is a tail of any length from position i (none included), and
// ends its list; a line that goes on is indented ("--   ").
type header struct {
	keys, argv []headerPos
	// keysTail, argvTail: the last position is a tail.
	keysTail, argvTail bool
}

type headerPos struct {
	n    int
	text string
}

var (
	headerLine = regexp.MustCompile(`^-- (KEYS|ARGV)\[(\d+)(\.\.\.)?\] -> (\S.*)$`)
	headerNone = regexp.MustCompile(`^-- (KEYS|ARGV): none$`)
)

// parseHeader reads the positions a header states.
func parseHeader(h string) (header, error) {
	var hd header
	var output, argvNone, keysNone bool
	for _, l := range strings.Split(h, "\n") {
		if strings.HasPrefix(l, "-- KEYS:") && !headerNone.MatchString(l) {
			return hd, fmt.Errorf("the old form %q: one line a position (-- KEYS[1] -> ...)", l)
		}
		if m := headerNone.FindStringSubmatch(l); m != nil {
			if m[1] == "KEYS" {
				keysNone = true
			} else {
				argvNone = true
			}
			continue
		}
		if strings.HasPrefix(l, "-- Output: ") {
			output = true
			continue
		}
		m := headerLine.FindStringSubmatch(l)
		if m == nil {
			if strings.HasPrefix(l, "-- KEYS[") || strings.HasPrefix(l, "-- ARGV[") {
				return hd, fmt.Errorf("%q is not \"-- KEYS[i] -> text\"", l)
			}
			continue
		}
		n, _ := strconv.Atoi(m[2])
		list, tail := &hd.keys, &hd.keysTail
		if m[1] == "ARGV" {
			list, tail = &hd.argv, &hd.argvTail
		}
		if *tail {
			return hd, fmt.Errorf("%s[%d] after the tail", m[1], n)
		}
		if n != len(*list)+1 {
			return hd, fmt.Errorf("%s[%d] where %s[%d] comes", m[1], n, m[1], len(*list)+1)
		}
		*list = append(*list, headerPos{n, m[4]})
		*tail = m[3] != ""
	}
	switch {
	case !output:
		return hd, fmt.Errorf("no line \"-- Output: ...\"")
	case len(hd.keys) == 0 && !keysNone:
		return hd, fmt.Errorf("no KEYS[1] (nor \"-- KEYS: none\")")
	case len(hd.argv) == 0 && !argvNone:
		return hd, fmt.Errorf("no ARGV[1] (nor \"-- ARGV: none\")")
	}
	return hd, nil
}

// keyName is the key a position's text names, as a pattern for the key
// of queue q: "{dq:NAME}:m:ID, the item's hash" names {dq:q}:m: and any
// id (a word in capitals stands for any text). ok is false when the text
// names no one key.
func keyName(text, q string) (*regexp.Regexp, bool) {
	name, _, _ := strings.Cut(text, ",")
	name, _, _ = strings.Cut(name, " ")
	if !strings.HasPrefix(name, "{dq:") {
		return nil, false
	}
	p := regexp.QuoteMeta(name)
	p = strings.Replace(p, "NAME", regexp.QuoteMeta(q), 1)
	p = regexp.MustCompile(`[A-Z][A-Z0-9_]*(\\\.\\\.\\\.)?`).ReplaceAllString(p, ".*")
	return regexp.MustCompile("^" + p + "$"), true
}

// check compares one call of the script with the header: the number of
// KEYS and ARGV, and each key or argument the header names.
func (hd header) check(q string, keys []string, argv []interface{}) []string {
	var errs []string
	count := func(what string, got int, ps []headerPos, tail bool) {
		fixed := len(ps)
		if tail {
			fixed--
		}
		if got != fixed && !(tail && got > fixed) {
			want := strconv.Itoa(fixed)
			if tail {
				want = "at least " + want
			}
			errs = append(errs, fmt.Sprintf("%d %s, the header %s", got, what, want))
		}
	}
	count("KEYS", len(keys), hd.keys, hd.keysTail)
	count("ARGV", len(argv), hd.argv, hd.argvTail)
	name := func(what string, ps []headerPos, tail bool, got func(int) (string, bool)) {
		for i, p := range ps {
			if tail && i == len(ps)-1 {
				break
			}
			re, ok := keyName(p.text, q)
			v, present := got(i)
			if ok && present && !re.MatchString(v) {
				errs = append(errs, fmt.Sprintf("%s[%d] is %q, the header %q", what, p.n, v, p.text))
			}
		}
	}
	name("KEYS", hd.keys, hd.keysTail, func(i int) (string, bool) {
		if i < len(keys) {
			return keys[i], true
		}
		return "", false
	})
	name("ARGV", hd.argv, hd.argvTail, func(i int) (string, bool) {
		if i < len(argv) {
			return fmt.Sprint(argv[i]), true
		}
		return "", false
	})
	return errs
}

// evalRecorder records the KEYS and ARGV of every EVALSHA a client sends,
// by script.
type evalRecorder struct {
	mu    sync.Mutex
	calls map[string][]evalCall // by script name
}

type evalCall struct {
	keys []string
	argv []interface{}
}

func (r *evalRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *evalRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if len(a) >= 3 && strings.EqualFold(fmt.Sprint(a[0]), "evalsha") {
			s := bySHA[fmt.Sprint(a[1])]
			n, _ := strconv.Atoi(fmt.Sprint(a[2]))
			if s != nil && 3+n <= len(a) {
				keys := make([]string, n)
				for i := range keys {
					keys[i] = fmt.Sprint(a[3+i])
				}
				r.mu.Lock()
				r.calls[s.name] = append(r.calls[s.name], evalCall{keys, a[3+n:]})
				r.mu.Unlock()
			}
		}
		return next(ctx, cmd)
	}
}

func (r *evalRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Every script's header states, one line a position, the KEYS and ARGV
// that its Go call passes: each Runner call is made once against a real
// redis-server (the item, lease and registration need not exist) and
// every EVALSHA it sends is compared with the header of its script, the
// number of KEYS and ARGV, and the name of each key the header names.
func TestHeadersMatchTheCalls(t *testing.T) {
	s := redistest.New(t)
	rec := &evalRecorder{calls: map[string][]evalCall{}}
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	c.AddHook(rec)
	ctx := context.Background()
	const q = "hdr"
	r := &Runner{Client: c, Keys: QueueKeys(q), Inst: "t:"}
	job := Job{Kind: "k", LimitKey: "lk", UniqueKey: "u", UniqueFor: 60000, MaxAttempts: 3}
	l := Lease{ID: "a", Token: "0000000000000001"}
	r.Enqueue(ctx, NewItem{ID: "a", Payload: []byte("p"), When: When{After: true}})
	r.Enqueue(ctx, NewItem{ID: "b", Payload: []byte("p"), When: When{V: 1}, Job: job})
	r.EnqueueBatch(ctx, []NewItem{{ID: "c", Payload: []byte("p")}, {ID: "d", Job: job}})
	claim := ClaimArgs{N: 2, Visibility: 1e6, ReclaimBatch: 10, TimerID: "t"}
	r.Claim(ctx, claim)
	withAck := claim
	withAck.AckID, withAck.AckToken = l.ID, l.Token
	r.Claim(ctx, withAck)
	withAcks := claim
	withAcks.Acks = []Lease{l, {ID: "b", Token: "x", Result: []byte("r")}}
	r.Claim(ctx, withAcks)
	r.Ack(ctx, l)
	r.AckMany(ctx, []Lease{l, {ID: "b", Token: "x"}})
	r.Nack(ctx, NackArgs{Lease: l, Delay: -1, Reason: "why"})
	r.Extend(ctx, l, 1000)
	r.DeadLetter(ctx, l, "why")
	r.ReleaseLease(ctx, l)
	r.Snooze(ctx, l, 1000)
	r.Cancel(ctx, "a")
	r.Reschedule(ctx, "b", When{After: true, V: 1000})
	r.Upsert(ctx, "e", []byte("p"), When{V: 1}, job)
	r.RunNow(ctx, RunNowArgs{ID: "e"})
	r.RunNow(ctx, RunNowArgs{ID: "rec:g@1", Reg: "g", ExtraID: "rec:g@2", ExtraDue: 2})
	r.DeadOne(ctx, "a", true)
	r.DeadOne(ctx, "a", false)
	r.BulkDead(ctx, BulkDeadArgs{Revive: true, Limit: 10})
	r.BulkDead(ctx, BulkDeadArgs{Limit: 10, Reason: "why"})
	for _, op := range []BulkOp{PurgeScheduled, MarkInFlight, DestroySched, DestroyLease, DestroyDead, PurgeCompleted, DestroyDone} {
		r.Bulk(ctx, op, 10, 0)
	}
	r.Stats(ctx)
	r.List(ctx, ListArgs{State: Scheduled, Limit: 10, Payloads: true})
	r.Get(ctx, "b")
	r.GetPrefix(ctx, "b", 10)
	r.DueHistogram(ctx, 1000, 3)
	r.DeadReasons(ctx, 0, 10)
	r.SetRateLimit(ctx, "lk", 10, 1e6)
	r.LimitStates(ctx, []string{"lk", "other"})
	r.SetConcurrencyLimit(ctx, "lk", 2)
	r.SetConcurrencyLimit(ctx, "lk", 0)
	r.ConcStates(ctx, []string{"lk", "other"})
	r.LimitWaiting(ctx, RateKind, []string{"lk", "other"})
	r.LimitWaiting(ctx, ConcKind, []string{"lk"})
	r.SetQueueRateLimit(ctx, 10, 1e6)
	r.QueueRateState(ctx)
	r.UniqueWindow(ctx, "u")
	r.Migrate(ctx)
	r.Pause(ctx)
	r.Resume(ctx)
	r.GiveUpTimer(ctx, "t")
	r.Unblock(ctx, r.Keys.Private("i")+"1")
	r.StopFeed(ctx, r.Keys.Private("i")+"2")
	Partitions(ctx, c, "hdrp", []string{"p0", "p1"})
	r.Time(ctx)
	r.Heartbeat(ctx, Beat{ID: "w", Name: "n", Life: 1000, Sweep: true})
	r.LiveWorkers(ctx, 10)
	r.WorkerBeats(ctx, []string{"w", "x"})
	r.Bye(ctx, "w")
	r.Register(ctx, RegisterArgs{Name: "g", Spec: "@every 1h", Payload: []byte("p"), Version: 1, First: 1, FirstID: "rec:g@1",
		Update: 2, UpdateID: "rec:g@2", FirstDue: 1, UpdateDue: 2, Job: job})
	r.RecList(ctx, "", 10)
	r.RecGet(ctx, "g")
	r.Seen(ctx, []string{"g", "h"})
	r.Advance(ctx, AdvanceArgs{Name: "g", Gen: 1, At: 1, HasSkip: true, Skip: 3, Occ: []Occurrence{{At: 2, Due: 2, ID: "rec:g@2"}}})
	r.Backfill(ctx, "g", 1, []Occurrence{{At: 0, ID: "rec:g@0"}})
	r.PauseRec(ctx, "g")
	r.ResumeRec(ctx, ResumeArgs{Name: "g", HasFirst: true, First: 5, FirstDue: 5, FirstID: "rec:g@5"})
	r.ResumeRec(ctx, ResumeArgs{Name: "g"})
	r.Unregister(ctx, "g")

	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, _ := luaFiles.ReadFile("lua/" + name + ".lua")
		hd, err := parseHeader(headerOf(string(raw)))
		if err != nil {
			t.Errorf("%s.lua: header: %v", name, err)
			continue
		}
		calls := rec.calls[name]
		if len(calls) == 0 {
			t.Errorf("%s.lua: no call of it here: add its Runner call to the test", name)
		}
		qn := q
		if name == "partitions" {
			qn = "hdrp"
		}
		for _, call := range calls {
			for _, e := range hd.check(qn, call.keys, call.argv) {
				t.Errorf("%s.lua: %s (KEYS %q, ARGV %v)", name, e, call.keys, call.argv)
			}
		}
	}
}

// The parser takes the header's lines, a tail last, and the names of the
// keys as patterns.
func TestParseHeader(t *testing.T) {
	hd, err := parseHeader("-- what it does\n-- KEYS[1] -> {dq:NAME}:sched\n-- KEYS[2...] -> {dq:NAME}:m:ID, each item\n" +
		"-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix\n-- ARGV[2] -> the id\n--   (go on)\n-- Output: {1}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(hd.keys) != 2 || !hd.keysTail || len(hd.argv) != 2 || hd.argvTail {
		t.Fatalf("%+v", hd)
	}
	if e := hd.check("q", []string{"{dq:q}:sched"}, []interface{}{"{dq:q}:m:", "x"}); len(e) != 0 {
		t.Error(e)
	}
	if e := hd.check("q", []string{"{dq:q}:lease", "a", "b"}, []interface{}{"{dq:q}:m:", "x", "y"}); len(e) != 2 {
		t.Errorf("a wrong key and an ARGV too many: %q", e)
	}
	for _, bad := range []string{
		"-- KEYS: sched\n-- Output: x\n",
		"-- KEYS[2] -> x\n-- ARGV: none\n-- Output: x\n",
		"-- KEYS[1...] -> x\n-- KEYS[2] -> y\n-- ARGV: none\n-- Output: x\n",
		"-- KEYS[1] -> x\n-- ARGV: none\n",
	} {
		if _, err := parseHeader(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
