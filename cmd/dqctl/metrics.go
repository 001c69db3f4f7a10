package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"time"

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

// serveHTTP serves h on l until the command is interrupted, then shuts
// the server down gracefully.
func serveHTTP(e *env, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-e.ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
