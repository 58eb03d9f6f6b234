package daemon

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs"
)

// Queue is the JetStream job transport of one process: its connection,
// the queue on it and, when it runs one, the embedded server.
type Queue struct {
	*jobs.Queue
	nc  *nats.Conn
	emb *jobs.Embedded
}

// QueueOptions says which NATS OpenQueue reaches and how the queue on it
// is made.
type QueueOptions struct {
	// Embedded, when set, starts the in-process server with these options
	// and connects to it; otherwise OpenQueue dials URL with Connect.
	Embedded *jobs.EmbeddedOptions
	URL      string
	Connect  jobs.ConnectOptions
	// Jobs is the queue's options; Wait how long to wait for NATS and the
	// job stream (jobs.OpenWait).
	Jobs jobs.Options
	Wait jobs.WaitOptions
}

// OpenQueue starts or dials NATS and opens the job queue on it, waiting
// up to o.Wait.Timeout, so a start during a leader election or before the
// cluster is up is a pause, not an exit.
func OpenQueue(ctx context.Context, o QueueOptions) (*Queue, error) {
	jq := &Queue{}
	var dial jobs.Dialer
	if o.Embedded != nil {
		var err error
		if jq.emb, err = jobs.StartEmbedded(*o.Embedded); err != nil {
			return nil, err
		}
		dial = func() (*nats.Conn, error) { return jq.emb.Connect("ingestd") }
	} else {
		dial = func() (*nats.Conn, error) { return jobs.Connect(o.URL, o.Connect) }
	}
	var err error
	jq.Queue, jq.nc, err = jobs.OpenWait(ctx, dial, &o.Jobs, o.Wait)
	if err != nil {
		jq.Close()
		return nil, err
	}
	return jq, nil
}

// Embedded reports whether this process runs the NATS server it uses.
func (jq *Queue) Embedded() bool { return jq.emb != nil }

// Close flushes pending events, closes the connection and stops the
// embedded server.
func (jq *Queue) Close() {
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
func (jq *Queue) ready() error {
	if !jq.nc.IsConnected() {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "the job stream's connection is %s", strings.ToLower(jq.nc.Status().String()))
	}
	return nil
}

// QueueSync publishes a sync pass of the installation now, started by
// trigger (one of ingestd.Triggers). Requests within the same second are
// one job. Returns ENOTFOUND for an installation that is not configured.
func (d *Daemon) QueueSync(ctx context.Context, q *jobs.Queue, id, trigger string) error {
	if _, _, err := d.Installation(id); err != nil {
		return err
	}
	msgID := "sync:" + id + ":manual:" + strconv.FormatInt(time.Now().Unix(), 10)
	return q.Publish(ctx, ingestd.Job{Kind: ingestd.JobSync, Installation: id, Trigger: trigger}, msgID)
}
