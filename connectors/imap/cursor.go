package imap

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
)

// cursor is the sync state of one mailbox, stored as JSON under
// "mailbox:<name>". It is written after every batch that was Put, so a
// pass that dies resumes after the last stored batch.
//
// Known is the set of UIDs (of UIDValidity) whose message was Put; the
// external ids they were Put as live in uid maps (see segmentKey), read
// only when a UID disappears. Known stays small in practice: UIDs come in
// runs, and it is written as ranges ("1:4000,4002:5000"). No UID is ever
// dropped from it except by an expunge, so reconciliation reaches back to
// the first message ever synced.
type cursor struct {
	UIDValidity uint32 `json:"uidvalidity"`
	LastUID     uint32 `json:"last_uid"`
	Known       string `json:"known,omitempty"`
	// UIDNext and Exists are what EXAMINE said when the mailbox was last
	// synced to the end and reconciled; while both still hold, no message
	// was added or expunged since and the pass skips the mailbox.
	UIDNext uint32 `json:"uidnext,omitempty"`
	Exists  uint32 `json:"exists,omitempty"`
	// SinceUntil and SinceDate bound a windowed first sync or rescan:
	// UIDs below SinceUntil are fetched only when their INTERNALDATE is
	// on or after SinceDate. Cleared once LastUID passes SinceUntil.
	SinceUntil uint32    `json:"since_until,omitempty"`
	SinceDate  time.Time `json:"since_date,omitzero"`
	// Stale lists earlier UIDVALIDITY generations whose messages are
	// being re-read under the new one; their ids are reconciled when the
	// rescan reaches the end.
	Stale []generation `json:"stale,omitempty"`
}

// generation is the Known set of an earlier UIDVALIDITY.
type generation struct {
	UIDValidity uint32 `json:"uidvalidity"`
	Known       string `json:"known,omitempty"`
	// Windowed says the rescan replacing this generation skipped old
	// messages, so what it did not see is not known to be gone.
	Windowed bool `json:"windowed,omitempty"`
}

func cursorKey(mailbox string) string { return "mailbox:" + mailbox }

// segmentKey names one uid map: a JSON object from UID to the external
// ids Put for it (the message's first, its attachments' after), for the
// UIDs uid/segmentSize of one mailbox generation. A map holds at most
// segmentSize entries, so no cursor value grows with the mailbox.
func segmentKey(mailbox string, uidvalidity, uid uint32) string {
	return fmt.Sprintf("uidmap:%d:%d:%s", uidvalidity, uid/segmentSize, mailbox)
}

const segmentSize = 1024

func loadCursor(ctx context.Context, pass ingestd.Pass, mailbox string) (cursor, error) {
	var c cursor
	v, err := pass.Cursor(ctx, cursorKey(mailbox))
	if err != nil {
		return c, fmt.Errorf("load cursor of %q: %w", mailbox, err)
	}
	if v == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		// A cursor this build cannot read: start over. The rescan
		// re-Puts what is stored (unchanged, so nothing is written).
		return cursor{}, nil
	}
	return c, nil
}

func saveCursor(ctx context.Context, pass ingestd.Pass, mailbox string, c cursor) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := pass.SetCursor(ctx, cursorKey(mailbox), string(b)); err != nil {
		return fmt.Errorf("save cursor of %q: %w", mailbox, err)
	}
	return nil
}

// uidMaps caches the uid maps read or written in one pass.
type uidMaps struct {
	pass  ingestd.Pass
	m     map[string]map[uint32][]string
	dirty map[string]bool
}

func newUIDMaps(pass ingestd.Pass) *uidMaps {
	return &uidMaps{pass: pass, m: map[string]map[uint32][]string{}, dirty: map[string]bool{}}
}

func (u *uidMaps) segment(ctx context.Context, key string) (map[uint32][]string, error) {
	if seg, ok := u.m[key]; ok {
		return seg, nil
	}
	seg := map[uint32][]string{}
	v, err := u.pass.Cursor(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", key, err)
	}
	if v != "" {
		if err := json.Unmarshal([]byte(v), &seg); err != nil {
			seg = map[uint32][]string{}
		}
	}
	u.m[key] = seg
	return seg, nil
}

func (u *uidMaps) get(ctx context.Context, mailbox string, uidvalidity, uid uint32) ([]string, error) {
	seg, err := u.segment(ctx, segmentKey(mailbox, uidvalidity, uid))
	if err != nil {
		return nil, err
	}
	return seg[uid], nil
}

func (u *uidMaps) set(ctx context.Context, mailbox string, uidvalidity, uid uint32, ids []string) error {
	key := segmentKey(mailbox, uidvalidity, uid)
	seg, err := u.segment(ctx, key)
	if err != nil {
		return err
	}
	if ids == nil {
		delete(seg, uid)
	} else {
		seg[uid] = ids
	}
	u.dirty[key] = true
	return nil
}

// flush writes the changed maps; an emptied map is written as "".
func (u *uidMaps) flush(ctx context.Context) error {
	keys := make([]string, 0, len(u.dirty))
	for k := range u.dirty {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := ""
		if seg := u.m[k]; len(seg) > 0 {
			b, err := json.Marshal(seg)
			if err != nil {
				return err
			}
			v = string(b)
		}
		if err := u.pass.SetCursor(ctx, k, v); err != nil {
			return fmt.Errorf("save %s: %w", k, err)
		}
		delete(u.dirty, k)
	}
	return nil
}

// formatUIDs writes ascending UIDs as IMAP ranges: "1:3,7,9:10".
func formatUIDs(uids []uint32) string {
	var b strings.Builder
	for i := 0; i < len(uids); {
		j := i
		for j+1 < len(uids) && uids[j+1] == uids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(uint64(uids[i]), 10))
		if j > i {
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(uint64(uids[j]), 10))
		}
		i = j + 1
	}
	return b.String()
}

// parseUIDs reads what formatUIDs wrote, ascending and without
// duplicates. Malformed pieces are skipped.
func parseUIDs(s string) []uint32 {
	var out []uint32
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, ":")
		a, err := strconv.ParseUint(lo, 10, 32)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 32); err != nil || b < a {
				continue
			}
		}
		for u := a; u <= b; u++ {
			out = append(out, uint32(u))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return dedupe(out)
}

func dedupe(s []uint32) []uint32 {
	if len(s) < 2 {
		return s
	}
	out := s[:1]
	for _, u := range s[1:] {
		if u != out[len(out)-1] {
			out = append(out, u)
		}
	}
	return out
}

// minus returns the UIDs of a not in b; both ascending.
func minus(a, b []uint32) []uint32 {
	var out []uint32
	j := 0
	for _, u := range a {
		for j < len(b) && b[j] < u {
			j++
		}
		if j < len(b) && b[j] == u {
			continue
		}
		out = append(out, u)
	}
	return out
}
