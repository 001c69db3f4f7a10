package dqweb

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

// Everything from Redis reaches the page through html/template, which
// escapes it for its context. The formatting here makes it readable and
// honest: names, ids and reasons go through shown or quoted, payloads are
// indented JSON, text or a hex dump, and every character a browser would
// not show as itself (controls, bidi overrides and marks, invalid UTF-8)
// is written as an escape, so that "rtl\u202egnp.exe" cannot pass for
// "rtlexe.png".

// Display bounds, in bytes of the name, id or reason shown: beyond them
// the text is cut and ends in "…" with the full size. Links and forms
// always carry the exact value.
const (
	maxShownName   = 200
	maxShownReason = 2000
)

// shown is s as a page shows a queue name or id: as it is when it is
// plain (printable, not empty, no leading, trailing or double space that
// HTML would collapse, no leading '"'), else Go-quoted with every
// non-printable rune and invalid byte escaped (\u202e, \x1b, \xff). A
// quoted form starts with '"' and a plain one never does, so the two
// cannot be confused. Long values are cut after maxShownName bytes.
func shown(s string) string { return show(s, maxShownName, false) }

// shownReason is shown for a dead reason, cut after maxShownReason bytes.
func shownReason(s string) string { return show(s, maxShownReason, false) }

// quoted is s Go-quoted for a sentence (`queue "orders"`), with escapes
// and the cut of shown.
func quoted(s string) string { return show(s, maxShownName, true) }

// quotedReason is a dead reason Go-quoted for a sentence, cut after
// maxShownReason bytes.
func quotedReason(s string) string { return show(s, maxShownReason, true) }

// num writes n with thousands separators: 3,272.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func show(s string, limit int, quote bool) string {
	part := s
	if len(part) > limit {
		n := limit
		for n > 0 && !utf8.RuneStart(part[n]) {
			n--
		}
		part = part[:n]
	}
	out := part
	if quote || !plain(s) {
		out = strconv.Quote(part)
	}
	if len(part) < len(s) {
		out += "… (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return out
}

// plain reports whether s shows as itself: see shown.
func plain(s string) bool {
	if s == "" || s[0] == '"' || s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") {
		return false
	}
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false // U+FFFD itself is quoted too: it may stand for an invalid byte
		}
	}
	return true
}

// maxMessage bounds an error or result message, in bytes.
const maxMessage = 4000

// message is s for an error or result sentence: cut after maxMessage
// bytes, with non-printable runes and invalid bytes escaped (\x1b,
// \u202e, \xff). Names in it are already quoted.
func message(s string) string {
	if len(s) > maxMessage {
		n := maxMessage
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// payloadView is a payload formatted for a page.
type payloadView struct {
	Kind      string // "JSON", "text", "binary" or "empty"
	Text      string // what is shown (all of it, or the first part)
	Size      int    // bytes in the payload
	Truncated bool   // Text shows only part of the payload
}

// formatPayload formats p, the first len(p) of size payload bytes,
// showing at most limit bytes of formatted text. A cut payload (len(p) <
// size) that starts like JSON is indented as JSON as far as it goes.
// Memory and time are O(len(p) + limit) whatever the content.
func formatPayload(p []byte, size, limit int) payloadView {
	v := payloadView{Size: size}
	cut := len(p) < size
	text := p
	if cut {
		// Drop a rune cut in the middle, so that text is judged as text.
		for i := 1; i <= utf8.UTFMax-1 && i <= len(text); i++ {
			if utf8.RuneStart(text[len(text)-i]) {
				if !utf8.FullRune(text[len(text)-i:]) {
					text = text[:len(text)-i]
				}
				break
			}
		}
	}
	trimmed := bytes.TrimLeft(text, " \t\r\n")
	switch {
	case size == 0:
		v.Kind = "empty"
		return v
	case utf8.Valid(text) && (!cut && json.Valid(text) || cut && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')):
		v.Kind = "JSON"
		var b strings.Builder
		v.Truncated = indentJSON(&b, text, limit) || cut
		v.Text = visible(b.String())
	case utf8.Valid(text) && mostlyText(text):
		v.Kind = "text"
		s := string(text)
		if len(s) > limit {
			n := limit
			for n > 0 && !utf8.RuneStart(s[n]) {
				n--
			}
			s = s[:n]
		}
		v.Text, v.Truncated = visible(s), len(s) < size
	default:
		v.Kind = "binary"
		n := min(len(p), max(16, limit/5)) // a hex.Dump line shows 16 bytes in 79 characters
		v.Text, v.Truncated = hex.Dump(p[:n]), n < size
	}
	return v
}

// indentJSON writes JSON text p to b indented by two spaces, as
// json.Indent does, stopping once b holds limit bytes (then it reports
// true). It only lexes (strings, escapes, brackets), so it also indents a
// prefix of JSON; deep nesting costs no more than limit bytes of output.
func indentJSON(b *strings.Builder, p []byte, limit int) (truncated bool) {
	depth, inStr, esc := 0, false, false
	newline := func() {
		b.WriteByte('\n')
		for i := 0; i < depth && b.Len() < limit; i++ {
			b.WriteString("  ")
		}
	}
	p = bytes.TrimSpace(p)
	for i := 0; i < len(p); i++ {
		if b.Len() >= limit {
			return true
		}
		c := p[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
		case '"':
			inStr = true
			b.WriteByte(c)
		case '{', '[':
			b.WriteByte(c)
			j := i + 1
			for j < len(p) && (p[j] == ' ' || p[j] == '\t' || p[j] == '\r' || p[j] == '\n') {
				j++
			}
			if j < len(p) && (p[j] == '}' || p[j] == ']') {
				b.WriteByte(p[j]) // empty: {} or []
				i = j
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth = max(0, depth-1)
			newline()
			b.WriteByte(c)
		case ',':
			b.WriteByte(c)
			newline()
		case ':':
			b.WriteString(": ")
		default:
			b.WriteByte(c)
		}
	}
	return false
}

// mostlyText: at least 80% of the runes are printable (or newline, tab).
func mostlyText(p []byte) bool {
	bad := 0
	for _, r := range string(p) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' {
			bad++
		}
	}
	return bad*5 <= utf8.RuneCount(p)
}

// visible writes the runes that are not printable (newline and tab
// aside) as Go escapes: \x1b, \u202e.
func visible(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsPrint(r) || r == '\n' || r == '\t' {
			continue
		}
		b.Grow(len(s) + 8)
		b.WriteString(s[:i])
		for _, r := range s[i:] {
			if unicode.IsPrint(r) || r == '\n' || r == '\t' {
				b.WriteRune(r)
			} else {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
			}
		}
		return b.String()
	}
	return s
}

// when is a time as pages show it: relative to the Redis clock, and the
// absolute time (UTC) beside it (the "when" template), not only as a
// tooltip: a phone or a keyboard has no hover.
type when struct {
	Set      bool
	Rel, Abs string
	ISO      string
}

// absFormat is how pages write an absolute time.
const absFormat = "2006-01-02 15:04:05.000 UTC"

func at(t, now time.Time) when {
	if t.IsZero() || t.UnixMilli() == 0 {
		return when{}
	}
	w := when{Set: true, Abs: t.UTC().Format(absFormat), ISO: t.UTC().Format(time.RFC3339Nano)}
	switch d := t.Sub(now); {
	case d == 0:
		w.Rel = "now"
	case d > 0:
		w.Rel = "in " + approx(d)
	default:
		w.Rel = approx(-d) + " ago"
	}
	return w
}

// approx rounds d to two or three significant digits.
func approx(d time.Duration) string {
	unit := time.Millisecond
	for unit*100 < d {
		unit *= 10
	}
	return d.Round(unit).String()
}

// quantile formats an upper bound of a lateness quantile.
func quantile(l redisq.Lateness, q float64) string {
	if l.Count() == 0 {
		return "–"
	}
	d := l.Quantile(q)
	if d < 0 {
		return "> " + short(l.Bounds[len(l.Bounds)-1])
	}
	if d == 0 {
		return "< 1ms" // on time to the millisecond of Redis TIME
	}
	return "≤ " + short(d)
}

// actionForm is one action button: a form that POSTs to Prefix+"action".
// The queue and id travel hex-encoded (see actions.go).
type actionForm struct {
	Prefix, CSRF    string
	Op, QueueX, IDX string
	PIDX            string // an item of a partitioned queue with its partition, "i.HEXID"
	RegX            string // a registration's name, hex-encoded
	ReasonX         string // a cause of death, hex-encoded
	KeyX            string // a limit key, hex-encoded (with Limit, unless NoKey)
	NoKey           bool   // the limit is the queue's own: no keyx field
	Limit           hidden // of a limit action: the limit it sets (none, to remove)
	Tab             string // the tab asked from, when not a state's (run-now on the Recurring tab)
	State           string
	Label           string
	Confirm         string // the question the page's script asks
	Danger          bool
}

var funcs = template.FuncMap{
	"rate": func(v rateView, per float64) string {
		if !v.Known {
			return "–"
		}
		return fmt.Sprintf("%.1f/s", per)
	},
	"quantile": quantile,
	"approx":   approx,
	// num writes a count with thousands separators.
	"num": func(n any) string {
		switch v := n.(type) {
		case int:
			return num(int64(v))
		case int64:
			return num(v)
		}
		return fmt.Sprint(n)
	},
	"compact": compact,
	"show":    shown,
	"reason":  shownReason,
	"hex":     func(s string) string { return hex.EncodeToString([]byte(s)) },
	// form is the button of an action on one item (id) of queue, listed
	// in state (for the wording and the page to go back to).
	"form": func(prefix, csrf, op, queue, id, state string) actionForm {
		a := action{Op: op, Queue: queue, IDs: []string{id}}
		a.State, _ = redisq.ParseState(state)
		return actionForm{Prefix: prefix, CSRF: csrf, Op: op, QueueX: hex.EncodeToString([]byte(queue)), State: state,
			IDX: hex.EncodeToString([]byte(id)), Label: ops[op].label, Confirm: a.question(), Danger: ops[op].danger}
	},
	// rowform is form for the item of a list row (it), which carries the
	// item's partition in a list of a partitioned queue.
	"rowform": func(prefix, csrf, op, queue string, it itemRow, state string, nparts int) actionForm {
		a := action{Op: op, Queue: queue, IDs: []string{it.ID}, NParts: nparts}
		if it.HasPart {
			a.Parts, a.PartName = []int{it.Part}, it.PartName
		}
		a.State, _ = redisq.ParseState(state)
		f := actionForm{Prefix: prefix, CSRF: csrf, Op: op, QueueX: hex.EncodeToString([]byte(queue)), State: state,
			IDX: hex.EncodeToString([]byte(it.ID)), Label: ops[op].label, Confirm: a.question(), Danger: ops[op].danger}
		if it.HasPart {
			f.IDX, f.PIDX = "", pidx(it.Part, it.ID)
		}
		return f
	},
	"plural": func(n any, unit string) string {
		switch v := n.(type) {
		case int:
			return count(int64(v), unit)
		case int64:
			return count(v, unit)
		}
		return fmt.Sprint(n, " ", unit, "s")
	},
	"percent": func(f float64) string {
		switch {
		case f == 0:
			return "0%"
		case f < 0.001:
			return "< 0.1%"
		}
		return fmt.Sprintf("%.1f%%", f*100)
	},
	"states": func() []redisq.State { return redisq.States },
	// The overview's sortable columns (overview.go).
	"sortKeys":  func() []string { return sortKeys },
	"sortLabel": func(k string) string { return sortLabels[k] },
	"head": func(m map[string]sortHead, key, label, class, title string) headCell {
		return headCell{m[key], key, label, class, title}
	},
	// orphanNote explains an orphaned registration (recurring.go).
	"orphanNote":  func() string { return orphanNote },
	"orphanAfter": func() string { return short(redisq.OrphanAfter) },
	// behindNote explains a next occurrence in the past (recurring.go).
	"behindNote": func() string { return behindNote },
}
