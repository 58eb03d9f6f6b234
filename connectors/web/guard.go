package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"

	"github.com/ingestd/ingestd"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies
// it; tests inject one that answers what they need (a public-looking name
// that resolves to 127.0.0.1).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides which URLs and network addresses the fetcher may reach. It
// is the SSRF defence: the scheme and any literal host are checked before a
// request, and every resolved address is checked again when the
// connection is made (DialContext, and a socket-level Control behind it), so
// a name that resolves to a public address at check time and a private one
// at connect time (DNS rebinding) gains nothing.
//
// The zero value refuses every non-public address and resolves with
// net.DefaultResolver.
type Guard struct {
	// AllowPrivate lifts the address rules (loopback, private, link-local,
	// ...). It is an installation's allow_private_networks. The scheme rule
	// (http and https only) holds regardless.
	AllowPrivate bool
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// ConnectTimeout bounds one TCP connect; 0 means 10s.
	ConnectTimeout time.Duration

	// dial, when set, replaces the network dial after every check has
	// passed. Tests use it to reach a local server at a public-looking
	// address; production never sets it.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// RefusedError is a URL or address the guard refused, or a URL off the
// installation's sites (see scope). Its message names the rule that fired
// and, for a redirect, the hop; it unwraps to an EINVALID *ingestd.Error
// so edges map it to a client error.
type RefusedError struct {
	Target string // the URL, host or address refused
	// Rule is the rule that fired: scheme, credentials, host, loopback,
	// private, link-local, ... (the guard); site, downgrade (the scope);
	// redirects (too many).
	Rule   string
	Reason string // a sentence for people, e.g. "127.0.0.1 is loopback (allow_private_networks is off)"
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

// Unwrap lets ingestd.ErrorCode report EINVALID with this message.
func (e *RefusedError) Unwrap() error {
	return &ingestd.Error{Code: ingestd.EINVALID, Message: e.Error()}
}

// IsRefused reports whether err is (or wraps) a guard refusal and returns it.
func IsRefused(err error) (*RefusedError, bool) {
	var re *RefusedError
	ok := errors.As(err, &re)
	return re, ok
}

const offNote = " (allow_private_networks is off)"

// CheckURL applies the rules that need no network: the scheme is http or
// https, the URL names a host, carries no credentials, and a host written
// as an IP address (in any form a resolver accepts: 2130706433, 0x7f.1,
// 0177.0.0.1, [::ffff:127.0.0.1]) is a public address. Host names are
// checked when they are resolved, at dial time.
func (g *Guard) CheckURL(u *url.URL) error {
	target := u.Redacted()
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return &RefusedError{Target: target, Rule: "scheme", Reason: fmt.Sprintf("%q has no scheme; only http and https are fetched", target)}
	default:
		return &RefusedError{Target: target, Rule: "scheme", Reason: fmt.Sprintf("%s: scheme %q is not http or https", target, u.Scheme)}
	}
	if u.User != nil {
		return &RefusedError{Target: target, Rule: "credentials", Reason: fmt.Sprintf("%s carries credentials in the URL", target)}
	}
	host := u.Hostname()
	if host == "" {
		return &RefusedError{Target: target, Rule: "host", Reason: fmt.Sprintf("%s names no host", target)}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return &RefusedError{Target: target, Rule: "host", Reason: fmt.Sprintf("%s: port %q is not a port", target, p)}
		}
	}
	addr, isIP, err := ParseHost(host)
	if err != nil {
		return &RefusedError{Target: target, Rule: "host", Reason: fmt.Sprintf("%s: %v", target, err)}
	}
	if isIP {
		return g.checkAddr(host, addr)
	}
	return nil
}

// CheckAddr reports whether the guard lets a connection reach addr.
func (g *Guard) CheckAddr(addr netip.Addr) error {
	return g.checkAddr("", addr)
}

// checkAddr checks addr; host, when set, is how the user wrote it (a
// name or an odd literal) and is named in the refusal.
func (g *Guard) checkAddr(host string, addr netip.Addr) error {
	if g.AllowPrivate {
		return nil
	}
	rule, what := Classify(addr)
	if rule == "" {
		return nil
	}
	subject := addr.String()
	if host != "" && !strings.EqualFold(strings.Trim(host, "[]"), subject) {
		if _, isIP, _ := ParseHost(host); isIP {
			subject = fmt.Sprintf("%s (the address %s)", host, addr)
		} else {
			subject = fmt.Sprintf("%s resolves to %s, which", host, addr)
		}
	}
	return &RefusedError{Target: addr.String(), Rule: rule, Reason: subject + " is " + what + offNote}
}

// DialContext resolves addr's host, refuses the connection unless every
// address it resolves to passes the guard, and connects to a checked
// address (never resolving again). It is the http.Transport's dialer.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	ips, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	dial := g.dial
	if dial == nil {
		timeout := g.ConnectTimeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		d := &net.Dialer{Timeout: timeout, Control: g.control}
		dial = d.DialContext
	}
	var firstErr error
	for _, ip := range ips {
		conn, err := dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// resolve returns the addresses host stands for, all of them checked: one
// refused address refuses the host, whatever the others are.
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	addr, isIP, err := ParseHost(host)
	if err != nil {
		return nil, &RefusedError{Target: host, Rule: "host", Reason: err.Error()}
	}
	if isIP {
		if err := g.checkAddr(host, addr); err != nil {
			return nil, err
		}
		return []netip.Addr{addr.Unmap()}, nil
	}
	var r Resolver = net.DefaultResolver
	if g.Resolver != nil {
		r = g.Resolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		ip = ip.Unmap()
		if err := g.checkAddr(host, ip); err != nil {
			return nil, err
		}
		out = append(out, ip)
	}
	return out, nil
}

// control is the last check, on the address the socket is about to
// connect to, whatever code path chose it.
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Target: address, Rule: "host", Reason: fmt.Sprintf("cannot check dial address %q", address)}
	}
	return g.checkAddr("", ap.Addr())
}

// rangeRule is one refused address range.
type rangeRule struct {
	prefix netip.Prefix
	rule   string
	what   string
}

func rr(cidr, rule, what string) rangeRule {
	return rangeRule{prefix: netip.MustParsePrefix(cidr), rule: rule, what: what}
}

// refused lists the ranges a fetch may not reach. Order matters only where
// ranges nest (broadcast before reserved 240/4, the metadata address before
// link-local).
var refused = []rangeRule{
	rr("0.0.0.0/8", "unspecified", `unspecified ("this network", 0.0.0.0/8)`),
	rr("10.0.0.0/8", "private", "private (RFC 1918, 10.0.0.0/8)"),
	rr("100.64.0.0/10", "cgnat", "shared address space (CGNAT, 100.64.0.0/10)"),
	rr("127.0.0.0/8", "loopback", "loopback"),
	rr("169.254.169.254/32", "link-local", "link-local (the cloud metadata address, 169.254.0.0/16)"),
	rr("169.254.0.0/16", "link-local", "link-local (169.254.0.0/16)"),
	rr("172.16.0.0/12", "private", "private (RFC 1918, 172.16.0.0/12)"),
	rr("192.0.0.0/24", "reserved", "reserved (IETF protocol assignments, 192.0.0.0/24)"),
	rr("192.0.2.0/24", "documentation", "documentation (192.0.2.0/24)"),
	rr("192.88.99.0/24", "reserved", "reserved (6to4 relay anycast, 192.88.99.0/24)"),
	rr("192.168.0.0/16", "private", "private (RFC 1918, 192.168.0.0/16)"),
	rr("198.18.0.0/15", "reserved", "reserved (benchmarking, 198.18.0.0/15)"),
	rr("198.51.100.0/24", "documentation", "documentation (198.51.100.0/24)"),
	rr("203.0.113.0/24", "documentation", "documentation (203.0.113.0/24)"),
	rr("224.0.0.0/4", "multicast", "multicast (224.0.0.0/4)"),
	rr("255.255.255.255/32", "broadcast", "broadcast"),
	rr("240.0.0.0/4", "reserved", "reserved (240.0.0.0/4)"),

	rr("::/128", "unspecified", "unspecified (::)"),
	rr("::1/128", "loopback", "loopback"),
	rr("100::/64", "reserved", "reserved (discard-only, 100::/64)"),
	rr("64:ff9b:1::/48", "private", "private (local-use NAT64, 64:ff9b:1::/48)"),
	rr("2001:2::/48", "reserved", "reserved (benchmarking, 2001:2::/48)"),
	rr("2001:10::/28", "reserved", "reserved (ORCHID, 2001:10::/28)"),
	rr("2001:20::/28", "reserved", "reserved (ORCHIDv2, 2001:20::/28)"),
	rr("2001:db8::/32", "documentation", "documentation (2001:db8::/32)"),
	rr("fc00::/7", "private", "private (IPv6 unique local, fc00::/7)"),
	rr("fe80::/10", "link-local", "link-local (fe80::/10)"),
	rr("fec0::/10", "private", "private (IPv6 site-local, fec0::/10)"),
	rr("ff00::/8", "multicast", "multicast (ff00::/8)"),
}

var (
	mapped4    = netip.MustParsePrefix("::ffff:0:0/96")
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT
	compat4    = netip.MustParsePrefix("::/96")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
	global6    = netip.MustParsePrefix("2000::/3")
)

// Classify says why a fetch may not reach addr: a rule name (loopback,
// private, link-local, cgnat, multicast, unspecified, broadcast,
// documentation, reserved) and a description, or "" for a public address.
// IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible,
// SIIT, NAT64, 6to4, Teredo) are unwrapped and the IPv4 address is checked
// too; IPv6 outside global unicast 2000::/3 is reserved.
func Classify(addr netip.Addr) (rule, what string) {
	if !addr.IsValid() {
		return "host", "not an IP address"
	}
	if addr.Zone() != "" {
		return "link-local", "an address with a zone (scoped to one interface)"
	}
	if addr.Is6() {
		b := addr.As16()
		var embedded []netip.Addr
		var form string
		switch {
		case mapped4.Contains(addr):
			embedded, form = []netip.Addr{addr.Unmap()}, "the IPv4-mapped form"
		case translated.Contains(addr):
			embedded, form = []netip.Addr{v4(b[12:16])}, "the IPv4-translated form"
		case compat4.Contains(addr) && addr != netip.IPv6Unspecified() && addr != netip.IPv6Loopback():
			embedded, form = []netip.Addr{v4(b[12:16])}, "the IPv4-compatible form"
		case nat64.Contains(addr):
			embedded, form = []netip.Addr{v4(b[12:16])}, "the NAT64 form"
		case sixToFour.Contains(addr):
			embedded, form = []netip.Addr{v4(b[2:6])}, "the 6to4 form"
		case teredo.Contains(addr):
			client := [4]byte{b[12] ^ 0xff, b[13] ^ 0xff, b[14] ^ 0xff, b[15] ^ 0xff}
			embedded, form = []netip.Addr{v4(b[4:8]), netip.AddrFrom4(client)}, "the Teredo form"
		}
		for _, e := range embedded {
			if r, w := Classify(e); r != "" {
				return r, fmt.Sprintf("%s of %s, which is %s", form, e, w)
			}
		}
		if embedded != nil {
			return "", ""
		}
	}
	for _, r := range refused {
		if r.prefix.Contains(addr) {
			return r.rule, r.what
		}
	}
	if addr.Is6() && !global6.Contains(addr) {
		return "reserved", "reserved (IPv6 outside global unicast 2000::/3)"
	}
	return "", ""
}

func v4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte{b[0], b[1], b[2], b[3]}) }

// ParseHost reads a URL host (without port) the way a resolver would. It
// returns the address and true when host is an IP literal in any form:
// dotted decimal, bracketed or bare IPv6, and the forms inet_aton and URL
// parsers accept — a 32-bit decimal (2130706433), octal (0177.0.0.1), hex
// (0x7f.1), and short forms (127.1, where the last part fills the
// remaining bytes). Full-width and other compatibility characters are
// mapped first (IDNA), as HTTP clients do. It returns false for a host
// name, and an error for a host that is neither: one whose last label is
// numeric but that is not a valid IPv4 address, one with an IPv6 zone, or
// an empty one.
func ParseHost(host string) (netip.Addr, bool, error) {
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return netip.Addr{}, false, fmt.Errorf("host %q: unclosed bracket", host)
		}
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() {
			return netip.Addr{}, false, fmt.Errorf("host %q is not an IPv6 address", host)
		}
		if a.Zone() != "" {
			return netip.Addr{}, false, fmt.Errorf("host %q: IPv6 zones are not accepted", host)
		}
		return a, true, nil
	}
	h := host
	if !isASCII(h) {
		mapped, err := idna.Lookup.ToASCII(h)
		if err != nil {
			// The HTTP client would refuse it too; say so here.
			return netip.Addr{}, false, fmt.Errorf("host %q is not a valid host name: %v", host, err)
		}
		h = mapped
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" {
		return netip.Addr{}, false, fmt.Errorf("empty host")
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || a.Zone() != "" {
			return netip.Addr{}, false, fmt.Errorf("host %q is not an IP address or a host name", host)
		}
		return a, true, nil
	}
	labels := strings.Split(h, ".")
	if !numericLabel(labels[len(labels)-1]) {
		return netip.Addr{}, false, nil
	}
	a, err := parseIPv4(labels)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("host %q: %v", host, err)
	}
	return a, true, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// numericLabel reports whether a label reads as a number to a URL parser
// (WHATWG "ends in a number"): all decimal digits, or 0x and hex digits.
func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	if strings.HasPrefix(s, "0x") {
		for _, c := range s[2:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isHex(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
}

// parseIPv4 is inet_aton over 1 to 4 parts, each decimal, octal (leading
// 0) or hex (0x); the last part fills the bytes the others leave.
func parseIPv4(parts []string) (netip.Addr, error) {
	if len(parts) > 4 {
		return netip.Addr{}, fmt.Errorf("numeric host has %d parts, more than 4", len(parts))
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := parseIPv4Part(p)
		if err != nil {
			return netip.Addr{}, err
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, fmt.Errorf("numeric host part %q is over 255", parts[i])
		}
		n = n<<8 | v
	}
	last := vals[len(vals)-1]
	width := uint(8 * (5 - len(vals)))
	if last >= 1<<width {
		return netip.Addr{}, fmt.Errorf("numeric host part %q is too large", parts[len(parts)-1])
	}
	n = n<<width | last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), nil
}

func parseIPv4Part(p string) (uint64, error) {
	if p == "" {
		return 0, fmt.Errorf("numeric host has an empty part")
	}
	base, digits := 10, p
	switch {
	case strings.HasPrefix(p, "0x"):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, nil // "0x" is zero to a URL parser
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	if len(digits) > 12 {
		return 0, fmt.Errorf("numeric host part %q is too large", p)
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, fmt.Errorf("numeric host part %q is not a number", p)
	}
	return v, nil
}
