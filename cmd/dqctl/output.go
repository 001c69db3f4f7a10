package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
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

// limits bound what showPayload prints: at most lines lines, each cut
// to cols columns; zero: no bound.
type limits struct{ cols, lines int }

// showPayload prints a payload for a person: indented if it is JSON,
// as text if it is printable UTF-8 text, else as a hex dump; within lim,
// then saying what was left out.
func showPayload(w io.Writer, p []byte, lim limits) {
	var text string
	total := 0 // lines of the whole formatted payload
	switch {
	case len(p) == 0:
		fmt.Fprintln(w, "(empty)")
		return
	case utf8.Valid(p) && json.Valid(p):
		var b bytes.Buffer
		if json.Indent(&b, bytes.TrimSpace(p), "", "  ") == nil {
			text = string(escapeJSON(b.Bytes()))
			break
		}
		fallthrough
	case utf8.Valid(p) && textLike(p):
		text = string(p)
	default:
		// Its text column shows only ASCII graphics. Only what is shown
		// is dumped.
		n := len(p)
		if lim.lines > 0 {
			n = min(n, lim.lines*16)
		}
		text = strings.TrimSuffix(hex.Dump(p[:n]), "\n")
		total = (len(p) + 15) / 16
	}
	if total == 0 {
		total = strings.Count(text, "\n") + 1
	}
	shown, cutLines := 0, false
	for line := range strings.SplitSeq(text, "\n") {
		if lim.lines > 0 && shown == lim.lines {
			break
		}
		line = clean(line)
		if lim.cols > 0 && width(line) > lim.cols {
			line, cutLines = cutTo(line, lim.cols), true
		}
		fmt.Fprintln(w, line)
		shown++
	}
	if shown < total || cutLines {
		what := fmt.Sprintf("%d of %d lines shown", shown, total)
		if cutLines {
			what += ", long lines cut"
		}
		fmt.Fprintf(w, "(cut to fit the terminal: %s; %s in all; -full prints everything)\n", what, plural(int64(len(p)), "byte"))
	}
}

// oneLine is p for a table cell: valid UTF-8 JSON as it is, compacted,
// its non-printable runes written as \u escapes (still the same JSON
// value, as in show); anything else quoted and escaped as cell does.
func oneLine(p []byte) string {
	var b bytes.Buffer
	if utf8.Valid(p) && json.Valid(p) && json.Compact(&b, p) == nil {
		return string(escapeJSON(b.Bytes()))
	}
	return cell(string(p))
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

// tableGap is the space between the columns of a table.
const tableGap = 2

// table is a tabwriter with the column layout every table uses.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, tableGap, ' ', 0) }

// screen is the size of the terminal w writes to: its own when it is
// one, else $COLUMNS and $LINES, else 80x24.
type screenSize struct{ cols, rows int }

func screen(w io.Writer) screenSize {
	s := screenSize{80, 24}
	if f, ok := w.(*os.File); ok && isTerminal(w) {
		if c, r, ok := termSize(f); ok {
			return screenSize{c, r}
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		s.cols = n
	}
	if n, err := strconv.Atoi(os.Getenv("LINES")); err == nil && n > 0 {
		s.rows = n
	}
	return s
}

// Table columns that fitColumns may cut: at least minCut wide (or the
// width of their header), a table's last one first down to minLast.
const (
	minCut  = 8
	minLast = 20
)

// fitColumns cuts the cells of the columns cut (indexes) so that the
// table, laid out as writeTable does, fits cols columns if it can: the
// last column, when it is one of them, first down to minLast (cut at its
// end, as a reason reads from its start), then the widest of them one
// column at a time (ids and kinds elided in their middle, so that both
// ends show). It returns the headers of the columns it cut.
func fitColumns(rows [][]string, cols int, cut ...int) []string {
	if len(rows) < 2 {
		return nil
	}
	n := len(rows[0])
	w := make([]int, n)
	for _, r := range rows {
		for c, s := range r {
			w[c] = max(w[c], width(s))
		}
	}
	total := func() int {
		t := (n - 1) * tableGap
		for _, v := range w {
			t += v
		}
		return t
	}
	floor := func(c int) int { return max(minCut, width(rows[0][c])) }
	fit := slices.Clone(w)
	if slices.Contains(cut, n-1) && total() > cols {
		w[n-1] = max(min(w[n-1], minLast), w[n-1]-(total()-cols), floor(n-1))
	}
	for total() > cols {
		widest := -1
		for _, c := range cut {
			if w[c] > floor(c) && (widest < 0 || w[c] > w[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			break // as narrow as they go
		}
		w[widest]--
	}
	var names []string
	for _, c := range cut {
		if w[c] == fit[c] {
			continue
		}
		names = append(names, rows[0][c])
		for _, r := range rows[1:] {
			if c == n-1 {
				r[c] = cutTo(r[c], w[c])
			} else {
				r[c] = elide(r[c], w[c])
			}
		}
	}
	return names
}

// writeTable writes rows as a table: every column but the last padded to
// its widest cell, by display width, and tableGap more.
func writeTable(w io.Writer, rows [][]string) error {
	var cw []int
	for _, r := range rows {
		for c, s := range r {
			if c == len(cw) {
				cw = append(cw, 0)
			}
			cw[c] = max(cw[c], width(s))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for c, s := range r {
			b.WriteString(s)
			if c < len(r)-1 {
				b.WriteString(strings.Repeat(" ", cw[c]-width(s)+tableGap))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// num is n with thousands separators, 1,234,567, for counts in human
// output (-json has plain numbers).
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}

// counted is plural with thousands separators: "1 item", "1,234 items".
func counted(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return num(n) + " " + unit + "s"
}

// absTime is a Redis-clock time in a table cell: UTC, to the second, in
// RFC 3339 (what -first-at takes), without the date on now's day (UTC):
// 15:31:11Z, 2026-11-30T15:31:11Z.
func absTime(t, now time.Time) string {
	t = t.UTC()
	if y, m, d := t.Date(); now.UTC().Year() == y && now.UTC().Month() == m && now.UTC().Day() == d {
		return t.Format("15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05Z")
}

// when is a time relative to now with the absolute one beside it:
// "3m0s ago (15:31:11Z)", "in 20h0m0s (2026-12-02T09:00:00Z)".
func when(t, now time.Time) string { return rel(t, now) + " (" + absTime(t, now) + ")" }
