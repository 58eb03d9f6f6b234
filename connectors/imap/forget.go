package imap

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
)

var _ connectors.Forgetter = forgetter{}

// forgetter drops erased messages from the UID maps, which name every
// message's external id (its Message-ID) in clear. The UID stays in its
// mailbox's Known set, so the message is not fetched again while the
// mailbox keeps it; if it is (a rescan under a new UIDVALIDITY), the
// pipeline refuses it by its tombstone.
//
// The per-Message-ID identity entries ("msgid:<hash>") stay: they hold a
// hash of the Message-ID and content fingerprints (SHA-256 hashes), no
// text, and they are what gives a message met again the external id it
// had, which the tombstone is keyed by. Dropping one would let a rescan
// give an erased message another id and bring it back.
type forgetter struct{}

// Forget returns the UID maps that name one of the external ids,
// rewritten without them ("" for a map left empty).
func (forgetter) Forget(ctx context.Context, cursors connectors.CursorLister, externalIDs []string) ([]ingestd.Cursor, error) {
	gone := make(map[string]bool, len(externalIDs))
	for _, id := range externalIDs {
		gone[id] = true
	}
	maps, err := cursors.Cursors(ctx, "uidmap:")
	if err != nil {
		return nil, fmt.Errorf("read uid maps: %w", err)
	}
	var edits []ingestd.Cursor
	for _, c := range maps {
		seg := map[uint32][]string{}
		if c.Value == "" || json.Unmarshal([]byte(c.Value), &seg) != nil {
			continue // empty, or unreadable: the sync starts it over anyway
		}
		changed := false
		for uid, ids := range seg {
			kept := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return gone[id] })
			if len(kept) == len(ids) {
				continue
			}
			changed = true
			if len(kept) == 0 {
				delete(seg, uid)
			} else {
				seg[uid] = kept
			}
		}
		if !changed {
			continue
		}
		v := ""
		if len(seg) > 0 {
			b, err := json.Marshal(seg)
			if err != nil {
				return nil, err
			}
			v = string(b)
		}
		edits = append(edits, ingestd.Cursor{Installation: c.Installation, Key: c.Key, Value: v})
	}
	return edits, nil
}
