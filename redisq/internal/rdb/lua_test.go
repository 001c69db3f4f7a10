package rdb

import (
	"context"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// Every file of lua/ is a script of this package, assembles with nothing
// left to fill (includes, placeholders), states in its header the KEYS
// and ARGV of a call one line a position and its Output (parseHeader;
// TestHeadersMatchTheCalls compares them with the calls), and is Lua that
// Redis loads.
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
		if _, err := parseHeader(headerOf(string(raw))); err != nil {
			t.Errorf("%s: the header does not state the KEYS and ARGV of a call, one line a position: %v", e.Name(), err)
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
	// The claim is a function in its file, and its body takes the place of
	// the scripts' "return claim_due(...)".
	for _, name := range []string{"claim", "ack_claim", "ack_many_claim"} {
		src := assemble(name)
		if strings.Contains(src, "claim_due") || !strings.Contains(src, "\ndo\nlocal now, frac, acked = now, frac") ||
			!strings.HasSuffix(src, "  return claim_reply(out, acked)\nend\n") {
			t.Errorf("%s: claim_due is not inlined at its call:\n%s", name, src[max(0, len(src)-300):])
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

// A script defines only what it uses: every top-level local function or
// constant of its text is named elsewhere in it (Redis runs every
// definition on every call, so an include the script does not call costs
// it), and it calls no helper and names no key it does not define (an
// include missing would fail only when the call reaches it).
func TestScriptsDefineOnlyWhatTheyUse(t *testing.T) {
	helpers := map[string]bool{} // the include files' names: each defines its namesake
	ents, err := fs.ReadDir(luaFiles, "lua/include")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		helpers[strings.TrimSuffix(e.Name(), ".lua")] = true
	}
	def := regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)*)`)
	for name := range byName {
		src := assemble(name)
		words := map[string]int{}
		for _, w := range luaWord.FindAllString(src, -1) {
			words[w]++
		}
		defined := map[string]bool{}
		for _, l := range strings.Split(src, "\n") {
			m := def.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			for _, d := range strings.Split(m[1], ", ") {
				defined[d] = true
				if words[d] < 2 {
					t.Errorf("%s: %s is defined and never used:\n%s", name, d, l)
				}
			}
		}
		for w := range words {
			called := helpers[w] && regexp.MustCompile(`(^|[^.:\w])`+w+`\(`).MatchString(src)
			if (called || strings.HasPrefix(w, "K_")) && !defined[w] {
				t.Errorf("%s: %s is used and not defined (include it)", name, w)
			}
		}
	}
	// Every include defines its namesake.
	for h := range helpers {
		b, _ := luaFiles.ReadFile("lua/include/" + h + ".lua")
		if h != "keys" && !strings.Contains(string(b), "\nlocal function "+h+"(") {
			t.Errorf("include/%s.lua does not define the function %s", h, h)
		}
	}
	// A script defines only the keys it uses.
	if src := assemble("enqueue"); strings.Contains(src, "local K_LEASE") || !strings.Contains(src, "local K_SCHED") {
		t.Errorf("enqueue defines the lease key or lost the sched key:\n%s", src)
	}
}
