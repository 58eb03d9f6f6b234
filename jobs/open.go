package jobs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// Dialer connects to NATS. OpenWait calls it again after a failed attempt
// to connect; a Dialer for the embedded server connects in-process.
type Dialer func() (*nats.Conn, error)

// WaitOptions bounds how long OpenWait waits for NATS and the job stream;
// the zero value means the defaults.
type WaitOptions struct {
	// Timeout bounds the whole wait (default 2m). After it OpenWait returns
	// the last attempt's error, saying how long it waited: a process that
	// cannot reach its job stream for that long exits, and its supervisor
	// takes over.
	Timeout time.Duration
	// Backoff is the delay after the first failed attempt (default 250ms);
	// it doubles after each further failure, up to MaxBackoff (default 5s).
	Backoff, MaxBackoff time.Duration
	// OnWait, when set, is told of every failed attempt that will be
	// retried: its number (from 1), why it failed and the delay before the
	// next. serve reports it in readiness.
	OnWait func(attempt int, err error, retryIn time.Duration)
}

func (w WaitOptions) withDefaults() WaitOptions {
	if w.Timeout <= 0 {
		w.Timeout = 2 * time.Minute
	}
	if w.Backoff <= 0 {
		w.Backoff = 250 * time.Millisecond
	}
	if w.MaxBackoff <= 0 {
		w.MaxBackoff = 5 * time.Second
	}
	w.MaxBackoff = max(w.MaxBackoff, w.Backoff)
	return w
}

// OpenWait connects with dial and opens the queue on that connection (see
// Open), retrying with backoff what a cluster event causes: NATS not
// reachable yet, a cluster that has not elected its JetStream leader, and
// a stream or consumer without a leader while its replicas elect one
// (about 5 s after the leader's node dies), which answer with a timeout
// or "temporarily unavailable". Each failed attempt is logged as
// jobs.waiting with the attempt, the reason and the delay, so a cluster
// event is a pause at start, never a crash loop.
//
// It gives up at once on what waiting cannot fix: a job key shorter than
// MinJobKeyBytes (EINVALID), credentials the server refuses, and a stream
// configuration the server rejects (subjects another stream holds, a
// changed retention, replicas on a server that is not clustered). After
// WaitOptions.Timeout it returns the last error. On success the
// connection belongs to the caller, as with Open.
func OpenWait(ctx context.Context, dial Dialer, o *Options, w WaitOptions) (*Queue, *nats.Conn, error) {
	opts := o.withDefaults()
	if _, err := checkKeys(opts.JobKey, opts.AcceptJobKeys); err != nil {
		return nil, nil, err
	}
	w = w.withDefaults()
	log := opts.Logger
	start := time.Now()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A cancel, not a deadline: without a deadline every JetStream
	// request keeps its own default timeout (5s), so one lost request
	// costs 5s, not the rest of the wait.
	stop := time.AfterFunc(w.Timeout, cancel)
	defer stop.Stop()

	var nc *nats.Conn
	delay := w.Backoff
	for attempt := 1; ; attempt++ {
		var err error
		if nc == nil {
			nc, err = dial()
		}
		if err == nil {
			var q *Queue
			if q, err = Open(ctx, nc, o); err == nil {
				if attempt > 1 {
					log.Info("jobs.ready", "attempts", attempt, "waited", time.Since(start).Round(time.Millisecond).String())
				}
				return q, nc, nil
			}
		}
		if !Transient(err) {
			if nc != nil {
				nc.Close()
			}
			return nil, nil, err
		}
		left := w.Timeout - time.Since(start)
		if ctx.Err() != nil || left <= 0 {
			if nc != nil {
				nc.Close()
			}
			if perr := parent.Err(); perr != nil {
				return nil, nil, fmt.Errorf("waiting for the job stream: %w", perr)
			}
			return nil, nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "the job stream did not answer within %s (nats.startup_timeout; %d attempts): %v",
				w.Timeout, attempt, err)
		}
		retry := min(delay, left)
		log.Warn("jobs.waiting", "attempt", attempt, "reason", err.Error(), "retry_in", retry.Round(time.Millisecond).String(),
			"waited", time.Since(start).Round(time.Millisecond).String(), "timeout", w.Timeout.String())
		if w.OnWait != nil {
			w.OnWait(attempt, err, retry)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
		delay = min(2*delay, w.MaxBackoff)
	}
}

// Transient reports whether err, from connecting to NATS or opening the
// queue, may pass by waiting: anything but a bad job key (EINVALID),
// credentials or a certificate the server refuses or we do not trust, and
// a configuration the server rejects.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if ingestd.ErrorCode(err) == ingestd.EINVALID {
		return false
	}
	var (
		certErr      *tls.CertificateVerificationError
		authorityErr x509.UnknownAuthorityError
		hostErr      x509.HostnameError
	)
	if errors.As(err, &certErr) || errors.As(err, &authorityErr) || errors.As(err, &hostErr) {
		return false
	}
	for _, permanent := range []error{
		nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired,
		nats.ErrNkeysNotSupported, nats.ErrSecureConnRequired, nats.ErrSecureConnWanted,
		jetstream.ErrJetStreamNotEnabledForAccount,
	} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeBadRequest,
			jetstream.JSErrCodeStreamNameInUse, // another configuration under our name
			10065,                              // subjects overlap with another stream
			10052,                              // invalid stream configuration
			10074,                              // replicas > 1 on a server that is not clustered
			jetstream.JSErrCodeJetStreamNotEnabledForAccount,
			10010: // JetStream clustering support required
			return false
		}
	}
	return true
}
