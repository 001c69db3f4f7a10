package main

import (
	"unicode"
	"unicode/utf8"
)

// The width of printed text in terminal columns, as wcwidth counts it: a
// wide or fullwidth East Asian character (and an emoji) takes two, a
// combining mark none, any other printable rune one. What is printed is
// already escaped (clean, cell), so no control character is left to
// count.

// wide holds the runes of East Asian width W or F (Markus Kuhn's
// wcwidth ranges, with the emoji blocks).
var wide = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x1100, 0x115f, 1}, {0x2329, 0x232a, 1}, {0x2e80, 0x303e, 1}, {0x3041, 0x33ff, 1},
		{0x3400, 0x4dbf, 1}, {0x4e00, 0x9fff, 1}, {0xa000, 0xa4cf, 1}, {0xac00, 0xd7a3, 1},
		{0xf900, 0xfaff, 1}, {0xfe10, 0xfe19, 1}, {0xfe30, 0xfe6f, 1}, {0xff00, 0xff60, 1},
		{0xffe0, 0xffe6, 1},
	},
	R32: []unicode.Range32{
		{0x1f300, 0x1f64f, 1}, {0x1f900, 0x1f9ff, 1}, {0x20000, 0x2fffd, 1}, {0x30000, 0x3fffd, 1},
	},
}

// runeWidth is the columns r takes.
func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me):
		return 0
	case unicode.Is(wide, r):
		return 2
	}
	return 1
}

// width is the columns s takes.
func width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// cutTo cuts s to at most n columns, the last one an ellipsis.
func cutTo(s string, n int) string {
	if width(s) <= n {
		return s
	}
	used := 0
	for i, r := range s {
		w := runeWidth(r)
		if used+w > n-1 {
			return s[:i] + "…"
		}
		used += w
	}
	return s
}

// elide cuts s to at most n columns by an ellipsis in its middle, so that
// both ends show: an id's prefix and its distinguishing tail, and the
// closing quote of a quoted one.
func elide(s string, n int) string {
	if width(s) <= n || n < 3 {
		return cutTo(s, n)
	}
	head := cutTo(s, (n+1)/2)
	head = head[:len(head)-len("…")]
	room := n - width(head) - 1
	tail, used := len(s), 0
	for tail > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:tail])
		if used+runeWidth(r) > room {
			break
		}
		used += runeWidth(r)
		tail -= size
	}
	return head + "…" + s[tail:]
}
