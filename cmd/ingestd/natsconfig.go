package main

import (
	"fmt"

	"github.com/ingestd/ingestd/jobs"
)

// natsSecrets reads the credentials and job keys the nats block names from
// the environment. A named variable that is unset or empty, or a job key
// shorter than jobs.MinJobKeyBytes, refuses the start with the file and
// line of its key; no message carries a value.
func (a *app) natsSecrets(e *env) (co jobs.ConnectOptions, key []byte, accept [][]byte, err error) {
	n := &a.cfg.NATS
	read := func(k, name string) (string, error) {
		v, ok := e.lookupEnv(name)
		if !ok || v == "" {
			return "", a.cfg.At(n.Line(k), fmt.Sprintf("nats: %s: environment variable %s is not set", k, name))
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
			return co, nil, nil, a.cfg.At(n.Line(k.key), fmt.Sprintf(
				"nats: %s: the key in %s is %d bytes; use at least %d random bytes (e.g. `openssl rand -hex 32`)", k.key, k.env, len(v), jobs.MinJobKeyBytes))
		}
		if key == nil {
			key = []byte(v)
		} else {
			accept = append(accept, []byte(v))
		}
	}
	return co, key, accept, nil
}
