package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd/jobs"
)

// validateNATS checks the nats block. Anything that can publish on the job
// subjects can queue text under any installation, trusted ones included,
// so the rules are:
//
//   - without url or listen the embedded server opens no port: only this
//     process can publish, credentials and job_key_env are optional;
//   - listen (a bare port means 127.0.0.1) needs credentials whatever the
//     address, and refuses an address beyond loopback without them;
//   - url or listen needs job_key_env: with a port open, holding the NATS
//     credentials must not be enough to queue a job a worker believes.
//
// Every error names the file and the line of the offending key.
func (c *Config) validateNATS(doc *yaml.Node) error {
	n := &c.NATS
	n.lines = map[string]int{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "nats" {
			continue
		}
		n.line = doc.Content[i].Line
		if v := doc.Content[i+1]; v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				n.lines[v.Content[j].Value] = v.Content[j].Line
			}
		}
	}
	fail := func(key, format string, args ...any) error {
		return &configError{path: c.path, line: n.at(key), msg: "nats: " + fmt.Sprintf(format, args...)}
	}

	if n.URL != "" && n.Listen != "" {
		return fail("listen", "listen opens a port on the embedded server, which does not run when url is set; remove one of them")
	}
	if n.User != "" && n.PasswordEnv == "" {
		return fail("user", "user needs password_env naming the variable that holds its password")
	}
	if n.PasswordEnv != "" && n.User == "" {
		return fail("password_env", "password_env needs user")
	}
	var creds []string
	for _, k := range []struct{ key, env string }{
		{"creds_env", n.CredsEnv}, {"nkey_env", n.NKeyEnv}, {"token_env", n.TokenEnv}, {"password_env", n.PasswordEnv},
	} {
		if k.env != "" {
			creds = append(creds, k.key)
		}
	}
	if len(creds) > 1 {
		return fail(creds[1], "use one kind of credential (creds_env, nkey_env, token_env, or user with password_env); found %s", strings.Join(creds, " and "))
	}
	if n.URL == "" {
		for _, k := range []struct{ key, val string }{
			{"creds_env", n.CredsEnv}, {"tls_ca", n.TLSCA}, {"tls_cert", n.TLSCert}, {"tls_key", n.TLSKey},
		} {
			if k.val != "" {
				return fail(k.key, "%s is for an external NATS (url); the embedded server takes token_env, nkey_env, or user with password_env", k.key)
			}
		}
	}
	if (n.TLSCert == "") != (n.TLSKey == "") {
		return fail("tls_cert", "tls_cert and tls_key go together")
	}
	for _, u := range strings.Split(n.URL, ",") {
		if pu, err := url.Parse(strings.TrimSpace(u)); err == nil && pu.User != nil {
			if _, has := pu.User.Password(); has {
				return fail("url", "url carries a password; set user and password_env instead (secrets never live in the configuration)")
			}
		}
	}
	return c.validateNATSListen(fail, len(creds) > 0)
}

// validateNATSListen checks listen and the job keys: an open port needs
// credentials, and any NATS but the portless embedded one a job key.
func (c *Config) validateNATSListen(fail func(key, format string, args ...any) error, hasCreds bool) error {
	n := &c.NATS
	if n.Listen != "" {
		addr, loopback, err := jobs.ListenAddr(n.Listen)
		if err != nil {
			return fail("listen", "%v", err)
		}
		n.Listen = addr
		switch {
		case !hasCreds && !loopback:
			return fail("listen", "listen %s is reachable from other hosts and has no credentials: set token_env, nkey_env, or user with password_env "+
				"(anyone who can publish a job could queue text under a trusted installation)", addr)
		case !hasCreds:
			return fail("listen", "listen %s has no credentials: set token_env, nkey_env, or user with password_env "+
				"(any process on this host could queue text under a trusted installation)", addr)
		}
	}
	if n.JobKeyEnv == "" && (n.URL != "" || n.Listen != "") {
		key := "url"
		if n.URL == "" {
			key = "listen"
		}
		return fail(key, "%s needs job_key_env, naming the variable that holds the key every ingestd process signs and checks jobs with "+
			"(at least %d random bytes, e.g. `openssl rand -hex 32`): a worker believes no job without it", key, jobs.MinJobKeyBytes)
	}
	if n.AcceptJobKeyEnv != "" && n.JobKeyEnv == "" {
		return fail("accept_job_key_env", "accept_job_key_env needs job_key_env")
	}
	return nil
}

// at is the line of key in the nats block, or of the block itself.
func (n *NATSConfig) at(key string) int {
	if l, ok := n.lines[key]; ok {
		return l
	}
	return n.line
}

// natsSecrets reads the credentials and job keys the nats block names from
// the environment. A named variable that is unset or empty, or a job key
// shorter than jobs.MinJobKeyBytes, refuses the start with the file and
// line of its key; no message carries a value.
func (a *app) natsSecrets(e *env) (co jobs.ConnectOptions, key []byte, accept [][]byte, err error) {
	n := &a.cfg.NATS
	read := func(k, name string) (string, error) {
		v, ok := e.lookupEnv(name)
		if !ok || v == "" {
			return "", &configError{path: a.cfg.path, line: n.at(k), msg: fmt.Sprintf("nats: %s: environment variable %s is not set", k, name)}
		}
		return v, nil
	}
	for _, s := range []struct {
		key, env string
		dst      *string
	}{
		{"creds_env", n.CredsEnv, &co.Creds}, {"nkey_env", n.NKeyEnv, &co.NKeySeed},
		{"token_env", n.TokenEnv, &co.Token}, {"password_env", n.PasswordEnv, &co.Password},
	} {
		if s.env == "" {
			continue
		}
		if *s.dst, err = read(s.key, s.env); err != nil {
			return co, nil, nil, err
		}
	}
	co.User = n.User
	for _, k := range []struct{ key, env string }{{"job_key_env", n.JobKeyEnv}, {"accept_job_key_env", n.AcceptJobKeyEnv}} {
		if k.env == "" {
			continue
		}
		v, err := read(k.key, k.env)
		if err != nil {
			return co, nil, nil, err
		}
		if len(v) < jobs.MinJobKeyBytes {
			return co, nil, nil, &configError{path: a.cfg.path, line: n.at(k.key), msg: fmt.Sprintf(
				"nats: %s: the key in %s is %d bytes; use at least %d random bytes (e.g. `openssl rand -hex 32`)", k.key, k.env, len(v), jobs.MinJobKeyBytes)}
		}
		if key == nil {
			key = []byte(v)
		} else {
			accept = append(accept, []byte(v))
		}
	}
	return co, key, accept, nil
}

// dialListen is the address a one-shot command dials to reach serve's
// listener: a wildcard host (0.0.0.0, ::) is dialled on loopback.
func dialListen(listen string) string {
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
