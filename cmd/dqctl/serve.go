package main

import (
	"flag"
	"net"
	"net/http"
	"strings"

	"github.com/dq-go/delayqueue/cmd/dqweb"
)

func serveFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.listen, "listen", "127.0.0.1:8080", "serve the dashboard on this `host:port` (loopback by default)")
	fs.BoolVar(&e.readOnly, "readonly", false, "hide and refuse (403) every action")
	fs.StringVar(&e.basicAuth, "basic-auth", envOr("DQCTL_BASIC_AUTH", ""), "require HTTP basic auth `user:password` (env DQCTL_BASIC_AUTH, which keeps it out of ps)")
	fs.StringVar(&e.prefix, "prefix", "/", "serve under this path `prefix` (for a reverse proxy)")
}

func cmdServe(e *env) error {
	if !strings.HasPrefix(e.prefix, "/") {
		return usageErr("-prefix must start with /")
	}
	if !strings.HasSuffix(e.prefix, "/") {
		e.prefix += "/"
	}
	var user, password string
	if e.basicAuth != "" {
		var ok bool
		user, password, ok = strings.Cut(e.basicAuth, ":")
		if !ok || user == "" || password == "" {
			return usageErr("-basic-auth (or DQCTL_BASIC_AUTH) must be user:password")
		}
	}
	var h http.Handler = dqweb.Handler(e.c, dqweb.Options{Prefix: e.prefix, ReadOnly: e.readOnly, Timeout: e.conn.timeout})
	if user != "" {
		h = dqweb.BasicAuth(h, user, password)
	}
	mux := http.NewServeMux()
	mux.Handle(e.prefix, h)
	l, err := net.Listen("tcp", e.listen)
	if err != nil {
		return err
	}
	if host, _, _ := net.SplitHostPort(l.Addr().String()); user == "" && !net.ParseIP(host).IsLoopback() {
		e.printf("warning: serving on %s without -basic-auth: anyone who can reach it can change the queues\n", l.Addr())
	}
	mode := ""
	if e.readOnly {
		mode = " (read-only)"
	}
	e.printf("serving the dashboard of %s on http://%s%s%s\n", e.conn.where(), l.Addr(), e.prefix, mode)
	return serveHTTP(e, l, mux)
}
