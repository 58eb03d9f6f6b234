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

	"github.com/ingestd/ingestd/internal/netaddr"
	"github.com/ingestd/ingestd/internal/private"
)

// EmbeddedOptions configures the in-process NATS server.
type EmbeddedOptions struct {
	// StoreDir is where JetStream keeps its files; required.
	StoreDir string
	// Listen is "host:port" for a TCP client listener. Empty (the default)
	// opens none, so the embedded server never collides with a NATS
	// already on the machine and nothing outside the process can reach it;
	// clients connect in-process. A bare port ("4222" or ":4222") listens
	// on 127.0.0.1 only. A listener needs credentials (Token, User and
	// Password, or NKeySeed): StartEmbedded refuses one without, whatever
	// the address, since anything that can publish a job could queue text
	// under a trusted installation.
	Listen string
	// Token, User with Password, or NKeySeed (a user NKey seed, "SU…"):
	// at most one. When set, every client authenticates, in-process ones
	// included (Connect does it with the same credentials).
	Token          string
	User, Password string
	NKeySeed       string
	// MaxPayload is the largest message the server accepts (default 8 MiB).
	MaxPayload int32
	// ServerName defaults to "ingestd-embedded".
	ServerName string
	Logger     *slog.Logger
}

// Embedded is an in-process NATS server with JetStream.
type Embedded struct {
	srv  *server.Server
	auth ConnectOptions // what in-process clients present
}

// ListenAddr normalises a listen address: a bare port ("4222" or
// ":4222") becomes 127.0.0.1:4222. It reports whether the address is
// loopback only (127.0.0.0/8, ::1 or localhost); 0.0.0.0, :: and every
// other host are not.
func ListenAddr(listen string) (addr string, loopback bool, err error) {
	return netaddr.ListenAddr(listen)
}

// StartEmbedded starts a NATS server with JetStream storing under
// o.StoreDir and waits until it accepts connections (at most 10s).
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	if o.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: a store directory is required")
	}
	auth := ConnectOptions{Token: o.Token, User: o.User, Password: o.Password, NKeySeed: o.NKeySeed}
	kinds, err := auth.credentialKinds()
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Listen != "" && kinds == 0 {
		return nil, fmt.Errorf("embedded nats: listen %s needs credentials (a token, a user and password, or an nkey): "+
			"anything that can reach an open listener can queue jobs for any installation", o.Listen)
	}
	if err := private.MkdirAll(o.StoreDir); err != nil {
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
		addr, _, err := ListenAddr(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		opts.Host, opts.Port = host, p
		if p == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	switch {
	case o.Token != "":
		opts.Authorization = o.Token
	case o.User != "":
		opts.Username, opts.Password = o.User, o.Password
	case o.NKeySeed != "":
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(o.NKeySeed)))
		if err != nil {
			return nil, fmt.Errorf("embedded nats: nkey: %w", err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("embedded nats: nkey: %w", err)
		}
		opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
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
	return &Embedded{srv: srv, auth: auth}, nil
}

// Connect opens an in-process client connection, with the server's
// credentials when it has any.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	auth, err := e.auth.authOptions()
	if err != nil {
		return nil, fmt.Errorf("connect embedded nats: %w", err)
	}
	nc, err := nats.Connect("", append(auth, nats.InProcessServer(e.srv), nats.Name(name))...)
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
// kept in the configuration. At most one of Creds, NKeySeed, Token and
// User/Password; TLS goes with any of them.
type ConnectOptions struct {
	Name string
	// Creds is a credentials file's content (a user JWT and its NKey seed)
	// or the path of such a file.
	Creds string
	// NKeySeed is a user NKey seed ("SU…").
	NKeySeed string
	Token    string
	// User and Password authenticate as a configured user.
	User, Password string
	// TLSCA, TLSCert and TLSKey are file paths; a CA alone verifies the
	// server, a certificate and key authenticate the client.
	TLSCA, TLSCert, TLSKey string
}

// credentialKinds counts the kinds of credential set; more than one, or a
// user without a password (or the reverse), is an error.
func (o ConnectOptions) credentialKinds() (int, error) {
	if (o.User == "") != (o.Password == "") {
		return 0, fmt.Errorf("a user and a password go together")
	}
	n := 0
	for _, set := range []bool{o.Creds != "", o.NKeySeed != "", o.Token != "", o.User != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return n, fmt.Errorf("use one kind of credential: creds, an nkey, a token, or a user and password")
	}
	return n, nil
}

// authOptions are the nats.go options that present the credentials.
func (o ConnectOptions) authOptions() ([]nats.Option, error) {
	if _, err := o.credentialKinds(); err != nil {
		return nil, err
	}
	var opts []nats.Option
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
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	return opts, nil
}

// Connect connects to the NATS servers at url (comma-separated for a
// cluster) and keeps reconnecting for ever: a restarted server or a
// leader change is a pause, not a failure. The first connection must
// succeed; a server that refuses the credentials fails it.
func Connect(url string, o ConnectOptions) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	auth, err := o.authOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, auth...)
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
