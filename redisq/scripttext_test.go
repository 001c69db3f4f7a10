package redisq

import (
	goflag "flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// Issue 25 moves every script into one storage layer. Its contract: the
// scripts Redis runs stay byte for byte what they are, unless a commit
// names a change. This test compares the text of every script with the
// copy taken before the move (testdata/scripts.golden); it goes once the
// move is done.

var updateScripts = goflag.Bool("update-scripts", false, "rewrite testdata/scripts.golden")

// scriptTexts returns the text of every script, sorted.
func scriptTexts() []string {
	out := rdb.Sources()
	slices.Sort(out)
	return out
}

const scriptSep = "\n--8<-- script --8<--\n"

func TestScriptTextsUnchanged(t *testing.T) {
	got := strings.Join(scriptTexts(), scriptSep)
	if *updateScripts {
		if err := os.WriteFile("testdata/scripts.golden", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("testdata/scripts.golden")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(string(b), scriptSep)
	have := scriptTexts()
	for _, w := range want {
		if !slices.Contains(have, w) {
			t.Errorf("a script changed or is gone:\n%s", w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			t.Errorf("a script is new or changed:\n%s", h)
		}
	}
}
