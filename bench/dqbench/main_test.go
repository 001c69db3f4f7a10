package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dq-go/delayqueue/bench/internal/cmdtest"
)

func TestMain(m *testing.M) { cmdtest.Main(m, main) }

// The Redis implementations are dqbench-redis's: dqbench refuses them in
// one line that names the command to run instead (issue 25).
func TestRedisImplNamesDqbenchRedis(t *testing.T) {
	cmdtest.WrongCommand(t, map[string]string{
		"redis": "redis", "worker": "worker", "asynq": "asynq", "partitioned": "partitioned",
		"redis,worker,asynq": "redis", "delayqueue,asynq": "asynq",
	}, func(impl string) string {
		return "dqbench: -impl " + impl + " runs on Redis: use dqbench-redis -impl " + impl + " (go run ./bench/dqbench-redis)"
	})
}

// The core benchmark links no Redis client (issue 25): nothing of redisq,
// go-redis or asynq is among its dependencies.
func TestLinksNoRedisClient(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "redis") || strings.Contains(p, "asynq") {
			t.Errorf("dqbench depends on %s", p)
		}
	}
}
