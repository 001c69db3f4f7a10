package rdb

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestAssembledAsBefore: every script assembles to the text redisq ran
// before the scripts moved here (../../testdata/scripts.golden).
func TestAssembledAsBefore(t *testing.T) {
	b, err := os.ReadFile("../../testdata/scripts.golden")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(string(b), "\n--8<-- script --8<--\n")
	var have []string
	ents, err := fs.ReadDir(luaFiles, "lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		src, _ := lifeWrap(assemble(strings.TrimSuffix(e.Name(), ".lua"), false))
		have = append(have, src)
		if !slices.Contains(want, src) {
			t.Errorf("%s assembles to a text redisq did not run:\n%s", e.Name(), src)
		}
	}
	if len(have) != len(want) {
		t.Errorf("%d scripts, %d before", len(have), len(want))
	}
}
