// Package netaddr is the one reading of the addresses a configuration
// writes: a listen address (host:port, or a bare port), the address a
// client dials to reach it and whether something answers there, and a
// host name the API's guard serves. It imports the standard library
// only.
package netaddr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ListenAddr normalises a listen address: a bare port ("4222" or
// ":4222") becomes 127.0.0.1:4222. It reports whether the address is
// loopback only (127.0.0.0/8, ::1 or localhost); 0.0.0.0, :: and every
// other host are not.
func ListenAddr(listen string) (addr string, loopback bool, err error) {
	if listen != "" && strings.Trim(listen, "0123456789") == "" {
		listen = ":" + listen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", false, fmt.Errorf("listen %q: want host:port or a port", listen)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", false, fmt.Errorf("listen %q: bad port %q", listen, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	loopback = strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback())
	return net.JoinHostPort(host, port), loopback, nil
}

// CheckPort refuses an address that is not host:port with a port of
// 0..65535 (0: any free port).
func CheckPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (like 127.0.0.1:7700)", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q of %s is not a number from 0 to 65535", port, addr)
	}
	return nil
}

// Dial is the address a client dials to reach a listener on listen: a
// wildcard host (0.0.0.0, ::, none) is dialled on loopback.
func Dial(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "0.0.0.0", "":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// Listening reports whether something accepts connections on listen
// already (dialled as Dial says, for at most 300ms): a server would be
// refused the port. It binds nothing.
func Listening(listen string) bool {
	c, err := net.DialTimeout("tcp", Dial(listen), 300*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// NormalizeHost checks one listen_hosts entry (or the host part of a Host
// header) and returns it in the form the guard compares: a DNS name in
// lower case without its trailing dot, or an IP address in canonical form
// (IPv6 without brackets). It refuses a port, a scheme, a path, a
// wildcard, an IPv6 zone, the unspecified address and anything that is
// not a host name, naming what was wrong. Odd IPv4 forms ("127.1",
// "2130706433") are not addresses here: browsers never send them.
func NormalizeHost(host string) (string, error) {
	if host == "" {
		return "", errors.New("host is empty")
	}
	h := host
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
		ip, err := netip.ParseAddr(h)
		if err != nil || !ip.Is6() {
			return "", fmt.Errorf("host %q: brackets hold an IPv6 address", host)
		}
	}
	if strings.Contains(h, ":") {
		ip, err := netip.ParseAddr(h)
		if err != nil {
			return "", fmt.Errorf("host %q: a host name without port or scheme is expected (like ingestd.internal or 10.0.0.5)", host)
		}
		return checkAddr(host, ip)
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if ip, err := netip.ParseAddr(h); err == nil {
		return checkAddr(host, ip)
	}
	if len(h) > 253 {
		return "", fmt.Errorf("host %q is longer than 253 characters", host)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("host %q: each dot-separated label must be 1 to 63 characters", host)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("host %q: %q is not allowed in a host name (letters, digits, '-', '_' and dots; no port, scheme, path or wildcard)", host, c)
			}
		}
	}
	if allDigits(labels[len(labels)-1]) {
		return "", fmt.Errorf("host %q is neither an IP address nor a host name", host)
	}
	return h, nil
}

func checkAddr(host string, ip netip.Addr) (string, error) {
	if ip.Zone() != "" {
		return "", fmt.Errorf("host %q: an IPv6 zone is not part of a Host", host)
	}
	if ip.IsUnspecified() {
		return "", fmt.Errorf("host %q is the unspecified address, not a name clients use", host)
	}
	return ip.String(), nil
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
