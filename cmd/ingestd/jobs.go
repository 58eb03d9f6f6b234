package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/internal/cli"
	"github.com/ingestd/ingestd/internal/netaddr"
	"github.com/ingestd/ingestd/jobs"
)

// openQueue connects to the NATS that nats.url names, or (embedded true and
// no url) starts the in-process server under data_dir/nats and connects to
// it. A one-shot command (embedded false) without nats.url connects to
// nats.listen, the TCP listener a running serve opened, or fails with a
// hint: the embedded server lives inside serve.
//
// It waits for NATS and the job stream (jobs.OpenWait) up to
// nats.startup_timeout, logging each attempt as jobs.waiting, so a start
// during a leader election or before the cluster is up is a pause, not an
// exit.
//
// The credentials and job keys come from the variables the nats block
// names (natsSecrets); every job the queue publishes is signed with the
// job key and every job its workers run must verify. reg, when not nil,
// receives the queue's metrics.
func (a *app) openQueue(ctx context.Context, e *env, embedded bool, reg prometheus.Registerer) (*daemon.Queue, error) {
	c := a.cfg.NATS
	for _, id := range a.IDs() {
		if err := jobs.CheckToken("installation id", id); err != nil {
			return nil, a.cfg.At(0, err.Error())
		}
	}
	co, key, accept, err := a.natsSecrets(e)
	if err != nil {
		return nil, err
	}
	co.Name = "ingestd"
	qo := daemon.QueueOptions{
		Jobs: jobs.Options{
			Replicas:      c.Replicas,
			MaxDeliver:    c.MaxDeliver,
			AckWait:       time.Duration(c.AckWait),
			MaxMsgSize:    c.MaxMsgSize,
			MaxBytes:      c.MaxBytes,
			LeaseTTL:      time.Duration(c.LeaseTTL),
			ReplayAge:     a.ReplayAge(),
			JobKey:        key,
			AcceptJobKeys: accept,
			Registerer:    reg,
			Logger:        a.log,
		},
		Wait: jobs.WaitOptions{Timeout: time.Duration(c.StartupTimeout)},
	}
	switch {
	case c.URL == "" && embedded:
		qo.Embedded = &jobs.EmbeddedOptions{
			StoreDir:   filepath.Join(a.cfg.Path(a.cfg.DataDir), "nats"),
			Listen:     c.Listen,
			Token:      co.Token,
			User:       co.User,
			Password:   co.Password,
			NKeySeed:   co.NKeySeed,
			MaxPayload: max(c.MaxMsgSize+64<<10, 8<<20),
			Logger:     a.log,
		}
	case c.URL == "" && c.Listen == "":
		return nil, &usageError{Msg: "no nats.url is configured and the embedded NATS lives inside `ingestd serve`; " +
			"set nats.listen (then this command reaches serve's server) or nats.url, or use POST /v1/installations/{id}/sync"}
	default:
		qo.URL, qo.Connect = a.natsURL(co)
	}
	return daemon.OpenQueue(ctx, qo)
}

// natsURL is the NATS a process dials without the embedded server, and
// co with the TLS files the nats block names.
func (a *app) natsURL(co jobs.ConnectOptions) (string, jobs.ConnectOptions) {
	c := a.cfg.NATS
	url := c.URL
	if url == "" {
		url = "nats://" + netaddr.Dial(c.Listen)
	}
	if co.Creds == "" && co.NKeySeed == "" && co.Token == "" && co.User == "" && c.TLSCert == "" && !strings.Contains(url, "@") {
		a.log.Warn("nats.no_credentials", "url", url,
			"hint", "anyone who can reach this NATS can read and delete jobs; the job key still keeps them from queueing one a worker believes")
	}
	if c.TLSCA != "" {
		co.TLSCA = a.cfg.Path(c.TLSCA)
	}
	if c.TLSCert != "" {
		co.TLSCert, co.TLSKey = a.cfg.Path(c.TLSCert), a.cfg.Path(c.TLSKey)
	}
	return url, co
}

// reachQueue is how a one-shot command reaches the job queue:
//
//   - with nats.url or nats.listen, over its own NATS connection (jq);
//   - with the NATS embedded in a serve that runs on this data_dir, through
//     that serve's admin API (d), found by the data_dir lock;
//   - with the embedded NATS and no serve running, by holding the data_dir
//     lock and running the embedded server in this process for the
//     command's length (jq): what it queues waits for serve.
//
// The caller closes jq.
func (a *app) reachQueue(ctx context.Context, e *env) (jq *daemon.Queue, d *daemon.Remote, err error) {
	if a.cfg.NATS.URL != "" || a.cfg.NATS.Listen != "" {
		jq, err = a.openQueue(ctx, e, false, nil)
		return jq, nil, err
	}
	if d, err = a.findDaemon(e); err != nil || d != nil {
		return nil, d, err
	}
	if err := a.lockDataDir(); err != nil {
		if ingestd.ErrorCode(err) == ingestd.ECONFLICT {
			// Another process took data_dir since findDaemon looked.
			h, _, _ := daemon.LockedBy(a.cfg.Path(a.cfg.DataDir))
			return nil, nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "data_dir was taken meanwhile by %s: run this command again", daemon.Describe(h))
		}
		return nil, nil, err
	}
	jq, err = a.openQueue(ctx, e, true, nil)
	return jq, nil, err
}

// runDLQ is `ingestd dlq list|replay`.
func runDLQ(ctx context.Context, e *env, args []string) error {
	switch {
	case len(args) > 0 && cli.IsHelp(args[0]):
		fmt.Fprintf(e.stdout, "Usage:\n%s", groupUsage("dlq"))
		return nil
	case len(args) == 0 || (args[0] != "list" && args[0] != "replay"):
		return &usageError{Cmd: "dlq", Msg: "want list or replay"}
	}
	list := args[0] == "list"
	fs := flag.NewFlagSet("dlq "+args[0], flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	var asJSON, all *bool
	if list {
		asJSON = fs.Bool("json", false, "print the dead letters as JSON")
	} else {
		all = fs.Bool("all", false, "replay every dead letter")
	}
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case list && len(pos) > 0:
		return &usageError{Cmd: fs.Name(), Msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	case !list && (*all && len(pos) != 0 || !*all && len(pos) != 1):
		return &usageError{Cmd: fs.Name(), Msg: "want one dead letter id or --all"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	jq, d, err := a.reachQueue(ctx, e)
	if err != nil {
		return err
	}
	var dl ingestd.DeadLetters = d
	if jq != nil {
		defer jq.Close()
		dl = jq.Queue
	}

	switch {
	case list:
		return listDLQ(ctx, e, dl, *asJSON)
	case *all:
		n, err := dl.ReplayAll(ctx)
		if n > 0 || err == nil {
			e.stdout.Printf("%s queued again\n", plural(n, "dead letter"))
		}
		return err
	default:
		if err := dl.Replay(ctx, pos[0]); err != nil {
			return err
		}
		e.stdout.Printf("dead letter %s queued again\n", pos[0])
		return nil
	}
}

// listDLQ is `ingestd dlq list`.
func listDLQ(ctx context.Context, e *env, dl ingestd.DeadLetters, asJSON bool) error {
	dead, err := dl.ListDLQ(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if dead == nil {
			dead = []ingestd.DeadLetter{}
		}
		return writeIndented(e.stdout, dead)
	}
	if len(dead) == 0 {
		e.stdout.Println("no dead letters")
		return nil
	}
	tb := e.stdout.Table("", "ID", "KIND", "INSTALLATION", "ITEM", "DELIVERIES", "FAILED AT", "ERROR")
	for _, d := range dead {
		item := d.Job.ExternalID
		if d.Job.Item != nil {
			item = d.Job.Item.ExternalID
		}
		tb.Row(d.ID, d.Job.Kind, d.Job.Installation, item, d.Deliveries, d.FailedAt.Format(time.RFC3339), d.Error)
	}
	return tb.Flush()
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
