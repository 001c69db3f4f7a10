package rdb

import (
	"embed"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The scripts live in lua/, one file per script, and the code they share
// in lua/include/. A file is assembled into the text Redis runs:
//
//   - its header, the comment lines it starts with, is documentation and
//     is left out (it states the KEYS a call declares, the ARGV and the
//     reply);
//   - a line "--@include NAME" is replaced by lua/include/NAME.lua,
//     assembled the same way (an include may include others), the first
//     time NAME is included: a helper two others include is defined once;
//   - "{{NAME}}" is replaced by the Go constant of that name (placeholders),
//     so that a bound the Go code also uses is written once;
//   - a script that may start the queue's sequence (it has next_seq) is
//     wrapped so that its reply says so (see lifeWrap).
//
// Everything else is copied byte for byte.

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
	seen := map[string]bool{}
	var out strings.Builder
	assembleFile("lua/"+name+".lua", seen, &out)
	return out.String()
}

// assembleFile appends the text of the file at path to out, each of its
// includes replaced by the include's own text unless seen already: an
// include appears once in a script, before the first file that includes
// it (its own includes before it), so that what a helper uses is defined
// before it.
func assembleFile(path string, seen map[string]bool, out *strings.Builder) {
	b, err := luaFiles.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("rdb: %v", err))
	}
	src := string(b)
	// The header: the comment lines the file starts with.
	for strings.HasPrefix(src, "--") && !strings.HasPrefix(src, "--@include ") {
		i := strings.IndexByte(src, '\n')
		if i < 0 {
			src = ""
			break
		}
		src = src[i+1:]
	}
	src = placeholder.ReplaceAllStringFunc(src, func(m string) string {
		v, ok := placeholders[m[2:len(m)-2]]
		if !ok {
			panic(fmt.Sprintf("rdb: %s: unknown placeholder %s", path, m))
		}
		return v
	})
	for len(src) > 0 {
		line, rest, _ := strings.Cut(src, "\n")
		if inc, ok := strings.CutPrefix(line, "--@include "); ok {
			if !seen[inc] {
				seen[inc] = true
				assembleFile("lua/include/"+inc+".lua", seen, out)
			}
		} else {
			out.WriteString(line)
			if len(rest) > 0 || strings.HasSuffix(src, "\n") {
				out.WriteByte('\n')
			}
		}
		src = rest
	}
}

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
