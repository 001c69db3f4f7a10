package dqweb

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The Host check defeats DNS rebinding. A page on evil.example whose name
// the attacker then points at 127.0.0.1 is, for the browser, same-origin
// with the dashboard on that address: it could load pages, read the CSRF
// token and every payload, and post actions. The browser still sends the
// name it resolved (Host: evil.example:8080), so the handler serves only
// Hosts that cannot be rebound or that the operator named:
//
//   - IP literals, any address ("127.0.0.1:8080", "[::1]", "10.0.0.5"):
//     rebinding re-points a name, and a page can only be on an address's
//     origin if it was served from that address;
//   - "localhost" and names under ".localhost", which browsers resolve to
//     loopback themselves;
//   - the names the operator allowed: exact names ("ops.example.com"), or
//     "*.example.com" for every name under example.com. A trailing dot and
//     the port are ignored, case too.
//
// Every other request is answered 421 Misdirected Request with a line of
// text naming the Host and how to allow it, before anything else happens
// (no Redis read, no cookie).

// hostList is a parsed list of allowed names.
type hostList struct {
	exact    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
}

func newHostList(names []string) hostList {
	l := hostList{exact: map[string]bool{}}
	for _, n := range names {
		for _, n := range strings.Split(n, ",") {
			n = normHost(strings.TrimSpace(n))
			if suffix, ok := strings.CutPrefix(n, "*."); ok && suffix != "" {
				l.suffixes = append(l.suffixes, "."+suffix)
			} else if n != "" {
				l.exact[n] = true
			}
		}
	}
	return l
}

// normHost is the host of a Host header or allowed name: no port, no
// brackets, no trailing dot, lower case.
func normHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// allows reports whether a request with Host header host is served.
func (l hostList) allows(host string) bool {
	h := normHost(host)
	if h == "" {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || l.exact[h] {
		return true
	}
	for _, s := range l.suffixes {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// AllowHosts wraps h so that it serves only requests whose Host header is
// an IP literal, localhost (or a name under .localhost) or one of hosts
// (exact names, or "*.example.com"; entries may be comma-separated), and
// answers 421 to the rest, without calling h. Handler applies the same
// check with Options.AllowedHosts; AllowHosts is for wrapping more of a
// server, such as BasicAuth in front of the dashboard, so that a refused
// Host never reaches it. The refusal's text tells how to allow the name
// as the dashboard's is: with dqctl serve -allow-host, or
// Options.AllowedHosts.
func AllowHosts(h http.Handler, hosts ...string) http.Handler {
	return AllowHostsWith(h, dashboardAllow, hosts...)
}

// AllowHostsWith is AllowHosts whose refusal tells how to allow a name by
// how(name), as in "dqctl serve-metrics -allow-host metrics.example"
// (name is a placeholder when the Host cannot be pasted safely).
func AllowHostsWith(h http.Handler, how func(name string) string, hosts ...string) http.Handler {
	l := newHostList(hosts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.allows(r.Host) {
			refuseHost(w, r, how)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// dashboardAllow is how the dashboard's refusal says to allow a name.
func dashboardAllow(name string) string {
	return "dqctl serve -allow-host " + name + " (dqweb.Options.AllowedHosts in a program)"
}

func refuseHost(w http.ResponseWriter, r *http.Request, how func(name string) string) {
	host := normHost(r.Host)
	if len(host) > 100 {
		host = host[:100] + "..."
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusMisdirectedRequest)
	fmt.Fprintf(w, "dqweb: host %q is not allowed (a protection against DNS rebinding).\n"+
		"Open it by IP address or localhost, or allow this name: %s.\n", host, how(flagValue(host)))
}

// flagValue is host as it may follow -allow-host on a command line, or a
// placeholder if it could not be pasted safely.
func flagValue(host string) string {
	for _, r := range host {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return "NAME"
		}
	}
	if host == "" {
		return "NAME"
	}
	return host
}
