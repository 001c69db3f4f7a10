package main

import (
	"testing"

	"github.com/dq-go/delayqueue/bench/internal/cmdtest"
)

func TestMain(m *testing.M) { cmdtest.Main(m, main) }

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
