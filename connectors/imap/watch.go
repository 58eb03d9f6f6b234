package imap

import (
	"context"
	"fmt"
	"time"

	imap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/ingestd/ingestd/internal/clock"
)

// PollInterval is how often Watch asks a server without IDLE (NOOP) for
// news.
const PollInterval = time.Minute

// Watch is the imap kind's connectors.Watcher: it keeps a connection open
// on the first matching mailbox (usually INBOX) and calls notify, from its
// own goroutine and never concurrently, when the server reports new or
// expunged messages there; the caller then queues a sync of the
// installation. It uses IDLE when the server has it (re-issued before the
// 29-minute limit) and NOOP every PollInterval otherwise. It reconnects
// with backoff when the connection breaks and returns only when ctx ends
// (nil) or the login is refused (EINVALID). Other mailboxes are picked up
// by the next sync. New declares it only when Config().IDLE is set.
func (s *Source) Watch(ctx context.Context, notify func()) error {
	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
				notify()
			}
		}
	}()
	h := &imapclient.UnilateralDataHandler{
		Expunge: func(uint32) { signal() },
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				signal()
			}
		},
	}
	failures := 0
	for {
		err := s.watchOnce(ctx, h, &failures)
		if ctx.Err() != nil {
			return nil
		}
		if !retryable(ctx, err) && !mailboxError(err) {
			return err
		}
		failures++
		d := s.backoff(min(failures, 8))
		s.log.Warn("imap: watch connection lost; reconnecting", "installation", s.installation, "backoff", d, "err", err)
		if clock.Sleep(ctx, d) != nil {
			return nil
		}
	}
}

func (s *Source) watchOnce(ctx context.Context, h *imapclient.UnilateralDataHandler, failures *int) error {
	c, err := s.dial(ctx, h)
	if err != nil {
		return err
	}
	defer c.close()
	boxes, err := c.mailboxes(ctx, s.cfg.Mailboxes, s.cfg.ExcludeMailboxes)
	if err != nil {
		return err
	}
	if len(boxes) == 0 {
		return fmt.Errorf("no mailbox matches %q", s.cfg.Mailboxes)
	}
	if _, err := c.examine(ctx, boxes[0]); err != nil {
		return err
	}
	*failures = 0
	stop := context.AfterFunc(ctx, func() { c.c.Close() })
	defer stop()
	if caps := c.c.Caps(); caps.Has(imap.CapIdle) || caps.Has(imap.CapIMAP4rev2) {
		idle, err := c.c.Idle()
		if err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		select {
		case <-ctx.Done():
			idle.Close()
			return nil
		case <-c.c.Closed():
			return fmt.Errorf("idle: connection closed")
		}
	}
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.c.Closed():
			return fmt.Errorf("poll: connection closed")
		case <-t.C:
			_, done := c.guard(ctx)
			if err := done(c.c.Noop().Wait()); err != nil {
				return fmt.Errorf("noop: %w", err)
			}
		}
	}
}
