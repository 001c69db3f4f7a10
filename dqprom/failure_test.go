package dqprom_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// registered creates queues with one item each, as an admin.
func registered(t *testing.T, c redis.UniversalClient, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := newQueue(t, c, n).EnqueueAfter(context.Background(), "x", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
}

// aclUser creates an ACL user with rules and returns a client of it.
func aclUser(t *testing.T, admin *redis.Client, addr, user string, rules ...interface{}) *redis.Client {
	t.Helper()
	args := append([]interface{}{"ACL", "SETUSER", user, "reset", "on", ">pw"}, rules...)
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: "pw"})
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if who, err := c.Do(context.Background(), "ACL", "WHOAMI").Text(); err != nil || who != user {
		t.Fatalf("ACL WHOAMI: %q %v", who, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func served(t *testing.T, col prometheus.Collector) (int, string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	return scrape(t, reg)
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, l) {
			t.Errorf("scrape lacks %q:\n%s", l, body)
		}
	}
}

// Item 7 of issue 17: when Redis refused the per-queue script (an ACL user
// without EVALSHA), the exporter answered 200 with an empty body. Every
// queue now reports redisq_up 0 and the refusal.
func TestScrapeWithoutScriptPermission(t *testing.T) {
	s := redistest.New(t)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	registered(t, admin, "a", "b")
	mon := aclUser(t, admin, s.Addr, "mon", "~*", "&*", "+@all", "-@scripting")
	code, body := served(t, dqprom.NewRedisServerCollector(mon))
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	wantLines(t, body, `redisq_up{queue="a"} 0`, `redisq_up{queue="b"} 0`,
		`redisq_scrape_error{error="opening the queue: NOPERM`, `'evalsha' command",queue="a"} 1`)
}

// A queue the exporter may not read reports redisq_up 0 and why, and the
// others are reported as usual: an ACL user allowed the keys of queue
// "good" only.
func TestScrapeOneQueueRefused(t *testing.T) {
	s := redistest.New(t)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	registered(t, admin, "good", "secret")
	part := aclUser(t, admin, s.Addr, "part", "~{dq:good}:*", "~"+redisq.RegistryKey, "+@all")
	for _, col := range []*dqprom.RedisCollector{dqprom.NewRedisServerCollector(part)} {
		code, body := served(t, col)
		if code != http.StatusOK {
			t.Fatalf("scrape: %d\n%s", code, body)
		}
		wantLines(t, body, `redisq_up{queue="good"} 1`, `redisq_items{queue="good",state="scheduled"} 1`,
			`redisq_up{queue="secret"} 0`, `redisq_scrape_error{error="opening the queue: redisq: the Redis user may not use the keys of queue \"secret\"`)
	}
}

// With redis-server stopped, a collector of given queues reports each
// redisq_up 0 with the connection error; a server-wide one cannot list the
// queues: the scrape fails with the reason (500 under HTTPErrorOnError),
// and reports the queues it knew redisq_up 0 to a handler that goes on.
func TestScrapeServerStopped(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	registered(t, c, "a", "b")
	given := dqprom.NewRedisCollector(newQueue(t, c, "a"), newQueue(t, c, "b"))
	server := dqprom.NewRedisServerCollector(c)
	if code, body := served(t, server); code != http.StatusOK || !strings.Contains(body, `redisq_up{queue="b"} 1`) {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	s.Close()

	code, body := served(t, given)
	if code != http.StatusOK {
		t.Fatalf("given queues: %d\n%s", code, body)
	}
	wantLines(t, body, `redisq_up{queue="a"} 0`, `redisq_up{queue="b"} 0`, `redisq_scrape_error{error="dial tcp`, `connection refused",queue="b"} 1`)

	code, body = served(t, server)
	if code != http.StatusInternalServerError || !strings.Contains(body, "finding the queues: dial tcp") {
		t.Fatalf("server-wide: %d\n%s", code, body)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(server)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	wantLines(t, rec.Body.String(), `redisq_up{queue="a"} 0`, `redisq_up{queue="b"} 0`)
}
