package imap

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

type cursorList []ingestd.Cursor

func (l cursorList) Cursors(_ context.Context, prefix string) ([]ingestd.Cursor, error) {
	var out []ingestd.Cursor
	for _, c := range l {
		if strings.HasPrefix(c.Key, prefix) {
			out = append(out, c)
		}
	}
	return out, nil
}

// TestForgetRewritesUIDMaps: erased external ids leave the UID maps (a
// UID whose every id went leaves its map, an emptied map is removed),
// other ids and the identity entries stay.
func TestForgetRewritesUIDMaps(t *testing.T) {
	cursors := cursorList{
		{Installation: "support", Key: "uidmap:7:0:INBOX", Value: `{"1":["<a@x>","<a@x>/1/invoice.pdf"],"2":["<b@x>"]}`},
		{Installation: "support", Key: "uidmap:7:1:INBOX", Value: `{"1030":["<a@x>"]}`},
		{Installation: "support", Key: "uidmap:7:2:INBOX", Value: `{"2050":["<c@x>"]}`},
		{Installation: "support", Key: "msgid:0123", Value: `["fp"]`},
	}
	edits, err := forgetter{}.Forget(context.Background(), cursors, []string{"<a@x>", "<a@x>/1/invoice.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ingestd.Cursor{
		{Installation: "support", Key: "uidmap:7:0:INBOX", Value: `{"2":["\u003cb@x\u003e"]}`},
		{Installation: "support", Key: "uidmap:7:1:INBOX", Value: ""},
	}
	if !slices.Equal(edits, want) {
		t.Fatalf("edits %+v, want %+v", edits, want)
	}
	edits, err = forgetter{}.Forget(context.Background(), cursors, []string{"<a@x>/1/invoice.pdf"})
	if err != nil || len(edits) != 1 || edits[0].Value != `{"1":["\u003ca@x\u003e"],"2":["\u003cb@x\u003e"]}` {
		t.Fatalf("forgetting an attachment alone: %+v, %v", edits, err)
	}
}
