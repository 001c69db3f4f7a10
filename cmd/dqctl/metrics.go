package main

import (
	"flag"
	"net"
	"net/http"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func metricsFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.listen, "listen", "127.0.0.1:9108", "serve /metrics on this `host:port`")
	// e.count is free here (watch's -n): it holds the scan budget.
	fs.IntVar(&e.count, "scan-keys", dqprom.DefaultScanKeys,
		"without QUEUE: keys to SCAN per scrape (per node) for queues missing from the registry "+redisq.RegistryKey+"; 0: none")
}

// cmdServeMetrics serves the metrics of the queues named, or of every queue
// on the server. -timeout bounds the Redis work of each scrape; concurrent
// scrapes share one reading (dqprom.RedisCollector).
func cmdServeMetrics(e *env) error {
	if e.conn.timeout <= 0 {
		return usageErr("-timeout must be positive")
	}
	if e.count < 0 {
		return usageErr("-scan-keys must not be negative")
	}
	opts := []dqprom.RedisOption{dqprom.WithTimeout(e.conn.timeout)}
	var col *dqprom.RedisCollector
	if len(e.args) == 0 {
		col = dqprom.NewRedisServerCollector(e.c, append(opts, dqprom.WithScanKeys(e.count))...)
	} else {
		var qs []*redisq.Queue
		for i := range e.args {
			e.args[0], e.args[i] = e.args[i], e.args[0]
			q, err := e.queue()
			if err != nil {
				return err
			}
			qs = append(qs, q)
		}
		col = dqprom.NewRedisCollectorWithOptions(qs, opts...)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	l, err := net.Listen("tcp", e.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	e.printf("serving metrics of %s on http://%s/metrics\n", which(e.args), l.Addr())
	return serveHTTP(e, l, mux)
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
