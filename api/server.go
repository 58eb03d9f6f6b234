package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// NewServer returns an http.Server for h on addr that speaks HTTP/1.1 and
// HTTP/2 on one port: unencrypted HTTP/2 (h2c, for plain gRPC clients)
// without TLS, HTTP/2 over TLS when tlsCert and tlsKey name a certificate
// and key file. Both or neither must be set. Serve it with Serve.
func NewServer(addr string, h http.Handler, tlsCert, tlsKey string) (*http.Server, error) {
	srv := &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// A body trickled in slowly cannot hold a connection for long:
		// every route takes a small unary request.
		ReadTimeout:    2 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		Protocols:      new(http.Protocols),
	}
	srv.Protocols.SetHTTP1(true)
	switch {
	case tlsCert == "" && tlsKey == "":
		srv.Protocols.SetUnencryptedHTTP2(true)
	case tlsCert == "" || tlsKey == "":
		return nil, fmt.Errorf("tls: both a certificate and a key file are needed")
	default:
		cert, err := tls.LoadX509KeyPair(tlsCert, tlsKey)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		srv.Protocols.SetHTTP2(true)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return srv, nil
}

// Serve serves srv on ln, over TLS when NewServer configured it. Like
// http.Server.Serve it returns http.ErrServerClosed after Shutdown.
func Serve(srv *http.Server, ln net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(ln, "", "")
	}
	return srv.Serve(ln)
}

// CheckListen refuses to serve without authentication on an address other
// machines can reach: with no tokens configured addr must be a loopback
// address (127.0.0.0/8, ::1, localhost) unless allowUnauthenticated is set
// explicitly. An empty host (":7700") listens everywhere and is refused.
func CheckListen(addr string, tokensConfigured, allowUnauthenticated bool) error {
	if tokensConfigured || allowUnauthenticated {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return nil
	}
	return errors.New("listen " + addr + ": no auth tokens are configured, so the server binds to loopback only; configure auth.tokens or set auth.allow_unauthenticated: true")
}
