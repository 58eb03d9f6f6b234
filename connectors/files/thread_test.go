package files_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/files"
)

// reply is a message with the thread headers given ("" leaves one out).
func reply(id, inReplyTo, references string) []byte {
	h := "From: a@example.net\r\nTo: support@example.com\r\nSubject: s\r\nDate: Tue, 04 Jun 2024 09:00:00 +0000\r\n"
	if id != "" {
		h += "Message-ID: " + id + "\r\n"
	}
	if inReplyTo != "" {
		h += "In-Reply-To: " + inReplyTo + "\r\n"
	}
	if references != "" {
		h += "References: " + references + "\r\n"
	}
	return []byte(h + "\r\nbody of " + id + "\r\n")
}

// TestSync_EmlThreadLinks: .eml files of a files installation link to the
// files of their thread as the imap connector links mail — "reply" to the
// message In-Reply-To names, "thread" to the rest of References — by the
// paths those messages are stored under, wherever they are in the tree.
// Before, a files installation stored no links, so expansion never
// followed a thread that arrived as files.
func TestSync_EmlThreadLinks(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, root, "t/01.eml", reply("<first@Example.NET>", "", ""))
	mustWrite(t, root, "t/02.eml", reply("<second@example.net>", "<first@example.net>", "<first@example.net>"))
	// Folded References, a domain in another case, a reference to a
	// message the folder does not hold, and one to itself.
	mustWrite(t, root, "other/03.eml", reply("<third@example.net>", "<second@EXAMPLE.net>",
		"<first@example.net>\r\n <gone@example.net> <second@example.net> <third@example.net>"))
	// The same Message-ID twice: the first path in lexical order keeps it.
	mustWrite(t, root, "t/04-dup.eml", reply("<second@example.net>", "", ""))
	mustWrite(t, root, "t/05.eml", reply("", "<nowhere@example.net>", ""))
	mustWrite(t, root, "notes.md", []byte("# Notes\n\nIn-Reply-To: <first@example.net>\n"))

	want := map[string][]ingestd.ItemLink{
		"t/01.eml": nil,
		"t/02.eml": {{ToExternalID: "t/01.eml", Relation: "reply"}},
		"other/03.eml": {
			{ToExternalID: "t/02.eml", Relation: "reply"},
			{ToExternalID: "t/01.eml", Relation: "thread"},
		},
		"t/04-dup.eml": nil,
		"t/05.eml":     nil,
		"notes.md":     nil,
	}
	src := MustSource(t, "mail", "root: "+quote(root))
	rec := MustSync(t, src)
	for id, links := range want {
		if got := rec.MustPut(t, id).Links; !reflect.DeepEqual(got, links) {
			t.Errorf("sync: %s links = %v, want %v", id, got, links)
		}
		// Ingesting one file links it as the sync does.
		items, err := src.(*files.Source).ReadItems(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := items[0].Links; !reflect.DeepEqual(got, links) {
			t.Errorf("read one: %s links = %v, want %v", id, got, links)
		}
	}
}

// TestSync_EmlThreadExcluded: a message in an excluded folder is not in
// the thread index, so nothing links to a document that is not stored.
func TestSync_EmlThreadExcluded(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, root, "archive/01.eml", reply("<first@example.net>", "", ""))
	mustWrite(t, root, "inbox/02.eml", reply("<second@example.net>", "<first@example.net>", ""))
	rec := MustSync(t, MustSource(t, "mail", fmt.Sprintf("root: %s\nexclude: [\"archive/**\"]", quote(root))))
	if got := rec.MustPut(t, "inbox/02.eml").Links; len(got) != 0 {
		t.Errorf("links = %v, want none: the message it answers is excluded", got)
	}
}
