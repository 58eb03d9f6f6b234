package jobs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// EmbeddedOptions configures the in-process NATS server.
type EmbeddedOptions struct {
	// StoreDir is where JetStream keeps its files; required.
	StoreDir string
	// Listen is "host:port" for a TCP client listener. Empty (the default)
	// opens none, so the embedded server never collides with a NATS
	// already on the machine; clients connect in-process.
	Listen string
	// MaxPayload is the largest message the server accepts (default 8 MiB).
	MaxPayload int32
	// ServerName defaults to "ingestd-embedded".
	ServerName string
	Logger     *slog.Logger
}

// Embedded is an in-process NATS server with JetStream.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a NATS server with JetStream storing under
// o.StoreDir and waits until it accepts connections (at most 10s).
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	if o.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: a store directory is required")
	}
	if err := os.MkdirAll(o.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	opts := &server.Options{
		ServerName: o.ServerName,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		MaxPayload: o.MaxPayload,
		NoSigs:     true,
		DontListen: o.Listen == "",
	}
	if opts.ServerName == "" {
		opts.ServerName = "ingestd-embedded"
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = 8 << 20
	}
	if o.Listen != "" {
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: listen %q: %w", o.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: listen %q: bad port", o.Listen)
		}
		opts.Host, opts.Port = host, p
		if p == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv.SetLogger(serverLogger{log.With("component", "nats")}, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s")
	}
	return &Embedded{srv: srv}, nil
}

// Connect opens an in-process client connection.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	nc, err := nats.Connect("", nats.InProcessServer(e.srv), nats.Name(name))
	if err != nil {
		return nil, fmt.Errorf("connect embedded nats: %w", err)
	}
	return nc, nil
}

// ClientURL is the TCP URL when Listen was set, "" otherwise.
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// Shutdown stops the server and waits for it; JetStream data stays on disk.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// ConnectOptions authenticate and secure a connection to an external NATS.
// Secrets are passed as values (package main reads them from the
// environment variables the configuration names), never as file content
// kept in the configuration.
type ConnectOptions struct {
	Name string
	// Creds is a credentials file's content (a user JWT and its NKey seed)
	// or the path of such a file.
	Creds string
	// NKeySeed is a user NKey seed ("SU…").
	NKeySeed string
	Token    string
	// TLSCA, TLSCert and TLSKey are file paths; a CA alone verifies the
	// server, a certificate and key authenticate the client.
	TLSCA, TLSCert, TLSKey string
}

// Connect connects to the NATS servers at url (comma-separated for a
// cluster) and keeps reconnecting for ever: a restarted server or a
// leader change is a pause, not a failure. The first connection must
// succeed.
func Connect(url string, o ConnectOptions) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	switch {
	case o.Creds == "":
	case strings.Contains(o.Creds, "-----BEGIN"):
		userJWT, err := jwt.ParseDecoratedJWT([]byte(o.Creds))
		if err != nil {
			return nil, fmt.Errorf("nats creds: %w", err)
		}
		kp, err := nkeys.ParseDecoratedNKey([]byte(o.Creds))
		if err != nil {
			return nil, fmt.Errorf("nats creds: %w", err)
		}
		opts = append(opts, nats.UserJWT(
			func() (string, error) { return userJWT, nil },
			func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) },
		))
	default:
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKeySeed != "" {
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(o.NKeySeed)))
		if err != nil {
			return nil, fmt.Errorf("nats nkey: %w", err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("nats nkey: %w", err)
		}
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCA != "" || o.TLSCert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.TLSCA != "" {
			pem, err := os.ReadFile(o.TLSCA)
			if err != nil {
				return nil, fmt.Errorf("nats tls ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("nats tls ca %s: no certificate found", o.TLSCA)
			}
			cfg.RootCAs = pool
		}
		if o.TLSCert != "" {
			cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
			if err != nil {
				return nil, fmt.Errorf("nats tls cert: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, nats.Secure(cfg))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect nats %s: %w", redactURL(url), err)
	}
	return nc, nil
}

// redactURL drops user information from a URL list before it is logged.
func redactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if scheme := strings.Index(p, "://"); scheme >= 0 && scheme < at {
				parts[i] = p[:scheme+3] + "***" + p[at:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// serverLogger adapts slog to the NATS server's logger.
type serverLogger struct{ l *slog.Logger }

func (s serverLogger) Noticef(f string, v ...any) { s.l.Debug(fmt.Sprintf(f, v...)) }
func (s serverLogger) Warnf(f string, v ...any)   { s.l.Warn(fmt.Sprintf(f, v...)) }
func (s serverLogger) Fatalf(f string, v ...any)  { s.l.Error(fmt.Sprintf(f, v...)) }
func (s serverLogger) Errorf(f string, v ...any)  { s.l.Error(fmt.Sprintf(f, v...)) }
func (s serverLogger) Debugf(f string, v ...any)  { s.l.Debug(fmt.Sprintf(f, v...)) }
func (s serverLogger) Tracef(f string, v ...any)  {}
