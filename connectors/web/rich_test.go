package web

import (
	"archive/zip"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	rich "github.com/ingestd/ingestd/connectors/internal/extract"
)

// TestRichDocuments: a url installation reads a DOCX served as one and a
// PDF served as application/octet-stream (known by its first bytes) into
// sections with their heading paths and pages, through the same guard
// and caps as a page; a zip that is neither is refused by its content
// type before its body is read, a PDF over extract.max_pages is failed
// naming the limit, and a second pass revalidates the documents (304)
// and writes nothing.
func TestRichDocuments(t *testing.T) {
	docx := readFixture(t, "rich/handbook.docx")
	pdf := readFixture(t, "rich/notes.pdf")
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	if w, err := zw.Create("data.csv"); err != nil {
		t.Fatal(err)
	} else {
		w.Write([]byte("a,b\n1,2\n"))
	}
	zw.Close()
	site := MustSite(t, map[string]sitePage{
		"/":                    htmlPage("Docs", `<p>The <a href="/files/handbook.docx">handbook</a> and <a href="/files/notes">notes</a>.</p>`),
		"/files/handbook.docx": {ctype: rich.MediaTypeDOCX, body: docx},
		"/files/notes":         {ctype: "application/octet-stream", body: pdf},
		"/files/data.zip":      {ctype: "application/zip", body: zipped.String()},
	})
	cfg := Config{URLs: []string{site.URL + "/", site.URL + "/files/data.zip"}, Crawl: CrawlConfig{Depth: 1}, AllowPrivateNetworks: true}
	src := MustSource(t, ingestd.TierTrustedInternal, cfg, nil)
	p := newPass(nil)
	MustSync(t, src, p)

	d := p.MustPut(t, site.URL+"/files/handbook.docx")
	var locs []string
	for _, s := range d.Sections {
		locs = append(locs, s.Locator)
	}
	if !slices.Contains(locs, "Support Handbook > Refunds > Steps") || d.Text != "" || d.Format != ingestd.FormatMarkdown {
		t.Errorf("handbook.docx: locators %q, text %q, format %q", locs, d.Text, d.Format)
	}
	if d.Title != "Support Handbook" || d.ItemKind != "page" || d.Meta["format"] != "docx" || d.Meta["content_type"] != rich.MediaTypeDOCX {
		t.Errorf("handbook.docx = %+v", d)
	}
	n := p.MustPut(t, site.URL+"/files/notes")
	if len(n.Sections) != 2 || n.Sections[1].Locator != "p. 2" || n.Meta["format"] != "pdf" || n.Meta["pages"] != "2" {
		t.Errorf("notes (a PDF sent as octet-stream) = %+v", n)
	}
	err := p.Fails()[site.URL+"/files/data.zip"]
	if err == nil || !strings.Contains(err.Error(), "content type application/zip is not one of") || !strings.Contains(err.Error(), "or a PDF, DOCX or ODT document") {
		t.Errorf("a zip that is no document: %v, want its content type refused", err)
	}

	site.takeRequests()
	p2 := p.Next()
	MustSync(t, src, p2)
	if got := p2.PutIDs(); len(got) != 0 {
		t.Errorf("second pass put %q, want nothing (304s)", got)
	}

	cfg.Extract.MaxPages = 1
	p3 := newPass(nil)
	MustSync(t, MustSource(t, ingestd.TierTrustedInternal, cfg, nil), p3)
	if err := p3.Fails()[site.URL+"/files/notes"]; err == nil || !strings.Contains(err.Error(), "MaxPages") {
		t.Errorf("max_pages 1: the 2-page PDF failed with %v, want the MaxPages limit", err)
	}
}

// TestFetchRichDocument: one URL submitted at run time (ingestd ingest,
// the admin route) that is a DOCX is read like a crawled one; one over
// max_bytes is refused by the cap, before anything reads it.
func TestFetchRichDocument(t *testing.T) {
	docx := readFixture(t, "rich/handbook.docx")
	site := MustSite(t, map[string]sitePage{"/handbook.docx": {ctype: rich.MediaTypeDOCX, body: docx}})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/"}, AllowPrivateNetworks: true}, nil)
	items, err := src.Fetch(t.Context(), site.URL+"/handbook.docx")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || len(items[0].Sections) == 0 || items[0].Meta["format"] != "docx" {
		t.Fatalf("items = %+v", items)
	}
	small := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/"}, AllowPrivateNetworks: true, MaxBytes: int64(len(docx) - 1)}, nil)
	if _, err := small.Fetch(t.Context(), site.URL+"/handbook.docx"); ingestd.ErrorCode(err) != ingestd.ETOOLARGE {
		t.Fatalf("over max_bytes: err = %v, want ETOOLARGE", err)
	}
}
