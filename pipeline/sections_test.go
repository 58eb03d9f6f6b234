package pipeline_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

// TestUnsectionedDocumentsKeepHashAndChunkIDs: a document without
// sections is stored with the content hash and chunk ids it had before
// sections existed (the values below were recorded from that code), so an
// upgrade finds every stored document unchanged and re-embeds nothing.
func TestUnsectionedDocumentsKeepHashAndChunkIDs(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		item   ingestd.Item
		hash   string
		chunks []string
	}{
		{
			item: ingestd.Item{ExternalID: "guide.md", ItemKind: "file", URI: "files://handbook/guide.md", Title: "Guide",
				UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Format: ingestd.FormatMarkdown,
				Text: "# Guide\n\nRefunds go back to the original payment method.\n\n## Steps\n\n1. Find the order.\n2. Press refund.\n\nRefunds go back to the original payment method.",
				Meta: map[string]string{"path": "guide.md", "size": "150"}},
			hash:   "82bd81d0348e678c6ec2de9c3293f2df872887f40752d005cbeda2477708e9e6",
			chunks: []string{"c286f1ff2e239adc38432089d", "c41282918ac47de055969500f"},
		},
		{
			item: ingestd.Item{ExternalID: "<m1@example.com>", ItemKind: "mail", URI: "imap://support/INBOX;uidvalidity=1/;uid=7", Title: "Re: order",
				Author: "Dana <dana@example.net>", CreatedAt: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC), Format: ingestd.FormatMail,
				Text:  "Thanks, that worked.\n\nOn Mon, Dana wrote:\n> Where is my order?",
				Meta:  map[string]string{"mailbox": "INBOX", "uid": "7"},
				Links: []ingestd.ItemLink{{ToExternalID: "<m0@example.com>", Relation: "reply"}}},
			hash:   "8da99873ae45770538f25e51d4cabf60052587a039d83efd04c3d0d6b7544495",
			chunks: []string{"c6a9c793167e6467a65174e65"},
		},
	} {
		f := mustPipeline(t)
		if _, err := f.pipe.Ingest(ctx, handbook, tt.item); err != nil {
			t.Fatal(err)
		}
		id := ingestd.DocumentID(handbook.ID, tt.item.ExternalID)
		d, err := f.store.Document(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.ContentHash != tt.hash {
			t.Errorf("%s: content hash %s, want %s as before sections", tt.item.ExternalID, d.ContentHash, tt.hash)
		}
		cs, err := f.store.DocumentChunks(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
			if c.Locator != "" {
				t.Errorf("%s: chunk %s has locator %q", tt.item.ExternalID, c.ID, c.Locator)
			}
		}
		if !slices.Equal(ids, tt.chunks) {
			t.Errorf("%s: chunk ids %q, want %q as before sections", tt.item.ExternalID, ids, tt.chunks)
		}
	}
}

// TestSectionsBecomeChunksWithLocators: an item with sections is chunked
// page by page, each chunk stored with its page's locator; a change of a
// locator alone is a change of content; text and sections together are
// refused.
func TestSectionsBecomeChunksWithLocators(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	item := ingestd.Item{ExternalID: "handbook.pdf", Title: "Handbook", Format: ingestd.FormatMarkdown,
		Sections: []ingestd.Section{
			{Locator: "p. 1", Text: "# Refunds\n\nRefunds go back to the card that paid."},
			{Locator: "p. 2", Text: "Never to an account named in a message."},
			{Locator: "p. 3", Text: "## Contacts\n\nAsk the shift lead.\x00"},
		}}
	if o, err := f.pipe.Ingest(ctx, handbook, item); err != nil || o != "added" {
		t.Fatalf("ingest = %s, %v", o, err)
	}
	id := ingestd.DocumentID(handbook.ID, item.ExternalID)
	cs, err := f.store.DocumentChunks(ctx, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Locator+"|"+strings.Join(c.HeadingPath, "/")+"|"+c.Text)
	}
	want := []string{
		"p. 1|Refunds|# Refunds\n\nRefunds go back to the card that paid.",
		"p. 2|Refunds|Never to an account named in a message.",
		"p. 3|Refunds/Contacts|## Contacts\n\nAsk the shift lead.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("chunks\n%q\nwant\n%q", got, want)
	}

	if o, err := f.pipe.Ingest(ctx, handbook, item); err != nil || o != "unchanged" {
		t.Fatalf("same sections again = %s, %v; want unchanged", o, err)
	}
	moved := item
	moved.Sections = slices.Clone(item.Sections)
	moved.Sections[1].Locator = "p. 2a"
	if o, err := f.pipe.Ingest(ctx, handbook, moved); err != nil || o != "changed" {
		t.Fatalf("a new locator = %s, %v; want changed", o, err)
	}
	cs, err = f.store.DocumentChunks(ctx, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs[1].Locator; got != "p. 2a" {
		t.Fatalf("chunk 1 locator after the change = %q", got)
	}

	both := item
	both.ExternalID, both.Text = "both.pdf", "text too"
	if _, err := f.pipe.Ingest(ctx, handbook, both); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("text and sections: err = %v, want EINVALID", err)
	}
}

// TestSectionsTravelInAJob: an item with sections, as a sync pass
// publishes it for the workers (a JSON job), is stored with its locators.
func TestSectionsTravelInAJob(t *testing.T) {
	f := mustPipeline(t)
	item := ingestd.Item{ExternalID: "notes.odt", Format: ingestd.FormatMarkdown, Sections: []ingestd.Section{
		{Locator: "", Text: "Before any heading."},
		{Locator: "Notes > Steps", Text: "## Steps\n\nPress refund."},
	}}
	b, err := json.Marshal(ingestd.Job{Kind: ingestd.JobItem, Installation: handbook.ID, Item: &item})
	if err != nil {
		t.Fatal(err)
	}
	var job ingestd.Job
	if err := json.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	if err := f.pipe.Handle(context.Background(), job, oneInstallation(handbook)); err != nil {
		t.Fatal(err)
	}
	cs, err := f.store.DocumentChunks(context.Background(), []string{ingestd.DocumentID(handbook.ID, item.ExternalID)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Locator)
	}
	if want := []string{"", "Notes > Steps"}; !slices.Equal(got, want) {
		t.Fatalf("locators %q, want %q", got, want)
	}
}
