package config

import (
	"fmt"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd/internal/netaddr"
)

// MinJobKeyBytes is the shortest job key (nats.job_key_env) the
// messages ask for: the jobs package's own minimum, which it enforces
// (a test holds the two equal; this package does not import the queue).
const MinJobKeyBytes = 32

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
		return &Error{Path: c.path, Line: n.Line(key), Msg: "nats: " + fmt.Sprintf(format, args...)}
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
		addr, loopback, err := netaddr.ListenAddr(n.Listen)
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
			"(at least %d random bytes, e.g. `openssl rand -hex 32`): a worker believes no job without it", key, MinJobKeyBytes)
	}
	if n.AcceptJobKeyEnv != "" && n.JobKeyEnv == "" {
		return fail("accept_job_key_env", "accept_job_key_env needs job_key_env")
	}
	return nil
}

// Line is the line of key in the nats block, or of the block itself.
func (n *NATSConfig) Line(key string) int {
	if l, ok := n.lines[key]; ok {
		return l
	}
	return n.line
}
