package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Everything printed that comes from Redis (names, ids, reasons, payloads,
// error texts) goes through clean, quote, writeJSON or showPayload, which
// escape every non-printable character: stored data must not be able to
// move the cursor, retitle the window or hide text in the operator's
// terminal.

// clean escapes the non-printable runes and invalid bytes of s, Go style
// (\x1b, \u202e), leaving printable text as it is.
func clean(s string) string {
	if printable(s) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// quote prints s as a Go-quoted string, so that names with spaces or
// escapes are unambiguous: quote("a b") is "a b" with the quotes.
func quote(s string) string { return strconv.Quote(s) }

// cell is s for a table cell: as it is when printable and free of spaces,
// else quoted.
func cell(s string) string {
	if s == "" || !printable(s) || strings.ContainsAny(s, " \t\"") {
		return quote(s)
	}
	return s
}

// writeJSON writes v as indented JSON, with every non-printable rune that
// encoding/json leaves as it is (DEL, C1 controls such as U+009B, bidi
// overrides) written as a \u escape: still the same JSON value.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeJSON(b.Bytes()))
	return err
}

// escapeJSON escapes non-printable runes of JSON text, newlines and tabs
// aside. Inside strings that keeps the JSON valid; outside strings the
// encoder and json.Indent write only printable text, newlines and indents
// (and showPayload trims the rest).
func escapeJSON(b []byte) []byte {
	var out bytes.Buffer
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == '\n' || r == '\t' || (r != utf8.RuneError && unicode.IsPrint(r)):
			out.Write(b[:n])
		case r == utf8.RuneError && n == 1:
			out.WriteString(`\ufffd`)
		case r > 0xffff:
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
		b = b[n:]
	}
	return out.Bytes()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// showPayload prints a payload for a person: indented if it is JSON,
// as text if it is printable UTF-8 text, else as a hex dump.
func showPayload(w io.Writer, p []byte) {
	switch {
	case len(p) == 0:
		fmt.Fprintln(w, "(empty)")
	case utf8.Valid(p) && json.Valid(p):
		var b bytes.Buffer
		if json.Indent(&b, bytes.TrimSpace(p), "", "  ") == nil {
			_, _ = w.Write(escapeJSON(b.Bytes()))
			fmt.Fprintln(w)
			return
		}
		fallthrough
	case utf8.Valid(p) && textLike(p):
		for _, line := range strings.Split(string(p), "\n") {
			fmt.Fprintln(w, clean(line))
		}
	default:
		fmt.Fprint(w, hex.Dump(p)) // its text column shows only ASCII graphics
	}
}

// textLike: at least 80% printable, so worth showing as (escaped) text.
func textLike(p []byte) bool {
	bad := 0
	for _, r := range string(p) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' {
			bad++
		}
	}
	return bad*5 <= utf8.RuneCount(p)
}

// rel formats t relative to now: "in 1m30s", "2.5s ago", "now".
func rel(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d == 0:
		return "now"
	case d > 0:
		return "in " + roundDur(d).String()
	}
	return roundDur(-d).String() + " ago"
}

// roundDur keeps about three significant figures.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	case d < time.Hour:
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}

// table is a tabwriter with the column layout every table uses.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }
