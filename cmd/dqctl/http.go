package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// serverLimits bound what one connection can hold of the server, for
// serve and serve-metrics alike: headers must arrive within
// readHeader, the whole request (a slow body included) within read, an
// idle keep-alive connection is closed after idle, and headers are at
// most headerBytes (a dashboard URL with a name of dqweb.MaxName bytes,
// escaped, fits several times over). No write timeout: an action on a
// whole state runs as long as it needs. A variable for tests.
var serverLimits = struct {
	readHeader, read, idle time.Duration
	headerBytes            int
}{10 * time.Second, 30 * time.Second, 2 * time.Minute, 128 << 10}

// serveHTTP serves h on l until the command is interrupted, then shuts
// the server down gracefully.
func serveHTTP(e *env, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: serverLimits.readHeader, ReadTimeout: serverLimits.read,
		IdleTimeout: serverLimits.idle, MaxHeaderBytes: serverLimits.headerBytes}
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
