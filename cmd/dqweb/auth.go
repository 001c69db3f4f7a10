package dqweb

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// BasicAuth wraps h so that it serves only requests that carry user and
// password by HTTP basic authentication, answering 401 to the rest, with
// the defaults of AuthOptions. The password travels in every request:
// serve it over TLS, or on loopback.
func BasicAuth(h http.Handler, user, password string) http.Handler {
	return BasicAuthWith(h, user, password, AuthOptions{})
}

// AuthOptions tunes BasicAuthWith. The zero value is the default.
type AuthOptions struct {
	// MaxFailures is how many wrong user:password pairs one client may
	// send in Window before it is refused; default 10. Requests without
	// credentials (a browser's first request, before it asks) do not
	// count.
	MaxFailures int
	// Window is the span failures are counted over, and how long a client
	// that reached MaxFailures is refused, from its first failure; default
	// 1 minute.
	Window time.Duration
	// Logger receives failed logins; default slog.Default(). At most two
	// lines per client per Window (its first failure, and when it is
	// refused) and 30 lines a minute in all, then a count of the lines
	// left out.
	Logger *slog.Logger
}

// BasicAuthWith is BasicAuth with rate limiting and logging tuned by opt.
//
// Credentials are compared in constant time (as SHA-256 digests, so
// neither their length nor their content leaks through timing). A client
// is the request's remote IP address (its /64 for IPv6), so behind a
// reverse proxy every client counts as the proxy: an attacker then locks
// everyone out for Window, not in. A client that sent MaxFailures wrong
// pairs within Window is answered 429 Too Many Requests with Retry-After,
// without its credentials being checked, until Window has passed since its
// first failure; a correct pair before that clears its count. At most
// 10,000 clients are tracked; beyond, new clients share one count.
func BasicAuthWith(h http.Handler, user, password string, opt AuthOptions) http.Handler {
	if opt.MaxFailures <= 0 {
		opt.MaxFailures = 10
	}
	if opt.Window <= 0 {
		opt.Window = time.Minute
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	wantU, wantP := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	lim := &authLimiter{opt: opt, clients: map[netip.Prefix]*failures{}, now: time.Now}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := clientOf(r)
		if wait := lim.blocked(client); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			http.Error(w, "too many failed logins from your address; try again later", http.StatusTooManyRequests)
			return
		}
		u, p, ok := r.BasicAuth()
		gotU, gotP := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
		// Compare hashes in constant time: neither length nor content leaks.
		if !ok || subtle.ConstantTimeCompare(gotU[:], wantU[:])&subtle.ConstantTimeCompare(gotP[:], wantP[:]) != 1 {
			if ok {
				lim.fail(client, r)
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="dqweb", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		lim.succeed(client)
		h.ServeHTTP(w, r)
	})
}

// clientOf is the address failures are counted by: the remote IP, or its
// /64 for IPv6 (one host often has a whole /64).
func clientOf(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{} // unknown: all such requests share one count
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

const maxAuthClients = 10_000

// failures is one client's failed logins in its current window.
type failures struct {
	start  time.Time // first failure of the window
	n      int
	logged bool // its first failure was logged
}

// authLimiter counts failures per client. Safe for concurrent use.
type authLimiter struct {
	opt AuthOptions
	now func() time.Time

	mu      sync.Mutex
	clients map[netip.Prefix]*failures // guarded by mu
	// guarded by mu: the log budget of the current minute
	logStart   time.Time
	logLines   int
	logDropped int
}

// overflow is the shared count of clients beyond maxAuthClients.
var overflow = netip.PrefixFrom(netip.IPv6Unspecified(), 1)

// blocked returns how long client is still refused, or 0.
func (l *authLimiter) blocked(client netip.Prefix) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[client]
	if f == nil {
		f = l.clients[overflow]
		if f == nil || len(l.clients) < maxAuthClients {
			return 0
		}
	}
	left := f.start.Add(l.opt.Window).Sub(l.now())
	if f.n < l.opt.MaxFailures || left <= 0 {
		return 0
	}
	return left
}

func (l *authLimiter) succeed(client netip.Prefix) {
	l.mu.Lock()
	delete(l.clients, client)
	l.mu.Unlock()
}

func (l *authLimiter) fail(client netip.Prefix, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.clients[client]
	if f == nil {
		if len(l.clients) >= maxAuthClients {
			for k, v := range l.clients {
				if now.Sub(v.start) >= l.opt.Window {
					delete(l.clients, k)
				}
			}
		}
		if len(l.clients) >= maxAuthClients {
			client = overflow
			f = l.clients[overflow]
		}
		if f == nil {
			f = &failures{}
			l.clients[client] = f
		}
	}
	if now.Sub(f.start) >= l.opt.Window {
		*f = failures{start: now}
	}
	f.n++
	switch {
	case !f.logged:
		f.logged = true
		l.log(now, "dqweb: failed basic auth", "client", client.String(), "remote", r.RemoteAddr, "path", shown(r.URL.Path))
	case f.n == l.opt.MaxFailures:
		l.log(now, "dqweb: refusing a client after failed basic auth", "client", client.String(),
			"failures", f.n, "for", f.start.Add(l.opt.Window).Sub(now).Round(time.Second).String())
	}
}

// log logs msg within the budget of 30 lines a minute.
func (l *authLimiter) log(now time.Time, msg string, args ...any) {
	if now.Sub(l.logStart) >= time.Minute {
		if l.logDropped > 0 {
			l.opt.Logger.Warn("dqweb: failed basic auth lines left out", "lines", l.logDropped, "since", l.logStart.UTC().Format(time.RFC3339))
		}
		l.logStart, l.logLines, l.logDropped = now, 0, 0
	}
	if l.logLines >= 30 {
		l.logDropped++
		return
	}
	l.logLines++
	l.opt.Logger.Warn(msg, args...)
}
