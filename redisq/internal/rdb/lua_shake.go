package rdb

import (
	"regexp"
	"strings"
)

// shake returns the assembled text of a script without the definitions it
// never uses. Every script includes common.lua, which defines some twenty
// helpers and constants, and Redis runs those definitions (a closure, a
// string, a table each) on every call: they cost the claim script about
// 10 µs a call on the VM of docs/performance.md, a quarter of it. A
// definition the rest of the text never names is left out. Full-line
// comments go too (a pipelined EVAL sends the text). Each line removed is
// left empty, so the line numbers Redis names in errors stay those of the
// assembled text.
//
// What is a definition, at the top level (column 0):
//
//   - "local function NAME(" up to the next line "end" (or that line alone
//     when the next line is not indented: a function of one line);
//   - "local NAME[, NAME...] [= EXPR]" on one line with balanced brackets,
//     where EXPR calls nothing but string., math., table., tonumber and
//     tostring: it has no effect but its value, so leaving it out changes
//     nothing when nothing reads the names.
//
// Everything else is kept, and a definition is kept when a kept line names
// one of its names (as a word, anywhere: a field or a comment's mention
// keeps it too, which is only conservative).
func shake(src string) string {
	lines := strings.Split(src, "\n")
	type def struct {
		names      []string
		start, end int // lines[start:end]
	}
	var defs []def
	inDef := make([]int, len(lines)) // index into defs + 1, or 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := funcDef.FindStringSubmatch(l); m != nil {
			end := i + 1
			for j := i + 1; j < len(lines); j++ {
				if lines[j] == "end" {
					end = j + 1
					break
				}
				if lines[j] != "" && !strings.HasPrefix(lines[j], " ") && !strings.HasPrefix(lines[j], "\t") {
					break // a function of one line
				}
			}
			defs = append(defs, def{[]string{m[1]}, i, end})
		} else if m := localDef.FindStringSubmatch(l); m != nil && pureExpr(m[2]) {
			var names []string
			for _, n := range strings.Split(m[1], ",") {
				names = append(names, strings.TrimSpace(n))
			}
			defs = append(defs, def{names, i, i + 1})
		} else {
			continue
		}
		d := len(defs)
		for j := defs[d-1].start; j < defs[d-1].end; j++ {
			inDef[j] = d
		}
		i = defs[d-1].end - 1
	}
	// The names used by what is kept, to a fixed point.
	used := map[string]bool{}
	mark := func(from, to int) {
		for _, l := range lines[from:to] {
			for _, w := range word.FindAllString(l, -1) {
				used[w] = true
			}
		}
	}
	for i, l := range lines {
		if inDef[i] == 0 && !isComment(l) {
			mark(i, i+1)
		}
	}
	keep := make([]bool, len(defs))
	for changed := true; changed; {
		changed = false
		for k, d := range defs {
			if keep[k] {
				continue
			}
			for _, n := range d.names {
				if used[n] {
					keep[k], changed = true, true
					mark(d.start, d.end)
					break
				}
			}
		}
	}
	for i, l := range lines {
		if isComment(l) || (inDef[i] != 0 && !keep[inDef[i]-1]) {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

var (
	funcDef  = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	localDef = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(?:=\s*(.*))?$`)
	word     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	call     = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.:]*)\s*\(`)
)

// isComment reports a line that is a comment and nothing else.
func isComment(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "--") }

// pureExpr reports whether an initializer (one line) only computes a
// value: its brackets balance and it calls only pure library functions.
func pureExpr(e string) bool {
	if strings.Contains(e, "redis.") || strings.Contains(e, "--") {
		return false
	}
	depth := 0
	for _, r := range e {
		switch r {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
		}
		if depth < 0 {
			return false
		}
	}
	if depth != 0 {
		return false
	}
	for _, m := range call.FindAllStringSubmatch(e, -1) {
		f := m[1]
		if !strings.HasPrefix(f, "string.") && !strings.HasPrefix(f, "math.") && !strings.HasPrefix(f, "table.") && f != "tonumber" && f != "tostring" {
			return false
		}
	}
	return true
}
