package imap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	imap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// Sync runs one pass over the matching mailboxes, one connection, in
// three steps:
//
//  1. Plan each mailbox (EXAMINE, never SELECT): a mailbox whose UIDNEXT
//     and message count are what they were after the last complete pass
//     is skipped without a search; otherwise UID SEARCH finds the UIDs
//     above the cursor's last_uid (within Since on a first sync) and the
//     stored UIDs still present. A changed UIDVALIDITY starts a rescan
//     under the new one; the old generation's ids are kept aside and
//     reconciled once the rescan reaches the end.
//  2. Fetch the new UIDs in ascending batches of BatchSize with
//     BODY.PEEK[], Put each message and its attachments as it arrives,
//     and save the cursor after each batch. A broken connection is
//     re-dialled with backoff and the batch resumes with the UIDs not
//     yet Put: nothing is lost or Put twice. A message that breaks the
//     connection every time it is fetched is reported with pass.Fail
//     ("uid:<n>") and skipped, as is one that is over MaxMessageBytes or
//     cannot be read as a message.
//  3. Tombstone (pass.Delete, attachments first) every stored message
//     whose UID disappeared, unless the same message is still held under
//     another UID or in another mailbox of the pass.
//
// A mailbox the server refuses (NO) is logged and left for the next pass;
// the others go on. Sync returns an error when the server stays
// unreachable after the reconnects (EUNAVAILABLE), when the login is
// refused (EINVALID), when ctx ends, or when pass.Put, Delete or the
// cursors fail. It never calls pass.Complete: a pass fetches only what is
// new.
func (s *Source) Sync(ctx context.Context, pass ingestd.Pass) error {
	r := &run{s: s, pass: pass, maps: newUIDMaps(pass), put: map[string]bool{}}
	defer func() { r.c.close() }()

	var boxes []string
	err := r.do(ctx, func(c *conn) (err error) {
		boxes, err = c.mailboxes(ctx, s.cfg.Mailboxes, s.cfg.ExcludeMailboxes)
		return err
	})
	if err != nil {
		return fmt.Errorf("imap %s: %w", s.installation, err)
	}
	var plans []*plan
	total := 0
	for _, name := range boxes {
		p, err := r.plan(ctx, name)
		if err != nil {
			if !mailboxError(err) {
				return fmt.Errorf("imap %s: %w", s.installation, err)
			}
			s.log.Warn("imap: mailbox skipped this pass", "installation", s.installation, "mailbox", name, "err", err)
			p.abandoned = true
		}
		plans = append(plans, p)
		total += len(p.fetch)
	}
	budget := -1
	if s.cfg.MaxPerPass > 0 {
		budget = s.cfg.MaxPerPass
		total = min(total, budget)
	}
	pass.Total(total)
	for _, p := range plans {
		if p.abandoned || p.unchanged {
			continue
		}
		if err := r.fetchAll(ctx, p, &budget); err != nil {
			if !mailboxError(err) {
				return fmt.Errorf("imap %s: %w", s.installation, err)
			}
			s.log.Warn("imap: mailbox left unfinished this pass", "installation", s.installation, "mailbox", p.name, "err", err)
			p.abandoned = true
		}
	}
	if err := r.reconcile(ctx, plans); err != nil {
		return fmt.Errorf("imap %s: %w", s.installation, err)
	}
	return nil
}

// run is the state of one Sync call.
type run struct {
	s    *Source
	pass ingestd.Pass
	c    *conn
	maps *uidMaps
	lost int             // connection failures since the last progress
	put  map[string]bool // message ids Put in this pass
}

// plan is what one pass does with one mailbox.
type plan struct {
	name     string
	cur      cursor   // as it will be saved
	known    []uint32 // cur.Known, ascending
	uidnext  uint32   // from EXAMINE
	exists   uint32
	fetch    []uint32 // UIDs to fetch, ascending
	next     int      // index in fetch of the next batch
	expunged []uint32 // known UIDs no longer on the server

	unchanged bool // nothing was added or expunged since the last complete pass
	abandoned bool // the server refused the mailbox; nothing of it is reconciled
	done      bool // every planned UID was fetched

	// The batch in flight: UIDs dealt with, and the ids Put for them.
	handled map[uint32]bool
	ids     map[uint32][]string
}

// errUIDValidityChanged abandons a mailbox whose UIDVALIDITY changed
// during the pass; the next pass rescans it.
var errUIDValidityChanged = errors.New("UIDVALIDITY changed during the pass")

// putError marks a failure of the pass itself (the store), which no
// reconnect cures.
type putError struct{ err error }

func (e *putError) Error() string { return e.err.Error() }
func (e *putError) Unwrap() error { return e.err }

// mailboxError reports whether err concerns one mailbox only: the server
// refused a command about it, or its UIDVALIDITY changed under the pass.
func mailboxError(err error) bool {
	var ie *imap.Error
	var rf *refused
	return (errors.As(err, &ie) && !errors.As(err, &rf)) || errors.Is(err, errUIDValidityChanged)
}

// do runs fn on the connection, dialling it first when there is none. When
// fn fails with a connection problem, do drops the connection, waits the
// backoff and runs fn again on a new one, up to MaxReconnects failures in
// a row without progress (EUNAVAILABLE then).
func (r *run) do(ctx context.Context, fn func(*conn) error) error {
	for {
		if r.c == nil {
			c, err := r.s.dial(ctx, nil)
			if err != nil {
				if !retryable(ctx, err) {
					return err
				}
				if err := r.lose(ctx, err); err != nil {
					return err
				}
				continue
			}
			r.c = c
		}
		err := fn(r.c)
		if err == nil {
			r.lost = 0
			return nil
		}
		if !retryable(ctx, err) {
			return err
		}
		r.c.close()
		r.c = nil
		if err := r.lose(ctx, err); err != nil {
			return err
		}
	}
}

func (r *run) lose(ctx context.Context, err error) error {
	r.lost++
	if r.lost > r.s.maxReconnect {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "imap %s: gave up after %d failed attempts: %v", r.s.cfg.Addr, r.lost, err)
	}
	d := r.s.backoff(r.lost)
	r.s.log.Warn("imap: connection failed; reconnecting", "installation", r.s.installation, "attempt", r.lost, "backoff", d, "err", err)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// plan loads the mailbox's cursor and asks the server what changed. The
// returned plan is never nil, so a mailbox error still leaves its cursor
// for reconciliation.
func (r *run) plan(ctx context.Context, name string) (*plan, error) {
	cur, err := loadCursor(ctx, r.pass, name)
	if err != nil {
		return nil, err
	}
	p := &plan{name: name, cur: cur, known: parseUIDs(cur.Known)}
	err = r.do(ctx, func(c *conn) error {
		sel, err := c.examine(ctx, name)
		if err != nil {
			return err
		}
		p.cur, p.known, p.fetch, p.expunged = cur, parseUIDs(cur.Known), nil, nil
		p.uidnext, p.exists = uint32(sel.UIDNext), sel.NumMessages
		if cur.UIDValidity != 0 && cur.UIDValidity != sel.UIDValidity {
			r.s.log.Info("imap: UIDVALIDITY changed; rescanning the mailbox", "installation", r.s.installation,
				"mailbox", name, "old", cur.UIDValidity, "new", sel.UIDValidity)
			stale := append([]generation(nil), cur.Stale...)
			stale = append(stale, generation{UIDValidity: cur.UIDValidity, Known: cur.Known, Windowed: r.s.cfg.Since > 0})
			p.cur = cursor{UIDValidity: sel.UIDValidity, Stale: stale}
			p.known = nil
		}
		p.cur.UIDValidity = sel.UIDValidity
		if p.cur.UIDNext != 0 && p.cur.UIDNext == p.uidnext && p.cur.Exists == p.exists && len(p.cur.Stale) == 0 {
			p.unchanged = true
			return nil
		}
		p.cur.UIDNext, p.cur.Exists = 0, 0
		if p.cur.LastUID == 0 && p.cur.SinceUntil == 0 && r.s.cfg.Since > 0 {
			p.cur.SinceUntil = p.uidnext
			p.cur.SinceDate = r.s.now().Add(-r.s.cfg.Since).UTC()
		}
		last := p.cur.LastUID
		if p.cur.SinceUntil > last+1 {
			old, err := c.searchUIDs(ctx, &imap.SearchCriteria{
				UID:   []imap.UIDSet{{{Start: imap.UID(last + 1), Stop: imap.UID(p.cur.SinceUntil - 1)}}},
				Since: p.cur.SinceDate,
			})
			if err != nil {
				return err
			}
			for _, u := range old {
				if u > last && u < p.cur.SinceUntil {
					p.fetch = append(p.fetch, u)
				}
			}
			last = p.cur.SinceUntil - 1
		}
		// "UID n:*" always matches the highest UID, even below n.
		fresh, err := c.searchUIDs(ctx, &imap.SearchCriteria{UID: []imap.UIDSet{{{Start: imap.UID(last + 1)}}}})
		if err != nil {
			return err
		}
		for _, u := range fresh {
			if u > last {
				p.fetch = append(p.fetch, u)
			}
		}
		if len(p.known) > 0 {
			present, err := c.searchUIDs(ctx, &imap.SearchCriteria{UID: []imap.UIDSet{{{Start: 1, Stop: imap.UID(p.known[len(p.known)-1])}}}})
			if err != nil {
				return err
			}
			p.expunged = minus(p.known, present)
		}
		return nil
	})
	return p, err
}

// fetchAll fetches the plan's UIDs batch by batch within the budget (< 0
// means none), saving the cursor after each.
func (r *run) fetchAll(ctx context.Context, p *plan, budget *int) error {
	for p.next < len(p.fetch) {
		n := min(r.s.cfg.BatchSize, len(p.fetch)-p.next)
		if *budget >= 0 {
			if *budget == 0 {
				return nil
			}
			n = min(n, *budget)
		}
		batch := p.fetch[p.next : p.next+n]
		p.handled, p.ids = map[uint32]bool{}, map[uint32][]string{}
		single, stuck := false, 0
		err := r.do(ctx, func(c *conn) error {
			before := len(p.handled)
			err := r.fetchBatch(ctx, c, p, batch, single)
			if err == nil || !retryable(ctx, err) {
				return err
			}
			// The connection broke. Resume with what is left; a message
			// that breaks it every time is fetched alone, then skipped.
			if len(p.handled) > before {
				stuck = 0
			} else {
				stuck++
			}
			switch {
			case !single && stuck >= 2:
				single, stuck = true, 0
			case single && stuck >= 3:
				for _, uid := range batch {
					if !p.handled[uid] {
						r.pass.Fail(failID(uid), fmt.Errorf("mailbox %q uid %d: the connection broke every time the message was fetched: %w", p.name, uid, err))
						p.handled[uid] = true
						r.lost = 0
						break
					}
				}
				stuck = 0
			}
			return err
		})
		if err != nil {
			return err
		}
		for _, uid := range batch {
			if ids := p.ids[uid]; len(ids) > 0 {
				if err := r.maps.set(ctx, p.name, p.cur.UIDValidity, uid, ids); err != nil {
					return &putError{err}
				}
				p.known = append(p.known, uid)
			}
		}
		p.cur.LastUID = max(p.cur.LastUID, batch[n-1])
		p.next += n
		if *budget > 0 {
			*budget -= n
		}
		if err := r.save(ctx, p); err != nil {
			return err
		}
	}
	p.done = true
	// Every UID below UIDNEXT at EXAMINE was considered.
	if p.uidnext > 0 {
		p.cur.LastUID = max(p.cur.LastUID, p.uidnext-1)
	}
	p.cur.SinceUntil, p.cur.SinceDate = 0, time.Time{}
	return r.save(ctx, p)
}

// save writes the changed uid maps, then the cursor: a crash between the
// two leaves map entries the cursor does not know, which are harmless.
func (r *run) save(ctx context.Context, p *plan) error {
	if p.cur.SinceUntil != 0 && p.cur.LastUID+1 >= p.cur.SinceUntil {
		p.cur.SinceUntil, p.cur.SinceDate = 0, time.Time{}
	}
	p.cur.Known = formatUIDs(p.known)
	if err := r.maps.flush(ctx); err != nil {
		return &putError{err}
	}
	if err := saveCursor(ctx, r.pass, p.name, p.cur); err != nil {
		return &putError{err}
	}
	return nil
}

func failID(uid uint32) string { return "uid:" + strconv.FormatUint(uint64(uid), 10) }

// fetchBatch fetches the batch's UIDs not yet handled, all in one UID
// FETCH or (single) one per command.
func (r *run) fetchBatch(ctx context.Context, c *conn, p *plan, batch []uint32, single bool) error {
	sel, err := c.examine(ctx, p.name)
	if err != nil {
		return err
	}
	if sel.UIDValidity != p.cur.UIDValidity {
		return errUIDValidityChanged
	}
	var todo []uint32
	for _, uid := range batch {
		if !p.handled[uid] {
			todo = append(todo, uid)
		}
	}
	groups := [][]uint32{todo}
	if single {
		groups = groups[:0]
		for _, uid := range todo {
			groups = append(groups, []uint32{uid})
		}
	}
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		if err := r.fetchUIDs(ctx, c, p, g); err != nil {
			return err
		}
		// UIDs the server did not return were expunged meanwhile.
		for _, uid := range g {
			p.handled[uid] = true
		}
	}
	return nil
}

var fetchOptions = &imap.FetchOptions{
	UID:          true,
	InternalDate: true,
	RFC822Size:   true,
	Envelope:     true,
	BodySection:  []*imap.FetchItemBodySection{{Peek: true}},
}

// fetchUIDs runs one UID FETCH and handles each message as it arrives.
func (r *run) fetchUIDs(ctx context.Context, c *conn, p *plan, uids []uint32) error {
	var set imap.UIDSet
	for _, u := range uids {
		set.AddNum(imap.UID(u))
	}
	kick, done := c.guard(ctx)
	cmd := c.c.Fetch(set, fetchOptions)
	for {
		msg := cmd.Next()
		if msg == nil {
			break
		}
		kick()
		m, err := r.read(msg)
		if err != nil {
			c.c.Close()
			cmd.Close()
			return done(fmt.Errorf("fetch from %q: %w", p.name, err))
		}
		if m.uid == 0 || p.handled[m.uid] {
			continue
		}
		if err := r.handle(ctx, p, m); err != nil {
			c.c.Close() // the pass stops; do not drain the rest
			cmd.Close()
			return done(err)
		}
		p.handled[m.uid] = true
		r.lost = 0
		kick()
	}
	if err := done(cmd.Close()); err != nil {
		return fmt.Errorf("fetch from %q: %w", p.name, err)
	}
	return nil
}

// message is one FETCH response, read.
type message struct {
	uid          uint32
	size         int64
	internalDate time.Time
	envelope     *imap.Envelope
	raw          []byte
	hasBody      bool
	tooLarge     int64 // the body's size when over MaxMessageBytes; not read
}

// read reads one FETCH response. A body over MaxMessageBytes is drained,
// not kept. Errors are the connection's.
func (r *run) read(msg *imapclient.FetchMessageData) (*message, error) {
	max := r.s.cfg.MaxMessageBytes
	if max <= 0 {
		max = mail.DefaultMaxMessageBytes
	}
	m := &message{}
	for {
		item := msg.Next()
		if item == nil {
			return m, nil
		}
		switch item := item.(type) {
		case imapclient.FetchItemDataUID:
			m.uid = uint32(item.UID)
		case imapclient.FetchItemDataRFC822Size:
			m.size = item.Size
		case imapclient.FetchItemDataInternalDate:
			m.internalDate = item.Time
		case imapclient.FetchItemDataEnvelope:
			m.envelope = item.Envelope
		case imapclient.FetchItemDataBodySection:
			if item.Literal == nil {
				continue
			}
			m.hasBody = true
			if n := item.Literal.Size(); n > max {
				m.tooLarge = n
				if _, err := io.Copy(io.Discard, item.Literal); err != nil {
					return nil, err
				}
				continue
			}
			b, err := io.ReadAll(item.Literal)
			if err != nil {
				return nil, err
			}
			m.raw = b
		}
	}
}

// handle turns one fetched message into items and Puts them, or reports
// it with pass.Fail. Only a failing Put is an error.
func (r *run) handle(ctx context.Context, p *plan, m *message) error {
	cfg := r.s.cfg
	switch {
	case m.tooLarge > 0:
		r.pass.Fail(failID(m.uid), ingestd.Errorf(ingestd.ETOOLARGE, "mailbox %q uid %d: message is %d bytes, over max_message_bytes", p.name, m.uid, m.tooLarge))
		return nil
	case !m.hasBody || len(m.raw) == 0:
		r.pass.Fail(failID(m.uid), ingestd.Errorf(ingestd.EINVALID, "mailbox %q uid %d: the server sent no body for a %d-byte message", p.name, m.uid, m.size))
		return nil
	case cfg.SkipAutoGenerated && autoGenerated(m.raw):
		r.s.log.Debug("imap: auto-generated mail skipped", "installation", r.s.installation, "mailbox", p.name, "uid", m.uid)
		return nil
	}
	parsed, err := mail.Parse(m.raw, &mail.Options{MaxMessageBytes: cfg.MaxMessageBytes, MaxAttachmentBytes: cfg.MaxAttachmentBytes})
	if err != nil {
		r.pass.Fail(failID(m.uid), fmt.Errorf("mailbox %q uid %d: %w", p.name, m.uid, err))
		return nil
	}
	if env := m.envelope; env != nil {
		// The server's reading of the header fills what ours left empty.
		if parsed.MessageID == "" {
			parsed.MessageID = env.MessageID
		}
		if parsed.Date.IsZero() {
			parsed.Date = env.Date
		}
	}
	items := messageItems(r.s.installation, fetched{
		mailbox: p.name, uidvalidity: p.cur.UIDValidity, uid: m.uid, raw: m.raw, internalDate: m.internalDate,
	}, parsed)
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.ExternalID)
	}
	if r.put[ids[0]] {
		// The same message in another mailbox (or twice in one) is one
		// document; the first copy met in the pass is the one stored.
		p.ids[m.uid] = ids
		return nil
	}
	for _, it := range items {
		if err := r.pass.Put(ctx, it); err != nil {
			return &putError{fmt.Errorf("put %s: %w", it.ExternalID, err)}
		}
	}
	r.put[ids[0]] = true
	p.ids[m.uid] = ids
	return nil
}

// reconcile tombstones the messages whose UIDs disappeared (and, once a
// rescan is complete, those of the replaced generation that it did not
// find again), unless the same message is still held elsewhere; then it
// drops them from the cursors.
func (r *run) reconcile(ctx context.Context, plans []*plan) error {
	candidates := map[string][]string{} // message id -> its ids, message first
	add := func(ids []string) {
		if len(ids) == 0 {
			return
		}
		have := candidates[ids[0]]
		for _, id := range ids {
			if !contains(have, id) {
				have = append(have, id)
			}
		}
		candidates[ids[0]] = have
	}
	dropStale := map[*plan]bool{}
	for _, p := range plans {
		if p.abandoned || p.unchanged {
			continue
		}
		for _, uid := range p.expunged {
			ids, err := r.maps.get(ctx, p.name, p.cur.UIDValidity, uid)
			if err != nil {
				return err
			}
			add(ids)
		}
		if p.done && len(p.cur.Stale) > 0 {
			dropStale[p] = true
			for _, g := range p.cur.Stale {
				if g.Windowed {
					// The rescan skipped old mail: what it did not see
					// is not known to be gone, so it is kept.
					continue
				}
				for _, uid := range parseUIDs(g.Known) {
					ids, err := r.maps.get(ctx, p.name, g.UIDValidity, uid)
					if err != nil {
						return err
					}
					add(ids)
				}
			}
		}
	}
	if len(candidates) > 0 {
		held := map[string]bool{}
		hold := func(p *plan, uidvalidity uint32, uids []uint32) error {
			for _, uid := range uids {
				ids, err := r.maps.get(ctx, p.name, uidvalidity, uid)
				if err != nil {
					return err
				}
				if len(ids) > 0 {
					held[ids[0]] = true
				}
			}
			return nil
		}
		for _, p := range plans {
			if err := hold(p, p.cur.UIDValidity, minus(p.known, p.expunged)); err != nil {
				return err
			}
			if dropStale[p] {
				continue
			}
			for _, g := range p.cur.Stale {
				if err := hold(p, g.UIDValidity, parseUIDs(g.Known)); err != nil {
					return err
				}
			}
		}
		gone := make([]string, 0, len(candidates))
		for id := range candidates {
			if !held[id] {
				gone = append(gone, id)
			}
		}
		sort.Strings(gone)
		for _, id := range gone {
			ids := candidates[id]
			for i := len(ids) - 1; i >= 0; i-- { // attachments first
				if err := r.pass.Delete(ctx, ids[i]); err != nil {
					return fmt.Errorf("delete %s: %w", ids[i], err)
				}
			}
		}
	}
	for _, p := range plans {
		if p.abandoned || p.unchanged {
			continue
		}
		for _, uid := range p.expunged {
			if err := r.maps.set(ctx, p.name, p.cur.UIDValidity, uid, nil); err != nil {
				return err
			}
		}
		p.known = minus(p.known, p.expunged)
		if dropStale[p] {
			for _, g := range p.cur.Stale {
				for _, uid := range parseUIDs(g.Known) {
					if err := r.maps.set(ctx, p.name, g.UIDValidity, uid, nil); err != nil {
						return err
					}
				}
			}
			p.cur.Stale = nil
		}
		if p.done && len(p.cur.Stale) == 0 {
			p.cur.UIDNext, p.cur.Exists = p.uidnext, p.exists
		}
		if err := r.save(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
