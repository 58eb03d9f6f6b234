package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs"
)

// jobQueue is the JetStream job transport of one process: its connection,
// the queue on it and, without nats.url, the embedded server.
type jobQueue struct {
	*jobs.Queue
	nc  *nats.Conn
	emb *jobs.Embedded
}

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
func (a *app) openQueue(ctx context.Context, e *env, embedded bool, reg prometheus.Registerer) (*jobQueue, error) {
	c := a.cfg.NATS
	for _, id := range a.order {
		if err := jobs.CheckToken("installation id", id); err != nil {
			return nil, &configError{path: a.cfg.path, msg: err.Error()}
		}
	}
	co, key, accept, err := a.natsSecrets(e)
	if err != nil {
		return nil, err
	}
	co.Name = "ingestd"
	jq := &jobQueue{}
	var dial jobs.Dialer
	switch {
	case c.URL == "" && embedded:
		jq.emb, err = jobs.StartEmbedded(jobs.EmbeddedOptions{
			StoreDir:   filepath.Join(a.cfg.Path(a.cfg.DataDir), "nats"),
			Listen:     c.Listen,
			Token:      co.Token,
			User:       co.User,
			Password:   co.Password,
			NKeySeed:   co.NKeySeed,
			MaxPayload: max(c.MaxMsgSize+64<<10, 8<<20),
			Logger:     a.log,
		})
		if err != nil {
			return nil, err
		}
		dial = func() (*nats.Conn, error) { return jq.emb.Connect("ingestd") }
	case c.URL == "" && c.Listen == "":
		return nil, &usageError{msg: "no nats.url is configured and the embedded NATS lives inside `ingestd serve`; " +
			"set nats.listen (then this command reaches serve's server) or nats.url, or use POST /v1/installations/{id}/sync"}
	default:
		url := c.URL
		if url == "" {
			url = "nats://" + dialListen(c.Listen)
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
		dial = func() (*nats.Conn, error) { return jobs.Connect(url, co) }
	}
	jq.Queue, jq.nc, err = jobs.OpenWait(ctx, dial, &jobs.Options{
		Replicas:      c.Replicas,
		MaxDeliver:    c.MaxDeliver,
		AckWait:       time.Duration(c.AckWait),
		MaxMsgSize:    c.MaxMsgSize,
		MaxBytes:      c.MaxBytes,
		LeaseTTL:      time.Duration(c.LeaseTTL),
		ReplayAge:     a.replayAge(),
		JobKey:        key,
		AcceptJobKeys: accept,
		Registerer:    reg,
		Logger:        a.log,
	}, jobs.WaitOptions{Timeout: time.Duration(c.StartupTimeout)})
	if err != nil {
		jq.Close()
		return nil, err
	}
	return jq, nil
}

// Close flushes pending events, closes the connection and stops the
// embedded server.
func (jq *jobQueue) Close() {
	if jq.Queue != nil {
		// Events in flight get 5 s: they are best effort, the documents
		// are stored.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = jq.Queue.Close(ctx)
		cancel()
	}
	if jq.nc != nil {
		jq.nc.Close()
	}
	if jq.emb != nil {
		jq.emb.Shutdown()
	}
}

// ready reports whether the NATS connection is up (readiness).
func (jq *jobQueue) ready() error {
	if !jq.nc.IsConnected() {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "the job stream's connection is %s", strings.ToLower(jq.nc.Status().String()))
	}
	return nil
}

// queueSync publishes a sync pass of the installation now, started by
// trigger (one of ingestd.Triggers). Requests within the same second are
// one job.
func (a *app) queueSync(ctx context.Context, q *jobs.Queue, id, trigger string) error {
	if _, _, err := a.Installation(id); err != nil {
		return err
	}
	msgID := "sync:" + id + ":manual:" + strconv.FormatInt(time.Now().Unix(), 10)
	return q.Publish(ctx, ingestd.Job{Kind: ingestd.JobSync, Installation: id, Trigger: trigger}, msgID)
}

// jobHandler runs one job in a worker. A sync job fans out: it publishes
// one item job per new or changed document, so every worker shares the
// pass; item and delete jobs go to the pipeline. Every sync pass is
// recorded in the history, a failed one with its error: one that fails
// for good (EINVALID, a refused login) is then dead-lettered, and the
// history is where its failure shows.
func (a *app) jobHandler(q *jobs.Queue) jobs.Handler {
	return func(ctx context.Context, job ingestd.Job) error {
		if job.Kind != ingestd.JobSync {
			return a.pipe.Handle(ctx, job, a)
		}
		inst, src, err := a.Installation(job.Installation)
		if err != nil {
			return err
		}
		sum, err := a.pipe.SyncDispatch(ctx, inst, src, nil, q.Publish)
		a.recordPass(ctx, sum, job.Trigger, err)
		return err
	}
}

// configured reports whether the installation is in this process's
// configuration: a worker refuses a job for any other, signed or not.
func (a *app) configured(id string) bool {
	_, ok := a.insts[id]
	return ok
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
func (a *app) reachQueue(ctx context.Context, e *env) (jq *jobQueue, d *daemon, err error) {
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
			h, _, _ := lockedBy(a.cfg.Path(a.cfg.DataDir))
			return nil, nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "data_dir was taken meanwhile by %s: run this command again", describe(h))
		}
		return nil, nil, err
	}
	jq, err = a.openQueue(ctx, e, true, nil)
	return jq, nil, err
}

// gatedDeadLetters serves the dead-letter routes from the job queue once
// serve has opened it; until then they answer "waiting for the job stream".
type gatedDeadLetters struct{ g *queueGate }

var _ deadLetters = gatedDeadLetters{}

func (d gatedDeadLetters) ListDLQ(ctx context.Context) ([]ingestd.DeadLetter, error) {
	jq, err := d.g.get()
	if err != nil {
		return nil, err
	}
	return jq.ListDLQ(ctx)
}

func (d gatedDeadLetters) Replay(ctx context.Context, id string) error {
	jq, err := d.g.get()
	if err != nil {
		return err
	}
	return jq.Replay(ctx, id)
}

func (d gatedDeadLetters) ReplayAll(ctx context.Context) (int, error) {
	jq, err := d.g.get()
	if err != nil {
		return 0, err
	}
	return jq.ReplayAll(ctx)
}

// runDLQ is `ingestd dlq list|replay`.
func runDLQ(ctx context.Context, e *env, args []string) error {
	switch {
	case len(args) > 0 && isHelp(args[0]):
		fmt.Fprintf(e.stdout, "Usage:\n%s", groupUsage("dlq"))
		return nil
	case len(args) == 0 || (args[0] != "list" && args[0] != "replay"):
		return &usageError{cmd: "dlq", msg: "want list or replay"}
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
		return &usageError{cmd: fs.Name(), msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	case !list && (*all && len(pos) != 0 || !*all && len(pos) != 1):
		return &usageError{cmd: fs.Name(), msg: "want one dead letter id or --all"}
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
	var dl deadLetters = d
	if jq != nil {
		defer jq.Close()
		dl = jq.Queue
	}

	switch {
	case list:
		dead, err := dl.ListDLQ(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			if dead == nil {
				dead = []ingestd.DeadLetter{}
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(dead)
		}
		if len(dead) == 0 {
			e.stdout.Println("no dead letters")
			return nil
		}
		tb := e.stdout.table("", "ID", "KIND", "INSTALLATION", "ITEM", "DELIVERIES", "FAILED AT", "ERROR")
		for _, d := range dead {
			item := d.Job.ExternalID
			if d.Job.Item != nil {
				item = d.Job.Item.ExternalID
			}
			tb.row(d.ID, d.Job.Kind, d.Job.Installation, item, d.Deliveries, d.FailedAt.Format(time.RFC3339), d.Error)
		}
		return tb.flush()
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
