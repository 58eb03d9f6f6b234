package api

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/netip"
	"strings"

	"connectrpc.com/connect"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/netaddr"
)

// guard is the one gate every request passes before it is routed, whatever
// its route: the REST routes, Connect, gRPC and gRPC-Web, the probes,
// webhooks, a path that matches nothing, and any route added later. It
// decides where a request may come from; protect then decides who may make
// it. Three rules, in order:
//
//  1. Host. When no bearer tokens are configured, or when listen_hosts is
//     set, the Host (HTTP/2 :authority) must be a loopback host (see
//     loopbackHost) or a name in listen_hosts; anything else gets 421. A
//     DNS-rebinding page talks to the server as its own origin, so only
//     its Host gives it away. With tokens and no listen_hosts every Host is
//     served: a rebinding page has no token, and a server behind a proxy
//     or a service name keeps working.
//  2. Cross-origin. A request whose method is not GET, HEAD or OPTIONS is
//     refused with 403 when a browser marks it cross-origin
//     (http.CrossOriginProtection: Sec-Fetch-Site other than same-origin
//     or none, or an Origin that does not match the Host, "null"
//     included). Clients that send neither header (curl, the CLI, gRPC,
//     SDKs) pass.
//  3. Content-Type. Such a request must say application/json (Connect,
//     gRPC and gRPC-Web routes: their own media types), or it gets 415,
//     even with an empty body: text/plain, multipart/form-data and
//     application/x-www-form-urlencoded, and no Content-Type at all, are
//     what a browser sends cross-origin without asking first.
//
// Webhooks skip rules 2 and 3: servers send them, signed, in the media
// type their sender chooses; the webhook handler verifies the signature.
// So does a known path asked with a method it does not take: it gets 405
// with the methods it does (Allow), whatever its Content-Type.
//
// /mcp (MCP's Streamable HTTP) is held to more, as the MCP specification
// asks of every server: rule 2 applies to every method there, GET (an
// event stream) and DELETE (the end of a session) included, so a browser
// page of another origin gets 403 whatever it sends; rule 3 applies to
// its POSTs (MCP messages are application/json). A DELETE carries no
// body and needs no Content-Type: a browser never sends one cross-origin
// without a preflight, which ingestd never answers.
type guard struct {
	next *http.ServeMux
	// checkHost is rule 1's switch; hosts the listed names, normalised.
	checkHost bool
	tokens    bool
	hosts     map[string]bool
	cop       *http.CrossOriginProtection
	// rpc holds the mux patterns connect-go serves; webhook the webhook
	// handler's pattern.
	rpc     map[string]bool
	webhook string
	// mcp is the MCP endpoint's pattern.
	mcp     string
	errConn *connect.ErrorWriter
}

// refusal is a request the guard turns away.
type refusal struct {
	status  int
	code    string       // the REST error code
	connect connect.Code // the code on Connect, gRPC and gRPC-Web; 0 answers in REST JSON on every route
	msg     string
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := g.next.Handler(r)
	if f := g.check(r, pattern); f != nil {
		if f.connect != 0 && g.rpc[pattern] && g.errConn.IsSupported(r) {
			_ = g.errConn.Write(w, r, connect.NewError(f.connect, errors.New(f.msg)))
			return
		}
		writeJSON(w, f.status, errorBody{Error: errorDetail{Code: f.code, Message: f.msg}})
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *guard) check(r *http.Request, pattern string) *refusal {
	if g.checkHost && !g.hostAllowed(r.Host) {
		msg := fmt.Sprintf("host %.100q is not served: without auth.tokens this server answers only loopback hosts (localhost, 127.0.0.0/8, [::1]) and the names in listen_hosts", r.Host)
		if g.tokens {
			msg = fmt.Sprintf("host %.100q is not served: it is not a loopback host (localhost, 127.0.0.0/8, [::1]) and not in listen_hosts", r.Host)
		}
		return &refusal{status: http.StatusMisdirectedRequest, code: "misdirected_request", connect: connect.CodePermissionDenied, msg: msg}
	}
	isMCP := pattern == g.mcp && g.mcp != ""
	safe := false
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if !isMCP {
			return nil
		}
		safe = true
	}
	if pattern == g.webhook && g.webhook != "" {
		return nil
	}
	if pattern == "/" && len(allowedMethods(g.next, r)) > 0 {
		// A known path with a method it does not take is answered 405
		// with Allow, and reaches no handler that reads or changes data.
		return nil
	}
	if err := g.crossOrigin(r, safe); err != nil {
		return &refusal{status: http.StatusForbidden, code: ingestd.EFORBIDDEN, connect: connect.CodePermissionDenied,
			msg: "cross-origin request refused: a browser marked it as coming from another site (Sec-Fetch-Site, or an Origin that does not match the Host); ingestd answers no cross-origin browser request that changes or reads data"}
	}
	if safe || isMCP && r.Method == http.MethodDelete {
		return nil
	}
	if !g.contentTypeAllowed(r, g.rpc[pattern]) {
		want := "Content-Type: application/json"
		if g.rpc[pattern] {
			want = "a Connect, gRPC or gRPC-Web Content-Type (application/json, application/proto, application/grpc, application/grpc-web, ...)"
		}
		// Answered in REST JSON on RPC routes too, as connect-go answers
		// a media type it does not speak: 415.
		return &refusal{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
			msg: fmt.Sprintf("%s %s needs %s, even without a body; got %.100q", r.Method, r.URL.Path, want, r.Header.Get("Content-Type"))}
	}
	return nil
}

// crossOrigin is rule 2. For a safe method (GET, HEAD, OPTIONS, which
// only /mcp holds to the rule) it asks http.CrossOriginProtection as if
// the request were a POST: that type lets safe methods through
// unexamined.
func (g *guard) crossOrigin(r *http.Request, safe bool) error {
	if !safe {
		return g.cop.Check(r)
	}
	asPost := *r
	asPost.Method = http.MethodPost
	return g.cop.Check(&asPost)
}

// contentTypeAllowed reports whether the request has exactly one
// Content-Type and it is application/json (parameters such as charset
// allowed), or, on an RPC route, a media type of Connect, gRPC or
// gRPC-Web. None of them is one a browser may send cross-origin without a
// preflight, which ingestd never answers.
func (g *guard) contentTypeAllowed(r *http.Request, rpc bool) bool {
	vals := r.Header.Values("Content-Type")
	if len(vals) != 1 {
		return false
	}
	mt, _, err := mime.ParseMediaType(vals[0])
	if err != nil {
		return false
	}
	if mt == "application/json" {
		return true
	}
	if !rpc {
		return false
	}
	switch {
	case mt == "application/proto",
		strings.HasPrefix(mt, "application/connect+"),
		mt == "application/grpc", strings.HasPrefix(mt, "application/grpc+"),
		mt == "application/grpc-web", strings.HasPrefix(mt, "application/grpc-web+"):
		return true
	}
	return false
}

// hostAllowed reports whether the Host of a request (with or without a
// port) is a loopback host or a listed name.
func (g *guard) hostAllowed(hostport string) bool {
	host, ok := splitHostPort(hostport)
	if !ok {
		return false
	}
	name, err := NormalizeHost(host)
	if err != nil {
		return false
	}
	return loopbackHost(name) || g.hosts[name]
}

// splitHostPort splits a Host header value into its host and an optional
// port, which must be digits: "localhost", "localhost:7700", "[::1]:7700",
// "[::1]". A bare IPv6 address without brackets is not a Host.
func splitHostPort(hostport string) (string, bool) {
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", false
		}
		host, port = hostport[:end+1], hostport[end+1:]
		if port != "" {
			if port[0] != ':' {
				return "", false
			}
			port = port[1:]
		}
	} else if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i+1:]
		if strings.Contains(host, ":") {
			return "", false
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return host, host != ""
}

// loopbackHost reports whether a normalised host is loopback: "localhost",
// an address in 127.0.0.0/8, or ::1 (IPv4-mapped forms included). Names
// under localhost ("app.localhost") are not: not every resolver keeps them
// on the machine, so they must be listed like any other name.
func loopbackHost(name string) bool {
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Unmap().IsLoopback()
}

// NormalizeHost checks one listen_hosts entry (or the host part of a Host
// header) and returns it in the form the guard compares: a DNS name in
// lower case without its trailing dot, or an IP address in canonical form
// (IPv6 without brackets). It refuses a port, a scheme, a path, a
// wildcard, an IPv6 zone, the unspecified address and anything that is
// not a host name, naming what was wrong. Odd IPv4 forms ("127.1",
// "2130706433") are not addresses here: browsers never send them.
func NormalizeHost(host string) (string, error) { return netaddr.NormalizeHost(host) }
