package rdb

import (
	"encoding/binary"
	"sort"
	"strconv"
)

// Job is what an item carries beyond its id and payload, set at enqueue
// and kept in its hash: the fields the scripts act on each have their own
// (k kind, ma max attempts, bb and bx backoff base and max in µs, ret
// retention in ms), and what only Go reads is one opaque field (j: the
// headers, the handler timeout and the not-after time). A zero field is
// not stored: the queue's default applies.
type Job struct {
	Kind        string
	Headers     map[string]string
	MaxAttempts int64
	BackoffBase int64 // µs
	BackoffMax  int64 // µs
	Timeout     int64 // µs
	NotAfter    int64 // ms; 0: none
	Retention   int64 // ms
	// UniqueKey and UniqueFor (ms): an enqueue stores the item only if no
	// enqueue of the same key did within the last UniqueFor (the key
	// {dq:NAME}:u:KEY, see lua/enqueue.lua). Kept in the blob, for Go.
	UniqueKey string
	UniqueFor int64
	// Debounce: an enqueue of UniqueKey replaces the waiting item holding
	// its window instead of being refused.
	Debounce bool
	// LimitKey (field lk) is the key whose rate limit the item's starts
	// count against (see lua/include/claim_due.lua); "" is the queue's own.
	LimitKey string
	// Occurrence (field op, a registration's only) is the occurrence
	// policy every occurrence of a recurring registration gets: "O,W", O
	// "1" when an occurrence is skipped while an earlier one runs, W the
	// catch-up window in ms or "" (see lua/include/occ_read.lua).
	Occurrence string
}

// JobFields are the hash fields of a Job, in the order the scripts read
// them and reply them (the placeholder JOB_FIELDS of the scripts, see
// lua.go).
var JobFields = [...]string{"k", "j", "ma", "bb", "bx", "ret", "lk"}

// IsZero reports whether j sets nothing.
func (j *Job) IsZero() bool {
	return j.Kind == "" && len(j.Headers) == 0 && j.MaxAttempts == 0 && j.BackoffBase == 0 &&
		j.BackoffMax == 0 && j.Timeout == 0 && j.NotAfter == 0 && j.Retention == 0 && j.UniqueKey == "" && j.LimitKey == "" &&
		j.Occurrence == ""
}

// unique appends the uniqueness window to an enqueue's ARGV, after the
// job: its key ("" for none), its length in ms and its mode ('u' unique,
// 'd' debounce).
func (j *Job) unique(a []interface{}) []interface{} {
	mode := "u"
	if j.Debounce {
		mode = "d"
	}
	return append(a, j.UniqueKey, j.UniqueFor, mode)
}

// args appends j to a script's ARGV as the scripts take it
// (lua/include/job_fields.lua): the number of fields set, then each
// field's name and value.
func (j *Job) args(a []interface{}) []interface{} {
	if j.IsZero() {
		return append(a, 0)
	}
	at := len(a)
	a = append(a, 0)
	n := 0
	add := func(f string, v interface{}) { a = append(a, f, v); n++ }
	if j.Kind != "" {
		add("k", j.Kind)
	}
	if b := j.blob(); b != "" {
		add("j", b)
	}
	num := func(f string, v int64) {
		if v != 0 {
			add(f, strconv.FormatInt(v, 10))
		}
	}
	num("ma", j.MaxAttempts)
	num("bb", j.BackoffBase)
	num("bx", j.BackoffMax)
	num("ret", j.Retention)
	if j.LimitKey != "" {
		add("lk", j.LimitKey)
	}
	if j.Occurrence != "" {
		add("op", j.Occurrence)
	}
	a[at] = n
	return a
}

// ArgLen is the size of j in ARGV, for ChunkEnds.
func (j *Job) ArgLen() int {
	n := len(j.Kind) + 2*len(j.UniqueKey) + len(j.LimitKey) + len(j.Occurrence) + 64
	for k, v := range j.Headers {
		n += len(k) + len(v) + 4
	}
	return n
}

// The blob j: a sequence of (tag byte, uvarint length, bytes). Tags: 'h' a
// header's name followed by 'v' its value, 't' the timeout (decimal µs),
// 'n' the not-after time (decimal ms), 'u' the unique key, 'w' its window
// (decimal ms) and 'd' "1" when it debounces. A reader skips tags it does not
// know, so that a later version may add some.
func (j *Job) blob() string {
	if len(j.Headers) == 0 && j.Timeout == 0 && j.NotAfter == 0 && j.UniqueKey == "" {
		return ""
	}
	var b []byte
	put := func(tag byte, s string) {
		b = append(b, tag)
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if j.Timeout != 0 {
		put('t', strconv.FormatInt(j.Timeout, 10))
	}
	if j.NotAfter != 0 {
		put('n', strconv.FormatInt(j.NotAfter, 10))
	}
	if j.UniqueKey != "" {
		put('u', j.UniqueKey)
		put('w', strconv.FormatInt(j.UniqueFor, 10))
		if j.Debounce {
			put('d', "1")
		}
	}
	// Sorted, so that equal jobs store equal bytes.
	names := make([]string, 0, len(j.Headers))
	for k := range j.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		put('h', k)
		put('v', j.Headers[k])
	}
	return string(b)
}

// parseBlob fills j's blob fields from b; what it cannot read is skipped.
func (j *Job) parseBlob(b string) {
	var name string
	for len(b) > 0 {
		tag := b[0]
		n, w := binary.Uvarint([]byte(b[1:min(len(b), 11)]))
		if w <= 0 || n > uint64(len(b)-1-w) {
			return
		}
		v := b[1+w : 1+w+int(n)]
		b = b[1+w+int(n):]
		switch tag {
		case 't':
			j.Timeout, _ = strconv.ParseInt(v, 10, 64)
		case 'n':
			j.NotAfter, _ = strconv.ParseInt(v, 10, 64)
		case 'u':
			j.UniqueKey = v
		case 'w':
			j.UniqueFor, _ = strconv.ParseInt(v, 10, 64)
		case 'd':
			j.Debounce = v == "1"
		case 'h':
			name = v
		case 'v':
			if j.Headers == nil {
				j.Headers = make(map[string]string)
			}
			j.Headers[name] = v
		}
	}
}

// jobOf reads a Job from the values of JobFields in a reply (nil or ""
// for a field not stored).
func jobOf(r []interface{}) Job {
	str := func(i int) string {
		if i >= len(r) {
			return ""
		}
		s, _ := r[i].(string)
		return s
	}
	num := func(i int) int64 {
		v, _ := strconv.ParseInt(str(i), 10, 64)
		return v
	}
	j := Job{Kind: str(0), MaxAttempts: num(2), BackoffBase: num(3), BackoffMax: num(4), Retention: num(5), LimitKey: str(6)}
	j.parseBlob(str(1))
	return j
}
