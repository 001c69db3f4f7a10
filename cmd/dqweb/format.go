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
// escapes it for its context. The formatting here makes it readable:
// payloads as indented JSON, text or a hex dump, with the characters a
// browser would not show (controls, bidi overrides) written as escapes.

// payloadView is a payload formatted for a page.
type payloadView struct {
	Kind      string // "JSON", "text", "binary" or "empty"
	Text      string // what is shown (all of it, or the first part)
	Size      int    // bytes in the payload
	Truncated bool   // Text shows only part of the payload
}

// formatPayload formats p, showing at most limit bytes of the formatted
// text (limit < 0: all of it).
func formatPayload(p []byte, limit int) payloadView {
	v := payloadView{Size: len(p)}
	var text string
	switch {
	case len(p) == 0:
		v.Kind = "empty"
		return v
	case utf8.Valid(p) && json.Valid(p):
		var b bytes.Buffer
		if json.Indent(&b, bytes.TrimSpace(p), "", "  ") == nil {
			v.Kind, text = "JSON", visible(b.String())
			break
		}
		fallthrough
	case utf8.Valid(p) && mostlyText(p):
		v.Kind, text = "text", visible(string(p))
	default:
		v.Kind = "binary"
		n := len(p)
		if limit >= 0 {
			n = min(n, max(16, limit/5)) // a hex.Dump line shows 16 bytes in 79 characters
		}
		v.Text, v.Truncated = hex.Dump(p[:n]), n < len(p)
		return v
	}
	if limit >= 0 && len(text) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text, v.Truncated = text[:cut], true
	}
	v.Text = text
	return v
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

// when is a time as pages show it: relative to the Redis clock, with the
// absolute time (UTC) as a tooltip.
type when struct {
	Set      bool
	Rel, Abs string
	ISO      string
}

func at(t, now time.Time) when {
	if t.IsZero() || t.UnixMilli() == 0 {
		return when{}
	}
	w := when{Set: true, Abs: t.UTC().Format("2006-01-02 15:04:05.000 UTC"), ISO: t.UTC().Format(time.RFC3339Nano)}
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
type actionForm struct {
	Prefix, CSRF string
	Op, Queue    string
	ID, State    string
	Label        string
	Confirm      string // the question the page's script asks
	Danger       bool
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
	"compact":  compact,
	"form": func(prefix, csrf, op, queue, id, state string) actionForm {
		a := action{Op: op, Queue: queue, ID: id}
		a.State, _ = redisq.ParseState(state)
		f := actionForm{Prefix: prefix, CSRF: csrf, Op: op, Queue: queue, ID: id, State: state,
			Label: ops[op].label, Confirm: a.question(), Danger: op != "requeue" && op != "requeue-all"}
		if state != "" {
			f.Label += " " + state
		}
		return f
	},
	"states": func() []redisq.State { return redisq.States },
}
