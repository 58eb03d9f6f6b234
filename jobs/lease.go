package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// Lease is one holder's right to run an installation's sync pass. It lives
// in the INGESTD_LEASES bucket, whose TTL (Options.LeaseTTL) removes it if
// the holder stops refreshing it, so a crashed holder blocks nobody for
// longer than the TTL.
type Lease struct {
	kv     jetstream.KeyValue
	key    string
	holder string

	mu  sync.Mutex
	rev uint64
}

// AcquireLease takes the sync lease of the installation. Returns ECONFLICT
// if another holder has it and EUNAVAILABLE if the bucket cannot be reached.
func (q *Queue) AcquireLease(ctx context.Context, installation string) (*Lease, error) {
	if err := CheckToken("installation id", installation); err != nil {
		return nil, err
	}
	key := "sync." + installation
	rev, err := q.leases.Create(ctx, key, []byte(q.o.Holder))
	if errors.Is(err, jetstream.ErrKeyExists) {
		holder := "another worker"
		if e, gerr := q.leases.Get(ctx, key); gerr == nil {
			holder = string(e.Value())
		}
		return nil, ingestd.Errorf(ingestd.ECONFLICT, "sync lease of %q is held by %s", installation, holder)
	}
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "sync lease of %q: %v", installation, err)
	}
	return &Lease{kv: q.leases, key: key, holder: q.o.Holder, rev: rev}, nil
}

// Refresh renews the lease for another TTL. Returns ECONFLICT if the lease
// expired and someone else took it (or it is gone): the holder must stop.
func (l *Lease) Refresh(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	rev, err := l.kv.Update(ctx, l.key, []byte(l.holder), l.rev)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) {
			return ingestd.Errorf(ingestd.ECONFLICT, "lease %s lost", l.key)
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return ingestd.Errorf(ingestd.ECONFLICT, "lease %s lost", l.key)
		}
		return fmt.Errorf("refresh lease %s: %w", l.key, err)
	}
	l.rev = rev
	return nil
}

// Release gives the lease up if this holder still has it.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyNotFound) {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return nil // someone else holds it now: not ours to release
		}
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	return nil
}
