package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/redisq"
)

func serveFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.listen, "listen", "127.0.0.1:8080", "serve the dashboard on this `host:port` (loopback by default)")
	fs.BoolVar(&e.readOnly, "readonly", false, "hide and refuse (403) every action")
	fs.StringVar(&e.basicAuth, "basic-auth", envOr("DQCTL_BASIC_AUTH", ""), "require HTTP basic auth `user:password` (env DQCTL_BASIC_AUTH, which keeps it out of ps)")
	fs.StringVar(&e.prefix, "prefix", "/", "serve under this path `prefix` (for a reverse proxy)")
	fs.Var((*listFlag)(&e.queues), "queues", "the `names` of the queues the overview lists, comma-separated, repeatable (default: every queue in the registry "+
		redisq.RegistryKey+"); -queue for a name that holds a comma")
	fs.Var((*nameFlag)(&e.queues), "queue", "one more queue for the overview, the exact `name`; repeatable")
	fs.StringVar(&e.title, "title", "", "the dashboard's `title`, in every page's header (default \"redisq\")")
	fs.DurationVar(&e.refresh, "refresh", 5*time.Second, "pages reload themselves every `duration`; 0: never")
	allowHostFlag(fs, e)
}

// allowHostFlag registers -allow-host, for serve and serve-metrics.
func allowHostFlag(fs *flag.FlagSet, e *env) {
	fs.Var((*listFlag)(&e.allowHosts), "allow-host", "also answer to this host `name` (the name a reverse proxy forwards, or *.example.com); repeatable or comma-separated. "+
		"IP addresses, localhost and the -listen host are always answered; other names are refused (421) against DNS rebinding")
}

// listFlag collects comma-separated values, repeatable.
type listFlag []string

func (f *listFlag) String() string { return strings.Join(*f, ",") }

func (f *listFlag) Set(v string) error {
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			*f = append(*f, h)
		}
	}
	return nil
}

// nameFlag collects one exact value per use.
type nameFlag []string

func (f *nameFlag) String() string { return strings.Join(*f, ",") }

func (f *nameFlag) Set(v string) error {
	*f = append(*f, v)
	return nil
}

// allowedHosts is -allow-host and the -listen host when it is a name (an
// IP is allowed anyway).
func (e *env) allowedHosts() []string {
	hosts := append([]string(nil), e.allowHosts...)
	if host, _, err := net.SplitHostPort(e.listen); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	return hosts
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
	if e.refresh < 0 {
		return usageErr("-refresh must not be negative (0: never)")
	}
	for _, n := range e.queues {
		if n == "" || strings.ContainsAny(n, "{}") {
			return usageErr("bad queue name %s in -queues: names are non-empty and hold no '{' or '}'", quote(n))
		}
	}
	refresh := e.refresh
	if refresh == 0 {
		refresh = -1 // dqweb: negative disables it
	}
	hosts := e.allowedHosts()
	var h http.Handler = dqweb.Handler(e.c, dqweb.Options{Prefix: e.prefix, ReadOnly: e.readOnly, Timeout: e.conn.timeout,
		Queues: e.queues, Title: e.title, Refresh: refresh,
		AllowedHosts: hosts, FormTimeout: min(10*time.Second, serverLimits.read)})
	if user != "" {
		// Failed logins are logged to stderr, rate-limited (see BasicAuthWith).
		log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		h = dqweb.BasicAuthWith(h, user, password, dqweb.AuthOptions{Logger: log})
	}
	mux := http.NewServeMux()
	mux.Handle(e.prefix, h)
	l, err := net.Listen("tcp", e.listen)
	if err != nil {
		return err
	}
	for _, w := range serveWarnings(l.Addr(), user != "", e.readOnly, len(e.allowHosts) > 0) {
		fmt.Fprintf(e.stderr, "dqctl serve: warning: %s\n", w)
	}
	mode := ""
	if e.readOnly {
		mode = " (read-only)"
	}
	e.printf("serving the dashboard of %s on http://%s%s%s\n", e.conn.where(), l.Addr(), e.prefix, mode)
	// The Host check wraps the whole server, so that a refused Host never
	// reaches basic auth (no password prompt on a rebound name) or the mux.
	return serveHTTP(e, l, dqweb.AllowHosts(mux, hosts...))
}

// serveWarnings says what serving on addr exposes: on loopback nothing;
// elsewhere, without auth, what anyone who can reach it can do, and with
// auth, that the password crosses the network in clear text (dqctl serve
// has no TLS).
func serveWarnings(addr net.Addr, auth, readOnly, named bool) []string {
	host, _, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	var w []string
	switch {
	case auth:
		w = append(w, "serving on "+addr.String()+" with -basic-auth but without TLS: the password crosses the network in clear text in every request; "+
			"serve on loopback behind a TLS reverse proxy (with -allow-host for its name), or only on a network you trust")
	case readOnly:
		w = append(w, "serving on "+addr.String()+" without -basic-auth: anyone who can reach it can read every queue and payload (-readonly: they cannot change the queues)")
	default:
		w = append(w, "serving on "+addr.String()+" without -basic-auth: anyone who can reach it can read every payload and change the queues")
	}
	if !named {
		w = append(w, "browsers must open it by IP address (or localhost): other host names are refused unless given with -allow-host")
	}
	return w
}
