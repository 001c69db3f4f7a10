package main

import (
	"flag"
	"net"
	"net/http"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func metricsFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.listen, "listen", "127.0.0.1:9108", "serve /metrics on this `host:port`")
	fs.IntVar(&e.scanKeys, "scan-keys", dqprom.DefaultScanKeys,
		"without QUEUE: `n` keys to SCAN per scrape (per node) for queues missing from the registry "+redisq.RegistryKey+"; 0: none")
	fs.IntVar(&e.limitScan, "limit-scan", dqprom.DefaultLimitScan,
		"count the waiting items of at most `n` limit keys of each kind per queue and scrape, to report the busiest (the others: redisq_*_unread_keys); 0: every key")
	allowHostFlag(fs, e)
}

// cmdServeMetrics serves the metrics of the queues named, or of every queue
// on the server: their stats (dqprom.RedisCollector) and their recurring
// registrations (dqprom.RecurringCollector). A partitioned queue named is
// served as its partitions (the server-wide collector adds
// redisq_partition_info, to sum them by partitioned queue). -timeout bounds the Redis work
// of each collector's scrape; concurrent scrapes share one reading of the
// stats. Like the dashboard, it answers only to IP addresses, localhost,
// the -listen host and -allow-host: a page that DNS rebinding made
// same-origin with it must not read the queues' names and counts.
func cmdServeMetrics(e *env) error {
	if e.scanKeys < 0 || e.limitScan < 0 {
		return usageErr("-scan-keys and -limit-scan must not be negative")
	}
	opts := []dqprom.RedisOption{dqprom.WithTimeout(e.conn.timeout), dqprom.WithLimitScan(e.limitScan)}
	var col *dqprom.RedisCollector
	var rec *dqprom.RecurringCollector
	if len(e.args) == 0 {
		col = dqprom.NewRedisServerCollector(e.c, append(opts, dqprom.WithScanKeys(e.scanKeys))...)
		rec = dqprom.NewRecurringServerCollector(e.c, opts...)
	} else {
		var qs []*redisq.Queue
		for _, name := range e.args {
			t, err := e.target(name)
			if err != nil {
				return err
			}
			if t.p == nil {
				qs = append(qs, t.q)
				continue
			}
			defer t.Close()
			for i := range t.p.NumPartitions() {
				qs = append(qs, t.p.Partition(i))
			}
		}
		col = dqprom.NewRedisCollectorWithOptions(qs, opts...)
		rec = dqprom.NewRecurringCollectorWithOptions(qs, opts...)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(col, rec)
	l, err := net.Listen("tcp", e.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	e.printf("serving metrics of %s on http://%s/metrics\n", which(e.args), l.Addr())
	allow := func(name string) string { return "dqctl serve-metrics -allow-host " + name }
	return serveHTTP(e, l, dqweb.AllowHostsWith(mux, allow, e.allowedHosts()...))
}

func which(names []string) string {
	if len(names) == 0 {
		return "every queue"
	}
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += quote(n)
	}
	return s
}
