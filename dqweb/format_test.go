package dqweb_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/redisq"
)

func TestFormatPayload(t *testing.T) {
	long := bytes.Repeat([]byte("é"), 1000) // two bytes a rune
	cases := []struct {
		name      string
		p         []byte
		limit     int
		kind      string
		text      string // the whole text, or with "..." a prefix
		truncated bool
	}{
		{"empty", nil, 100, "empty", "", false},
		{"JSON is indented", []byte(` {"a":[1,2],"b":"<x>"} `), 1 << 20, "JSON", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"<x>\"\n}", false},
		{"text", []byte("hello\nworld"), 1 << 20, "text", "hello\nworld", false},
		{"controls and bidi overrides are escaped", []byte("a\x1b[31mbold text\u202eabc\x7f"), 1 << 20, "text", `a\x1b[31mbold text\u202eabc\x7f`, false},
		{"escaped inside JSON strings too", []byte(`{"a":"x` + "\u202e" + `"}`), 1 << 20, "JSON", "{\n  \"a\": \"x\\u202e\"\n}", false},
		{"binary is a hex dump", []byte{0, 1, 2, 0xff}, 1 << 20, "binary", "00000000  00 01 02 ff                                       |....|\n", false},
		{"invalid UTF-8 is binary", []byte("ab\xffcd"), 1 << 20, "binary", "00000000  61 62 ff 63 64", false},
		{"text cut at a rune boundary", long, 101, "text", strings.Repeat("é", 50) + "...", true},
		{"hex dump cut to the limit", bytes.Repeat([]byte{0}, 1000), 160, "binary", "00000000  00 00", true},
	}
	for _, c := range cases {
		kind, text, trunc := dqweb.FormatPayload(c.p, len(c.p), c.limit)
		want, prefix := strings.CutSuffix(c.text, "...")
		ok := text == want
		if prefix || c.kind == "binary" {
			ok = strings.HasPrefix(text, want)
		}
		if kind != c.kind || !ok || trunc != c.truncated {
			t.Errorf("%s: got %s %q truncated %v, want %s %q truncated %v", c.name, kind, text, trunc, c.kind, c.text, c.truncated)
		}
	}
	if _, text, _ := dqweb.FormatPayload(long, len(long), 101); len(text) != 100 {
		t.Errorf("cut text has %d bytes, want 100 (50 runes of 2 bytes)", len(text))
	}
	if _, text, _ := dqweb.FormatPayload(bytes.Repeat([]byte{0}, 1000), 1000, 160); strings.Count(text, "\n") != 2 {
		t.Errorf("a limit of 160 characters should show two hex lines:\n%s", text)
	}
}

func TestRates(t *testing.T) {
	r := dqweb.NewRates()
	t0 := time.Unix(1_000_000, 0)
	st := func(at time.Duration, enq, del int64, late ...int64) redisq.Stats {
		s := redisq.Stats{Now: t0.Add(at)}
		s.Enqueued, s.Delivered = enq, del
		s.Lateness = redisq.Lateness{Bounds: redisq.LatenessBounds(), Counts: make([]int64, len(redisq.LatenessBounds())+1)}
		copy(s.Lateness.Counts, late)
		return s
	}
	if known, _, _, _, _ := r.Observe("q", st(0, 100, 50, 50)); known {
		t.Fatal("rates known from one reading")
	}
	if known, _, _, _, _ := r.Observe("q", st(500*time.Millisecond, 105, 50, 50)); known {
		t.Fatal("rates known over half a second")
	}
	// 10s later: 200 more enqueued, 100 more delivered, all 100 late by
	// 1ms (the second bucket); earlier deliveries were on time.
	known, enq, del, late, recent := r.Observe("q", st(10*time.Second, 300, 150, 50, 100))
	if !known || enq != 20 || del != 10 || !recent || late.Count() != 100 || late.Quantile(0.5) != time.Millisecond {
		t.Fatalf("got known %v enq %v del %v recent %v late %v", known, enq, del, recent, late.Counts)
	}
	// No deliveries over the last minute: lateness falls back to all time.
	r.Observe("q", st(20*time.Second, 300, 150, 50, 100))
	if _, _, _, late, recent := r.Observe("q", st(75*time.Second, 300, 150, 50, 100)); recent || late.Count() != 150 {
		t.Fatalf("no recent deliveries: recent %v, %d deliveries", recent, late.Count())
	}
	// After Destroy the counters restart: older readings are forgotten.
	if known, _, _, _, _ := r.Observe("q", st(85*time.Second, 1, 0)); known {
		t.Fatal("rates computed across a reset of the counters")
	}
	// Readings older than a minute are forgotten.
	if known, _, _, _, _ := r.Observe("other", st(0, 0, 0)); known {
		t.Fatal("known from one reading")
	}
	if known, _, _, _, _ := r.Observe("other", st(2*time.Minute, 10, 0)); known {
		t.Fatal("rate over a reading older than the window")
	}
}
