package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// TestServeMetricsLimitScan: -limit-scan bounds the limit keys a scrape
// reads (issue 41, item 10): the others are counted unread, and a
// negative one is a usage error.
func TestServeMetricsLimitScan(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if err := f.q.SetRateLimit(ctx, k, redisq.RateLimit{N: 1, Per: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for args, want := range map[string][]string{
		"":              {`redisq_rate_limit_keys{queue="orders"} 3`, `redisq_rate_limit_unread_keys{queue="orders"} 0`},
		"-limit-scan=2": {`redisq_rate_limit_keys{queue="orders"} 3`, `redisq_rate_limit_unread_keys{queue="orders"} 1`},
		"-limit-scan=0": {`redisq_rate_limit_unread_keys{queue="orders"} 0`, `redisq_rate_limit_claims{key="c",queue="orders"} 1`},
	} {
		a := []string{"-redis", f.addr, "serve-metrics", "-listen", "127.0.0.1:0"}
		if args != "" {
			a = append(a, args)
		}
		u, stop := serving(t, a...)
		code, body := httpGet(t, http.DefaultClient, u)
		stop()
		for _, w := range want {
			if code != http.StatusOK || !strings.Contains(body, w) {
				t.Errorf("serve-metrics %s: %d, lacks %s", args, code, w)
			}
		}
	}
	dqctl(t, "", "-redis", f.addr, "serve-metrics", "-limit-scan", "-1").want(t, exitUsage, "-limit-scan must not be negative")
}
