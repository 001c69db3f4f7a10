package rdb

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// Every file of lua/ is a script of this package, assembles with nothing
// left to fill (includes, placeholders), states the KEYS a call declares
// in its header, and is Lua that Redis loads.
func TestEveryScriptAssemblesAndLoads(t *testing.T) {
	ents, err := fs.ReadDir(luaFiles, "lua")
	if err != nil {
		t.Fatal(err)
	}
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	n := 0
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		n++
		name := strings.TrimSuffix(e.Name(), ".lua")
		sc := Named(name) // panics for a file no newScript declares
		src := sc.Source()
		for _, left := range []string{"--@include", "{{"} {
			if strings.Contains(src, left) {
				t.Errorf("%s: %q left in the assembled text", e.Name(), left)
			}
		}
		raw, _ := luaFiles.ReadFile("lua/" + e.Name())
		if h := headerOf(string(raw)); !strings.Contains(h, "-- KEYS: ") && !strings.Contains(h, "-- KEYS[1] -> ") {
			t.Errorf("%s: the header does not state the KEYS a call declares", e.Name())
		}
		if err := sc.Load(context.Background(), c).Err(); err != nil {
			t.Errorf("%s: Redis refuses it: %v", e.Name(), err)
		}
	}
	if n != len(byName) {
		t.Errorf("%d files, %d scripts declared", n, len(byName))
	}
}

// headerOf is the comment lines a file starts with.
func headerOf(src string) string {
	var b strings.Builder
	for _, l := range strings.Split(src, "\n") {
		if !strings.HasPrefix(l, "--") || strings.HasPrefix(l, "--@include ") {
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// The header is documentation, left out; an include is replaced by its
// file, assembled the same way, once however many files include it, and
// before the first; a placeholder by its constant.
func TestAssemble(t *testing.T) {
	src := assemble("enqueue")
	if strings.HasPrefix(src, "--") {
		t.Errorf("the header was kept:\n%.200s", src)
	}
	if !strings.Contains(src, "if due > 9007199254740991 then due = 9007199254740991 end") {
		t.Error("after's MAXDUE placeholder is not filled in")
	}
	if !strings.Contains(src, "local K_PREFIX = string.sub(ARGV[1], 1, -3)") {
		t.Error("the keys include, which the helpers include, is missing")
	}
	// A helper that the script and other helpers include (new_member:
	// enqueue, to_dead, sched_new) is defined once, after what it calls.
	for _, name := range []string{"enqueue", "enqueue_many", "nack", "ack_many_claim", "register"} {
		src := assemble(name)
		for _, f := range []string{"next_seq", "new_member", "conc_promote", "waiting_end", "now_ms"} {
			if n := strings.Count(src, "local function "+f+"("); n > 1 {
				t.Errorf("%s: %s defined %d times", name, f, n)
			}
		}
		if a, b := strings.Index(src, "local function next_seq("), strings.Index(src, "local function new_member("); b >= 0 && (a < 0 || a > b) {
			t.Errorf("%s: new_member defined before next_seq, which it calls", name)
		}
	}
	if w, life := lifeWrap(src); !life || !strings.HasSuffix(w, "return {NEW_LIFE, r}") {
		t.Error("a script that takes sequence numbers is not wrapped to report a new life")
	}
	if _, life := lifeWrap(assemble("beat")); life {
		t.Error("a script without the sequence is wrapped")
	}
}

// A heartbeat's fields come back exact whatever their bytes; malformed
// data from Redis ends the list instead of failing.
func TestFieldsEncoding(t *testing.T) {
	in := []string{"billing:1|2", "", "\xff\n\u202e", "12:34"}
	got := decodeFields(encodeFields(in...))
	if len(got) != len(in) {
		t.Fatalf("%q, want %q", got, in)
	}
	for i := range in {
		if got[i] != in[i] {
			t.Errorf("field %d: %q, want %q", i, got[i], in[i])
		}
	}
	for _, bad := range []string{"x", "3:ab", "-1:", "2"} {
		_ = decodeFields(bad) // no panic
	}
	if got := decodeFields("1:a9"); len(got) != 1 || got[0] != "a" {
		t.Errorf("%q: want the fields before the malformed rest", got)
	}
}

// shake leaves out the top-level definitions nothing kept names (through
// the definitions that are kept), and full-line comments, each as an empty
// line; it keeps everything that may act: an initializer that calls
// anything but a pure library function, and every statement that is not
// a definition.
func TestShake(t *testing.T) {
	src := strings.Join([]string{
		"-- a comment",
		"local K_A = 'a' .. string.sub(ARGV[1], 1, -3)",
		"local K_B = 'b'",
		"local unused_table = {1, 2, {3}}",
		"local function helper(x)",
		"  return x .. K_A",
		"end",
		"local function unused(x)",
		"  return helper(x) .. K_B",
		"end",
		"local function one() return 1 end",
		"local acts = redis.call('INCR', 'x')",
		"local calls_local = helper('y')",
		"local open = {",
		"  1 }",
		"if one() == 1 then",
		"  return helper('z')",
		"end",
	}, "\n")
	got := strings.Split(shake(src), "\n")
	want := []string{
		"",
		"local K_A = 'a' .. string.sub(ARGV[1], 1, -3)",
		"",
		"",
		"local function helper(x)",
		"  return x .. K_A",
		"end",
		"",
		"",
		"",
		"local function one() return 1 end",
		"local acts = redis.call('INCR', 'x')",
		"local calls_local = helper('y')",
		"local open = {",
		"  1 }",
		"if one() == 1 then",
		"  return helper('z')",
		"end",
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d (line numbers must stay):\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %q, want %q", i+1, got[i], want[i])
		}
	}
	// A script defines only what it uses: enqueue has no use for the dead
	// set's helpers.
	if src := Named("enqueue").Source(); strings.Contains(src, "local function to_dead(") || !strings.Contains(src, "local function new_member(") {
		t.Errorf("enqueue keeps to_dead or lost new_member:\n%s", src)
	}
}
