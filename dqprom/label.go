package dqprom

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLabelLen bounds the "queue" label value, in bytes. Longer names are
// cut (see QueueLabel).
const MaxLabelLen = 256

// maxErrorLen bounds the "error" label value of redisq_scrape_error and
// redisq_discovery_error, in bytes.
const maxErrorLen = 512

// labelHash returns the hex digits that end a cut label: 64 bits of the
// SHA-256 of the whole name. A variable so that a test can make two names
// collide.
var labelHash = func(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:8])
}

// cutMark separates a cut label's prefix from its hash: the backslash
// makes it unlike any name (see QueueLabel), "#" unlike any escape.
const cutMark = "…\\#"

// QueueLabel returns the value of the "queue" label for the queue name:
// valid UTF-8 (Prometheus refuses anything else, and a collector that
// panics on it takes the whole process down), at most MaxLabelLen bytes,
// free of control and bidirectional-formatting characters, and different
// for different names:
//
//   - a name of at most MaxLabelLen bytes of printable characters (Unicode
//     graphic characters and spaces) without a backslash is its own label;
//   - in any other name, each byte that is not valid UTF-8 and each ASCII
//     control character becomes \xHH, every other non-printable character
//     (C1 controls, U+202E and the other format characters, line and
//     paragraph separators, unassigned code points) \uHHHH or \UHHHHHHHH,
//     and a backslash \\. Such a label holds a backslash and a name's own
//     label never does, and the escapes can be read back, so two names
//     never share a label;
//   - a label longer than MaxLabelLen keeps as many whole characters and
//     escapes as fit, then "…\#" and 16 hex digits of the SHA-256 of the
//     whole name. Two names then share a label only if they share that
//     prefix and 64 bits of hash; the collectors check every scrape for it.
func QueueLabel(name string) string {
	if len(name) <= MaxLabelLen && isPlain(name) {
		return name
	}
	return escapeLabel(name, MaxLabelLen, true)
}

// errorLabel returns err's message as a label value: as QueueLabel, but
// cut at maxErrorLen bytes with a plain "…" (an error label need not be
// unique).
func errorLabel(err error) string {
	s := err.Error()
	if len(s) <= maxErrorLen && isPlain(s) {
		return s
	}
	return escapeLabel(s, maxErrorLen, false)
}

func isPlain(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !plainRune(r) {
			return false
		}
		i += n
	}
	return true
}

func plainRune(r rune) bool { return r != '\\' && (r == ' ' || unicode.IsGraphic(r)) }

// escapeLabel escapes s as QueueLabel describes and cuts it to limit bytes,
// ending a cut label with cutMark and labelHash(s) (hash) or with "…". It
// stops reading s once the label is longer than limit, so its cost is
// bounded by limit, not by len(s), apart from the hash.
func escapeLabel(s string, limit int, hash bool) string {
	tail := len("…")
	if hash {
		tail = len(cutMark) + len(labelHash(""))
	}
	var b strings.Builder
	cut := 0 // the longest escaped prefix, at a whole character, that leaves room for the tail
	const hexDigits = "0123456789abcdef"
	i := 0
	for i < len(s) && b.Len() <= limit {
		if b.Len() <= limit-tail {
			cut = b.Len()
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1, r < 0x20, r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&15])
		case r == '\\':
			b.WriteString(`\\`)
		case plainRune(r):
			b.WriteString(s[i : i+n])
		case r <= 0xffff:
			b.WriteString(`\u`)
			for sh := 12; sh >= 0; sh -= 4 {
				b.WriteByte(hexDigits[r>>sh&15])
			}
		default:
			b.WriteString(`\U`)
			for sh := 28; sh >= 0; sh -= 4 {
				b.WriteByte(hexDigits[r>>sh&15])
			}
		}
		i += n
	}
	if i == len(s) && b.Len() <= limit {
		return b.String()
	}
	if hash {
		return b.String()[:cut] + cutMark + labelHash(s)
	}
	return b.String()[:cut] + "…"
}
