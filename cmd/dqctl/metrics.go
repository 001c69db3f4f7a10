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
}

func cmdServeMetrics(e *env) error {
	var col *dqprom.RedisCollector
	if len(e.args) == 0 {
		col = dqprom.NewRedisServerCollector(e.c)
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
		col = dqprom.NewRedisCollector(qs...)
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
