package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dq-go/delayqueue/bench/internal/cmdtest"
	"github.com/dq-go/delayqueue/bench/internal/report"
)

func TestMain(m *testing.M) { cmdtest.Main(m, main) }

// runJSON runs the command with args and -json, fails t unless it exits
// 0, and returns the report it wrote and its standard output.
func runJSON(t *testing.T, args ...string) (report.Report, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "out.json")
	status, stdout, stderr := cmdtest.Run(t, append(args, "-json", js)...)
	if status != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, stdout
}

// The in-process implementations are dqbench's: dqbench-redis refuses them
// in one line that names the command to run instead. (-redis: nowhere,
// should the check let one through.)
func TestInProcessImplNamesDqbench(t *testing.T) {
	cmdtest.WrongCommand(t, map[string]string{
		"delayqueue": "delayqueue", "afterfunc": "afterfunc", "heapcond": "heapcond", "floor": "floor", "all": "all",
		"redis,delayqueue": "delayqueue",
	}, func(impl string) string {
		return "dqbench-redis: -impl " + impl + " runs in process: use dqbench -impl " + impl + " (go run ./bench/dqbench)"
	}, "-redis", "127.0.0.1:1")
}
