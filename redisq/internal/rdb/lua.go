package rdb

import (
	"embed"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The scripts live in lua/, one file per script, and the helpers they
// share in lua/include/, one function a file, named as its file (a
// constant or a tiny helper only that function uses may share it). A file
// is assembled into the text Redis runs:
//
//   - its header, the comment lines it starts with, is documentation and
//     is left out (it states the KEYS and ARGV a call passes, one line a
//     position, and the reply), and so are the other comments and the
//     empty lines;
//   - a line "--@include NAME" is replaced by lua/include/NAME.lua,
//     assembled the same way (an include includes what it calls), the
//     first time NAME is included: a helper two others include is defined
//     once, before the first;
//   - of keys.lua, the keys of a queue one a line, only the keys the
//     script names are kept (see assembler.text);
//   - a helper of inlined (claim_due) is not defined: its body takes the
//     place of the line "return NAME(args)" that calls it;
//   - "{{NAME}}" is replaced by the Go constant of that name (placeholders),
//     so that a bound or a list the Go code also uses is written once;
//   - a script that may start the queue's sequence (it has next_seq) is
//     wrapped so that its reply says so (see lifeWrap).
//
// Everything else is copied byte for byte. Redis runs every top-level
// definition of a script on every call, so a script includes only what it
// calls: TestScriptsDefineOnlyWhatTheyUse fails on a definition nothing
// names.

//go:embed lua
var luaFiles embed.FS

var placeholder = regexp.MustCompile(`\{\{[A-Z_0-9]+\}\}`)

// placeholders are the Go constants the scripts use, by name.
var placeholders = func() map[string]string {
	b := make([]string, len(LatenessBoundsMS))
	for i, v := range LatenessBoundsMS {
		b[i] = strconv.FormatInt(v, 10)
	}
	// JOB_FIELDS: the job's fields, quoted, in the order Go reads them
	// (JobFields); REC_FIELDS: a registration's job, those and op.
	job := make([]string, len(JobFields))
	for i, f := range JobFields {
		job[i] = "'" + f + "'"
	}
	return map[string]string{
		"MAXDUE":          strconv.FormatInt(MaxDueMS, 10),
		"SCRIPT_BATCH":    strconv.Itoa(ScriptBatch),
		"TOMB_MS":         strconv.Itoa(TombstoneMS),
		"LIST_BYTES":      strconv.Itoa(ListBytes),
		"MAX_FILTER_SCAN": strconv.Itoa(MaxFilterScan),
		"MAX_PREFIX_SCAN": strconv.Itoa(ListBytes),
		"LATE_BOUNDS":     strings.Join(b, ", "),
		"LATE_CAP":        strconv.FormatInt(LatenessCapMS, 10),
		"INT64_MAX":       strconv.FormatInt(math.MaxInt64, 10),
		"JOB_FIELDS":      strings.Join(job, ", "),
		"REC_FIELDS":      strings.Join(append(job, "'op'"), ", "),
	}
}()

// assemble returns the text of lua/NAME.lua as Redis runs it, before
// lifeWrap. It panics on a missing file or placeholder: the files are part
// of the binary.
func assemble(name string) string {
	a := assembler{seen: map[string]bool{}, fns: map[string]inlineFn{}}
	a.file("lua/" + name + ".lua")
	return a.text()
}

// assembler assembles one script: the includes seen so far, the text,
// where in it keys.lua is (keysAt, keysEnd), and the functions to inline
// met so far (see inlined).
type assembler struct {
	seen            map[string]bool
	out             strings.Builder
	keysAt, keysEnd int
	fns             map[string]inlineFn
}

// inlined are the helpers whose body takes the place of their call: a
// script calls each only as its last line, "return NAME(args)", which
// becomes "do local params = args <body> end" (the body's returns are the
// script's). claim_due calls some thirty helpers, and Redis runs every
// definition on every call: as a closure it would capture each of them,
// about 3 µs a call (BenchmarkScriptPrefix), which the claim's text,
// inlined, does not cost.
var inlined = map[string]bool{"claim_due": true}

// inlineFn is the text of a helper to inline: its parameters and body.
type inlineFn struct{ params, body string }

var tailCall = regexp.MustCompile(`^return ([a-z_]+)\((.*)\)$`)

// file appends the text of the file at path, each of its includes
// replaced by the include's own text unless seen already: an include
// appears once in a script, before the first file that includes it (its
// own includes before it), so that what a helper uses is defined before
// it. Comments and empty lines are left out (a pipelined EVAL sends the
// text).
func (a *assembler) file(path string) {
	b, err := luaFiles.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("rdb: %v", err))
	}
	src := placeholder.ReplaceAllStringFunc(string(b), func(m string) string {
		v, ok := placeholders[m[2:len(m)-2]]
		if !ok {
			panic(fmt.Sprintf("rdb: %s: unknown placeholder %s", path, m))
		}
		return v
	})
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		inc, ok := strings.CutPrefix(line, "--@include ")
		if name, params, def := strings.Cut(strings.TrimPrefix(line, "local function "), "("); def && strings.HasPrefix(line, "local function ") && inlined[name] {
			// The function, up to its "end", is kept for its call.
			var body strings.Builder
			for i++; i < len(lines) && lines[i] != "end"; i++ {
				if t := strings.TrimSpace(lines[i]); t != "" && !strings.HasPrefix(t, "--") {
					body.WriteString(lines[i] + "\n")
				}
			}
			a.fns[name] = inlineFn{strings.TrimSuffix(params, ")"), body.String()}
			continue
		}
		if m := tailCall.FindStringSubmatch(line); m != nil && inlined[m[1]] {
			fn, ok := a.fns[m[1]]
			if !ok {
				panic(fmt.Sprintf("rdb: %s: %s called before it is included", path, m[1]))
			}
			a.out.WriteString("do\nlocal " + fn.params + " = " + m[2] + "\n" + fn.body + "end\n")
			continue
		}
		switch {
		case ok && !a.seen[inc]:
			a.seen[inc] = true
			at := a.out.Len()
			a.file("lua/include/" + inc + ".lua")
			if inc == "keys" {
				a.keysAt, a.keysEnd = at, a.out.Len()
			}
		case ok, strings.TrimSpace(line) == "", strings.HasPrefix(strings.TrimSpace(line), "--"):
		default:
			a.out.WriteString(line)
			a.out.WriteByte('\n')
		}
	}
}

// text is the script assembled, with only the lines of keys.lua that
// define a key the rest of it names, and K_PREFIX, which they use, when
// one is kept or the rest names it: keys.lua names every key of a queue,
// one per line, and Redis would compute each on every call.
func (a *assembler) text() string {
	src := a.out.String()
	rest := src[:a.keysAt] + src[a.keysEnd:]
	used := map[string]bool{}
	for _, w := range luaWord.FindAllString(rest, -1) {
		used[w] = true
	}
	lines := strings.SplitAfter(src[a.keysAt:a.keysEnd], "\n")
	lines = lines[:len(lines)-1] // after the last "\n"
	var keys []string
	prefix := used["K_PREFIX"]
	for i, l := range lines {
		m := keyLine.FindStringSubmatch(l)
		if m == nil || (i == 0) != (m[1] == "K_PREFIX") {
			panic("rdb: keys.lua: K_PREFIX and then one key a line, not " + l)
		}
		if i > 0 && used[m[1]] {
			keys, prefix = append(keys, l), true
		}
	}
	if prefix {
		keys = append([]string{lines[0]}, keys...)
	}
	return src[:a.keysAt] + strings.Join(keys, "") + src[a.keysEnd:]
}

var (
	luaWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	keyLine = regexp.MustCompile(`^local (K_[A-Z]+) = `)
)

// lifeWrap wraps the text of a script that may start the queue's sequence
// (next_seq, which sets NEW_LIFE) so that it replies {life, its reply}:
// life is 1 for the call that started the sequence, the first write of a
// new queue or of one destroyed, which then registers the queue again.
// The wrapper adds no line before the script's own, so the line numbers
// Redis names in errors are the script's.
func lifeWrap(src string) (string, bool) {
	if !strings.Contains(src, "local function next_seq(") {
		return src, false
	}
	return "local NEW_LIFE = 0 local function body() " + src + "\nend local r = body() return {NEW_LIFE, r}", true
}
