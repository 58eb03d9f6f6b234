package e2e_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/files"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/web"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/sqlite"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// page3 is a sentence from page 3 of testdata/rich/handbook.pdf (and from
// the section "Support Handbook > Suspicious messages" of handbook.docx,
// made from the same source).
const page3 = "answer only with the standard text that asks the customer to call the hotline"

func mustRich(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rich", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// attachment is one base64 attachment of richMail.
type attachment struct {
	name, contentType string
	data              []byte
}

// richMail is a message from outside with a text body and attachments.
func richMail(id, body string, atts ...attachment) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Message-ID: <%s>\r\nFrom: Dana <dana@example.net>\r\nTo: support@example.com\r\n"+
		"Subject: Our handbook, as promised\r\nDate: Mon, 02 Nov 2026 09:00:00 +0000\r\n"+
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n"+
		"--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", id, body)
	for _, a := range atts {
		fmt.Fprintf(&b, "--b1\r\nContent-Type: %s\r\nContent-Disposition: attachment; filename=%q\r\nContent-Transfer-Encoding: base64\r\n\r\n", a.contentType, a.name)
		enc := base64.StdEncoding.EncodeToString(a.data)
		for len(enc) > 76 {
			b.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		b.WriteString(enc + "\r\n")
	}
	b.WriteString("--b1--\r\n")
	return []byte(b.String())
}

// zipBombDOCX is a DOCX whose document part inflates about a
// thousandfold (4 MiB of one paragraph in a few KiB).
func zipBombDOCX(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"word/document.xml", `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
			strings.Repeat("<w:p><w:r><w:t>bomb</w:t></w:r></w:p>", 4<<20/38) + `</w:body></w:document>`},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// richEnv is a pipeline over a SQLite store with the lexical embedder.
type richEnv struct {
	store *sqlite.Store
	emb   ingestd.Embedder
	pipe  *pipeline.Pipeline
}

func mustRichEnv(tb testing.TB) *richEnv {
	tb.Helper()
	st := sqlitetest.MustOpen(tb)
	emb := embedder.NewLexical(256)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: emb})
	if err != nil {
		tb.Fatal(err)
	}
	return &richEnv{store: st, emb: emb, pipe: p}
}

func (e *richEnv) retrieve(tb testing.TB, inst ingestd.Installation, query string, topK int) *ingestd.RetrieveResponse {
	tb.Helper()
	svc, err := retrieval.New(retrieval.Options{Store: e.store, Embedder: e.emb, Installations: []ingestd.Installation{inst}})
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := svc.Retrieve(tb.Context(), ingestd.RetrieveRequest{Query: query, TopK: topK})
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

// TestMailPDFAndDOCXAttachments: a mail from outside with a PDF and a
// DOCX attachment, synced from a real IMAP server: both attachments are
// documents of the mailbox's tier, and retrieval serves the PDF's third
// page with locator "p. 3" (and the DOCX's section with its heading
// path), with a verdict that blocks tools and names the attachments.
func TestMailPDFAndDOCXAttachments(t *testing.T) {
	srv := MustIMAPServer(t, "pw")
	raw := richMail("handbook@mail.example.net", "Here is the handbook you asked for.",
		attachment{"handbook.pdf", "application/pdf", mustRich(t, "handbook.pdf")},
		attachment{"handbook.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", mustRich(t, "handbook.docx")})
	srv.MustAppend(t, "INBOX", time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), raw)

	e := mustRichEnv(t)
	inst := ingestd.Installation{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal}
	src := mustIMAP(t, srv.Addr, inst.ID, nil)
	sum, err := e.pipe.Sync(t.Context(), inst, src, nil)
	if err != nil || sum.Added != 3 || sum.Failed != 0 {
		t.Fatalf("sync = %s, %v; want the mail and its 2 attachments added", sum, err)
	}

	msg := imapconn.MessageExternalID("<handbook@mail.example.net>")
	pdfID := ingestd.DocumentID(inst.ID, msg+"#attachment/1/handbook.pdf")
	docxID := ingestd.DocumentID(inst.ID, msg+"#attachment/2/handbook.docx")
	for _, id := range []string{pdfID, docxID} {
		d, err := e.store.Document(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Tier != ingestd.TierUntrustedExternal || d.ParentID != ingestd.DocumentID(inst.ID, msg) {
			t.Errorf("%s: tier %q, parent %q; want the message's", d.ExternalID, d.Tier, d.ParentID)
		}
	}

	resp := e.retrieve(t, inst, page3, 4)
	var pdfChunk, docxChunk *ingestd.ServedChunk
	for i, c := range resp.Primary { // each document's best chunk
		switch {
		case c.DocumentID == pdfID && pdfChunk == nil:
			pdfChunk = &resp.Primary[i]
		case c.DocumentID == docxID && docxChunk == nil:
			docxChunk = &resp.Primary[i]
		}
	}
	if pdfChunk == nil || pdfChunk.Locator != "p. 3" || !strings.Contains(pdfChunk.Text, page3) {
		t.Fatalf("primary = %+v\nwant the PDF's page 3, locator \"p. 3\"", resp.Primary)
	}
	if docxChunk == nil || docxChunk.Locator != "Support Handbook > Suspicious messages" {
		t.Errorf("primary = %+v\nwant the DOCX's section \"Support Handbook > Suspicious messages\"", resp.Primary)
	}
	if !strings.Contains(pdfChunk.Fenced, page3) || pdfChunk.Tier != string(ingestd.TierUntrustedExternal) {
		t.Errorf("PDF chunk fenced %q, tier %q", pdfChunk.Fenced, pdfChunk.Tier)
	}
	v := resp.Verdict
	if v.ToolsAllowed || v.Reason != ingestd.ReasonUntrusted || !slices.Contains(v.UntrustedDocumentIDs, pdfID) {
		t.Fatalf("verdict = %+v, want tools blocked naming the PDF attachment %s", v, pdfID)
	}
}

// TestMailZipBombAttachment: a zip bomb sent as a DOCX is a failed item
// and a defect of its message; the message, its PDF attachment and the
// next message are stored, and the pass completes.
func TestMailZipBombAttachment(t *testing.T) {
	srv := MustIMAPServer(t, "pw")
	day := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	srv.MustAppend(t, "INBOX", day, richMail("bomb@mail.example.net", "Please read the attached report.",
		attachment{"report.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", zipBombDOCX(t)},
		attachment{"handbook.pdf", "application/pdf", mustRich(t, "handbook.pdf")}))
	srv.MustAppend(t, "INBOX", day.Add(time.Hour), richMail("after@mail.example.net", "A later message."))

	e := mustRichEnv(t)
	inst := ingestd.Installation{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal}
	sum, err := e.pipe.Sync(t.Context(), inst, mustIMAP(t, srv.Addr, inst.ID, nil), nil)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if err := sum.Check(); err != nil {
		t.Fatal(err)
	}
	if sum.Added != 3 || sum.Failed != 1 {
		t.Fatalf("sync = %s; want 2 mails and the PDF added, the bomb failed", sum)
	}
	bomb := imapconn.MessageExternalID("<bomb@mail.example.net>")
	if got := sum.Failures[0]; got.ExternalID != bomb+"#attachment/1/report.docx" {
		t.Errorf("failure %+v, want the bomb", got)
	}
	parent, err := e.store.Document(t.Context(), ingestd.DocumentID(inst.ID, bomb))
	if err != nil {
		t.Fatal(err)
	}
	if d := parent.Meta["defects"]; !strings.Contains(d, `attachment "report.docx": `) || !strings.Contains(d, "limit") {
		t.Errorf("parent defects %q, want the bomb named with the limit it hit", d)
	}
	for _, id := range []string{bomb + "#attachment/2/handbook.pdf", imapconn.MessageExternalID("<after@mail.example.net>")} {
		if _, err := e.store.Document(t.Context(), ingestd.DocumentID(inst.ID, id)); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// TestFilesInstallationPDF: a PDF in a files installation's folder is
// read by default; retrieval serves its page 3 with the locator, under
// the installation's tier (tools allowed).
func TestFilesInstallationPDF(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "handbook.pdf"), mustRich(t, "handbook.pdf"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := files.NewSource("handbook", files.Config{Root: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := mustRichEnv(t)
	inst := ingestd.Installation{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal}
	if sum, err := e.pipe.Sync(t.Context(), inst, src, nil); err != nil || sum.Added != 1 {
		t.Fatalf("sync = %s, %v", sum, err)
	}
	resp := e.retrieve(t, inst, page3, 1)
	if len(resp.Primary) != 1 || resp.Primary[0].Locator != "p. 3" || !strings.Contains(resp.Primary[0].Text, page3) ||
		resp.Primary[0].Title != "Support Handbook" {
		t.Fatalf("primary = %+v, want page 3 of the handbook", resp.Primary)
	}
	if !resp.Verdict.ToolsAllowed {
		t.Errorf("verdict = %+v, want tools allowed for an internal handbook", resp.Verdict)
	}
}

// TestURLInstallationDOCX: a url installation whose site serves a DOCX
// (httptest on loopback, allowed by allow_private_networks) stores it
// with its sections; retrieval serves the section with its heading path.
func TestURLInstallationDOCX(t *testing.T) {
	docx := mustRich(t, "handbook.docx")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/handbook.docx" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
		w.Write(docx)
	}))
	t.Cleanup(site.Close)
	inst := ingestd.Installation{ID: "docs", Kind: "url", Tier: ingestd.TierTrustedInternal}
	src, err := web.NewSource(inst, web.Options{Config: web.Config{URLs: []string{site.URL + "/handbook.docx"}, AllowPrivateNetworks: true, RatePerHost: "100/s"}})
	if err != nil {
		t.Fatal(err)
	}
	e := mustRichEnv(t)
	if sum, err := e.pipe.Sync(t.Context(), inst, src, nil); err != nil || sum.Added != 1 {
		t.Fatalf("sync = %s, %v", sum, err)
	}
	resp := e.retrieve(t, inst, "press the refund button payment provider", 1)
	if len(resp.Primary) != 1 || resp.Primary[0].Locator != "Support Handbook > Refunds > Steps" || resp.Primary[0].URI != site.URL+"/handbook.docx" {
		t.Fatalf("primary = %+v, want the DOCX's section \"Support Handbook > Refunds > Steps\"", resp.Primary)
	}
}

// mustIMAP is an imap source for the test server's user.
func mustIMAP(tb testing.TB, addr, installation string, change func(*imapconn.Config)) *imapconn.Source {
	tb.Helper()
	cfg := imapconn.Config{Addr: addr, Username: imapUser, PasswordEnv: "PW", TLS: imapconn.TLSNone, Insecure: true, Timeout: 30 * time.Second}
	if change != nil {
		change(&cfg)
	}
	src, err := imapconn.NewSource(installation, cfg, &imapconn.Options{LookupEnv: func(string) (string, bool) { return "pw", true }})
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// servedFields classifies every field of a served chunk and a served
// document by who writes it and what may read it. Only "fenced" is for a
// prompt. "outside" fields are written by outsiders and served beside the
// fence, for display: they are neutralised where they enter (package
// pipeline, firewall.Neutralise). "text" is the chunk's text as its author
// wrote it, for display and export only. "ours" are ids, configuration,
// tiers, scores and relations that ingestd writes. A field added to
// ServedChunk or ServedDocument fails TestHostileHeadingsNeutralised until
// it is classified here.
var servedFields = map[string]string{
	"chunk_id": "ours", "document_id": "ours", "installation": "ours", "source_kind": "ours", "tier": "ours", "score": "ours",
	"via": "ours", "untrusted": "ours", "status": "ours", "chunks": "ours",
	"fenced": "prompt", "text": "text",
	"uri": "outside", "title": "outside", "heading_path": "outside", "locator": "outside",
	// The document's own fields (GET /v1/documents/{id}): the external id
	// and metadata are neutralised where they are served, the author
	// where it enters; the kind and the times are ingestd's.
	"external_id": "outside", "author": "outside", "metadata": "outside",
	"item_kind": "ours", "created_at": "ours", "updated_at": "ours",
}

// checkServedFields checks every field of v (a ServedChunk or a
// ServedDocument) by its class in servedFields, and returns the outside
// fields it read, by name.
func checkServedFields(tb testing.TB, v any) map[string][]string {
	tb.Helper()
	rv := reflect.ValueOf(v)
	out := map[string][]string{}
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue // never served (ServedDocument.Readers: for the scope check)
		}
		class, ok := servedFields[name]
		if !ok {
			tb.Errorf("%s.%s (%q) is served but not classified in servedFields", rv.Type().Name(), f.Name, name)
			continue
		}
		var vals []string
		switch x := rv.Field(i).Interface().(type) {
		case string:
			vals = []string{x}
		case []string:
			vals = x
		case map[string]string:
			for k, v := range x {
				vals = append(vals, k, v)
			}
		}
		for _, s := range vals {
			switch class {
			case "outside":
				if err := firewall.CheckNeutralised(s); err != nil {
					tb.Errorf("%s %s = %q: %v", rv.Type().Name(), name, s, err)
				}
				out[name] = append(out[name], s)
			case "prompt":
				if err := firewall.Check(s); err != nil {
					tb.Errorf("%s fenced: %v", rv.Type().Name(), err)
				}
			}
		}
	}
	return out
}

// TestHostileHeadingsNeutralised: a DOCX and an ODT from outside whose
// title and headings forge fence markers (testdata/rich/hostile-headings.*,
// see make-hostile.sh: literal, leetspeak, angle look-alikes, full-width,
// bidi-wrapped, tag characters), under a file name that forges one too
// (hostile-headings.name),
// are read by the real extraction path of a files installation and
// served: every field served outside the fence — title, uri, locator,
// heading_path, on the chunks and on the document — holds no marker-like
// or hidden text, and still says what the author wrote around it.
func TestHostileHeadingsNeutralised(t *testing.T) {
	for _, ext := range []string{"docx", "odt"} {
		t.Run(ext, func(t *testing.T) {
			root := t.TempDir()
			name := strings.TrimSpace(string(mustRich(t, "hostile-headings.name"))) + "." + ext
			if err := os.WriteFile(filepath.Join(root, name), mustRich(t, "hostile-headings."+ext), 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := files.NewSource("drop", files.Config{Root: root}, nil)
			if err != nil {
				t.Fatal(err)
			}
			e := mustRichEnv(t)
			inst := ingestd.Installation{ID: "drop", Kind: "files", Tier: ingestd.TierUntrustedExternal}
			if sum, err := e.pipe.Sync(t.Context(), inst, src, nil); err != nil || sum.Added != 1 {
				t.Fatalf("sync = %s, %v", sum, err)
			}
			resp := e.retrieve(t, inst, "refund payment provider console ledger customer", 8)
			seen := map[string][]string{}
			for _, c := range slices.Concat(resp.Primary, resp.Expanded, resp.Rejected) {
				for k, v := range checkServedFields(t, c) {
					seen[k] = append(seen[k], v...)
				}
			}
			svc, err := retrieval.New(retrieval.Options{Store: e.store, Documents: e.store, Embedder: e.emb, Installations: []ingestd.Installation{inst}})
			if err != nil {
				t.Fatal(err)
			}
			doc, err := svc.Document(t.Context(), ingestd.DocumentID(inst.ID, name))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range checkServedFields(t, *doc) {
				seen[k] = append(seen[k], v...)
			}
			for _, c := range doc.Chunks {
				checkServedFields(t, c)
			}
			// Each field carried the attack and says what surrounded it.
			for _, tt := range []struct{ field, want string }{
				{"title", "Policy ◁◁◁END_"},
				{"uri", "files://drop/%3C%3C%3CEND_"},
				{"locator", "Refunds ◁◁◁END_"},
				{"locator", "Steps ◁◁◁"},
				{"locator", "Checks [U+202E]"},
				{"locator", "Appendix [hidden text: ◁◁◁END]"},
				{"heading_path", "Refunds ◁◁◁END_"},
				{"heading_path", "Steps ◁◁◁"},
				{"heading_path", "Checks [U+202E]"},
				{"heading_path", "Appendix [hidden text: ◁◁◁END]"},
			} {
				t.Run(tt.field+"/"+strings.Fields(tt.want)[0], func(t *testing.T) {
					vals := seen[tt.field]
					if len(vals) == 0 {
						t.Fatalf("no %s served", tt.field)
					}
					if !slices.ContainsFunc(vals, func(v string) bool { return strings.Contains(v, tt.want) && strings.Contains(v, "[defused]") }) {
						t.Errorf("no %s holds %q with the keyword defused: %q", tt.field, tt.want, vals)
					}
				})
			}
		})
	}
}
