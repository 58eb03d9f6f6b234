package imap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Identity of a message.
//
// A Message-ID is the sender's word, and senders reuse it: mailers with
// bugs, templates sent twice, test suites, and anyone who wants a stored
// message replaced by their own. So a message's external id is its
// Message-ID (normalised, see MessageExternalID) plus its content: the
// first content met with a Message-ID in an installation keeps the bare id
// "<id>"; every other content with that Message-ID is
// "<id>#sha256:<fingerprint>" (mail.Fingerprint: the author's header
// fields and the body, not the transport fields). So
//
//   - two deliveries of one message (another Received chain, a copy in
//     another mailbox, a rescan after a UIDVALIDITY change) are one
//     document, and
//   - two different messages are two documents, whatever their
//     Message-ID says; a later one can never overwrite an earlier one.
//
// Which content holds the bare id is recorded per Message-ID in a cursor
// ("msgid:<hash>", a JSON list of fingerprints, bare first), written with
// the batch's cursor, so it survives restarts and rescans and never
// depends on the order of a later pass. Entries are never dropped: the
// bare id keeps meaning the same content after it was expunged, so a
// message restored later comes back under its old id.
//
// A message without a Message-ID keeps the id of earlier versions: a hash
// of its bytes (contentExternalID). Copies and rescans are byte-identical,
// so they stay one document; two deliveries differ in their transport
// fields and become two, which loses nothing.
//
// Upgrading from the versions that used the bare Message-ID for every
// content: their documents keep their ids, nothing is re-ingested. On the
// first pass of this version the uid maps of every synced mailbox are read
// once and each stored bare id is recorded, with the UIDs it was Put from,
// in legacy buckets ("legacy-msgid:<3 hex>"). When a new message brings one
// of those Message-IDs, the recorded UIDs are fetched once (while their
// mailbox still has the same UIDVALIDITY) to learn the stored content's
// fingerprint: a second delivery of it keeps the bare id, other content
// gets its own. When none of them can be fetched (a rescan under a new
// UIDVALIDITY, or all expunged), the first content met keeps the bare id —
// in a rescan that is the stored message read again.
const identityVersion = 1

// identityKey marks the installation as migrated to content identity.
const identityKey = "identity"

// maxReplyLinks bounds the documents a reply links to for its
// In-Reply-To: a Message-ID reused a thousand times must not make every
// reply to it a thousand links. The bare id comes first.
const maxReplyLinks = 16

type identityMarker struct {
	Version int  `json:"version"`
	Legacy  bool `json:"legacy,omitempty"` // legacy buckets were written
}

// holder is one UID a legacy bare id was Put from.
type holder struct {
	Mailbox     string `json:"m"`
	UIDValidity uint32 `json:"v"`
	UID         uint32 `json:"u"`
}

// identities resolves message ids within one pass and keeps the
// per-Message-ID entries it read or changed.
type identities struct {
	pass    cursorStore
	entries map[string][]string // message id -> fingerprints, bare first; nil slice: settled, none yet
	known   map[string]bool     // message ids whose entry was read (present or not)
	dirty   map[string]bool
	legacy  bool
	buckets map[string]map[string][]holder
	pending map[string][]holder // message ids waiting for their holders to be read
}

// cursorStore is the part of ingestd.Pass identities use.
type cursorStore interface {
	Cursor(ctx context.Context, key string) (string, error)
	SetCursor(ctx context.Context, key, value string) error
}

func newIdentities(pass cursorStore) *identities {
	return &identities{
		pass:    pass,
		entries: map[string][]string{},
		known:   map[string]bool{},
		dirty:   map[string]bool{},
		buckets: map[string]map[string][]holder{},
		pending: map[string][]holder{},
	}
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func entryKey(messageID string) string  { return "msgid:" + hashHex(messageID)[:32] }
func bucketKey(messageID string) string { return "legacy-msgid:" + hashHex(messageID)[:3] }

// variantID is the external id of the content with the fingerprint under
// the message id, given its position in the entry.
func variantID(messageID, fp string, i int) string {
	if i == 0 {
		return messageID
	}
	return messageID + "#sha256:" + fp
}

// isBareMessageID reports whether an external id is a bare Message-ID
// (what earlier versions stored every message under).
func isBareMessageID(id string) bool {
	return strings.HasPrefix(id, "<") && strings.HasSuffix(id, ">") && !strings.Contains(id, ">#")
}

// entry returns the fingerprints recorded for the message id, and whether
// there is an entry.
func (ids *identities) entry(ctx context.Context, messageID string) ([]string, bool, error) {
	if ids.known[messageID] {
		fps, ok := ids.entries[messageID]
		return fps, ok, nil
	}
	v, err := ids.pass.Cursor(ctx, entryKey(messageID))
	if err != nil {
		return nil, false, fmt.Errorf("load identity of %s: %w", messageID, err)
	}
	ids.known[messageID] = true
	if v == "" {
		return nil, false, nil
	}
	var fps []string
	if err := json.Unmarshal([]byte(v), &fps); err != nil {
		// Unreadable: treat as settled with nothing known; the first
		// content met takes the bare id again.
		fps = []string{}
	}
	if fps == nil {
		fps = []string{}
	}
	ids.entries[messageID] = fps
	return fps, true, nil
}

func (ids *identities) set(messageID string, fps []string) {
	if fps == nil {
		fps = []string{}
	}
	ids.entries[messageID] = fps
	ids.known[messageID] = true
	ids.dirty[messageID] = true
}

// holders returns the legacy holders recorded for the message id.
func (ids *identities) holders(ctx context.Context, messageID string) ([]holder, error) {
	if !ids.legacy {
		return nil, nil
	}
	key := bucketKey(messageID)
	b, ok := ids.buckets[key]
	if !ok {
		v, err := ids.pass.Cursor(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", key, err)
		}
		b = map[string][]holder{}
		if v != "" {
			if err := json.Unmarshal([]byte(v), &b); err != nil {
				b = map[string][]holder{}
			}
		}
		ids.buckets[key] = b
	}
	return b[messageID], nil
}

// identify returns the external id of the content with fingerprint fp
// under the message id, recording a new content. When the message id was
// stored by an earlier version and its stored content is not known yet,
// it returns "" and the holders to read first (reachable reports whether
// a holder can still be fetched; one that cannot is not returned). The
// caller reads them and calls settle, then identify again.
func (ids *identities) identify(ctx context.Context, messageID, fp string, reachable func(holder) bool) (string, []holder, error) {
	fps, ok, err := ids.entry(ctx, messageID)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		hs, err := ids.holders(ctx, messageID)
		if err != nil {
			return "", nil, err
		}
		var live []holder
		for _, h := range hs {
			if reachable(h) {
				live = append(live, h)
			}
		}
		if len(live) > 0 {
			ids.pending[messageID] = live
			return "", live, nil
		}
		fps = nil // nothing stored, or nothing left to compare with
	}
	for i, f := range fps {
		if f == fp {
			return variantID(messageID, fp, i), nil, nil
		}
	}
	fps = append(fps, fp)
	ids.set(messageID, fps)
	return variantID(messageID, fp, len(fps)-1), nil, nil
}

// settle records what the legacy holders of a pending message id hold, in
// holder order (the first holder's content keeps the bare id); an empty
// list means none could be read, and the next content met takes it.
func (ids *identities) settle(messageID string, holderFPs []string) {
	var fps []string
	for _, f := range holderFPs {
		if f != "" && !contains(fps, f) {
			fps = append(fps, f)
		}
	}
	ids.set(messageID, fps)
	delete(ids.pending, messageID)
}

// variants returns the external ids of every content stored under the
// message id, bare first, at most maxReplyLinks; just the bare id when
// none is recorded (the message may arrive later, or was stored by an
// earlier version).
func (ids *identities) variants(ctx context.Context, messageID string) ([]string, error) {
	fps, _, err := ids.entry(ctx, messageID)
	if err != nil {
		return nil, err
	}
	out := []string{messageID}
	for i := 1; i < len(fps) && len(out) < maxReplyLinks; i++ {
		out = append(out, variantID(messageID, fps[i], i))
	}
	return out, nil
}

// flush writes the changed entries.
func (ids *identities) flush(ctx context.Context) error {
	keys := make([]string, 0, len(ids.dirty))
	for id := range ids.dirty {
		keys = append(keys, id)
	}
	sort.Strings(keys)
	for _, id := range keys {
		b, err := json.Marshal(ids.entries[id])
		if err != nil {
			return err
		}
		if err := ids.pass.SetCursor(ctx, entryKey(id), string(b)); err != nil {
			return fmt.Errorf("save identity of %s: %w", id, err)
		}
		delete(ids.dirty, id)
	}
	return nil
}

// migrate runs once per installation, on its first pass with content
// identity: it records every bare id the uid maps of the plans' mailboxes
// (every generation) hold, with the UIDs it was Put from, in legacy
// buckets; then it writes the marker. Later passes only read the marker.
// A crash before the marker is written runs it again from the start.
func (ids *identities) migrate(ctx context.Context, plans []*plan, maps *uidMaps) error {
	v, err := ids.pass.Cursor(ctx, identityKey)
	if err != nil {
		return fmt.Errorf("load %s: %w", identityKey, err)
	}
	if v != "" {
		var m identityMarker
		if err := json.Unmarshal([]byte(v), &m); err == nil {
			ids.legacy = m.Legacy
			return nil
		}
	}
	buckets := map[string]map[string][]holder{}
	add := func(mailbox string, uidvalidity uint32, uids []uint32) error {
		for _, uid := range uids {
			got, err := maps.get(ctx, mailbox, uidvalidity, uid)
			if err != nil {
				return err
			}
			if len(got) == 0 || !isBareMessageID(got[0]) {
				continue
			}
			key := bucketKey(got[0])
			if buckets[key] == nil {
				buckets[key] = map[string][]holder{}
			}
			buckets[key][got[0]] = append(buckets[key][got[0]], holder{Mailbox: mailbox, UIDValidity: uidvalidity, UID: uid})
		}
		return nil
	}
	for _, p := range plans {
		if p.cur.UIDValidity != 0 {
			if err := add(p.name, p.cur.UIDValidity, p.known); err != nil {
				return err
			}
		}
		for _, g := range p.cur.Stale {
			if err := add(p.name, g.UIDValidity, parseUIDs(g.Known)); err != nil {
				return err
			}
		}
	}
	keys := make([]string, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, err := json.Marshal(buckets[k])
		if err != nil {
			return err
		}
		if err := ids.pass.SetCursor(ctx, k, string(b)); err != nil {
			return fmt.Errorf("save %s: %w", k, err)
		}
	}
	ids.legacy = len(buckets) > 0
	ids.buckets = buckets
	b, _ := json.Marshal(identityMarker{Version: identityVersion, Legacy: ids.legacy})
	if err := ids.pass.SetCursor(ctx, identityKey, string(b)); err != nil {
		return fmt.Errorf("save %s: %w", identityKey, err)
	}
	return nil
}
