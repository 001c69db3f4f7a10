package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves the collector's metrics at http://addr/metrics (the
// -metrics flag) until stop is called; addr "" serves nothing.
func serveMetrics(addr string, c prometheus.Collector) (url string, stop func(), err error) {
	if addr == "" {
		return "", func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("metrics server:", err)
		}
	}()
	url = "http://" + l.Addr().String() + "/metrics"
	fmt.Println("metrics at", url)
	return url, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
