package e2e_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/connectors/github"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// Installations of the hostile run: three untrusted intakes and the
// organisation's own handbook beside them.
var (
	instHandbook = ingestd.Installation{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal}
	instFiles    = ingestd.Installation{ID: "inbox-export", Kind: "files", Tier: ingestd.TierUntrustedExternal}
	instIMAP     = ingestd.Installation{ID: "support-imap", Kind: "imap", Tier: ingestd.TierUntrustedExternal}
	instHooks    = ingestd.Installation{ID: "public-repo", Kind: "webhook", Tier: ingestd.TierUntrustedExternal}
)

// handbookPages are trusted text that shares the attacks' vocabulary
// (transfer, tool, refund, email), so retrieval has trusted candidates to
// mix in and the verdict must still see the untrusted ones.
var handbookPages = map[string]string{
	"refunds.md":  "# Refunds\n\nRefunds go back to the original payment method. Never wire a refund by bank transfer; the payments tool does it.\n",
	"deploys.md":  "# Deploys\n\nDeploys need a green CI run. Use the deploy tool from the release channel only.\n",
	"email.md":    "# Email\n\nSupport replies to customer email within one business day. Do not export customer tables by email.\n",
	"accounts.md": "# Accounts\n\nAdmin privileges are granted by the security team, never from a support ticket.\n",
}

type hostileEnv struct {
	store ingestd.Store
	pipe  *pipeline.Pipeline
	svc   *retrieval.Service
}

func mustHostileEnv(tb testing.TB) *hostileEnv {
	tb.Helper()
	st := sqlitetest.MustOpen(tb)
	emb := embedder.NewLexical(256)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(emb, nil)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.PutInstallations(tb.Context(), []ingestd.Installation{instHandbook, instFiles, instIMAP, instHooks}); err != nil {
		tb.Fatal(err)
	}
	svc, err := retrieval.New(retrieval.Options{Store: st, Embedder: emb, FirewallMode: ingestd.ModeEnforce,
		Installations: []ingestd.Installation{instHandbook, instFiles, instIMAP, instHooks}})
	if err != nil {
		tb.Fatal(err)
	}
	root := tb.TempDir()
	for name, text := range handbookPages {
		mustWriteFile(tb, filepath.Join(root, name), []byte(text))
	}
	src, err := files.NewSource(instHandbook.ID, files.Config{Root: root}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if sum, err := p.Sync(tb.Context(), instHandbook, src, nil); err != nil || sum.Added != len(handbookPages) {
		tb.Fatalf("handbook sync = %+v, %v", sum, err)
	}
	return &hostileEnv{store: st, pipe: p, svc: svc}
}

func mustWriteFile(tb testing.TB, p string, b []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// ingested is one hostile document as a connector delivered it.
type ingested struct {
	h     hostile
	docID string
	query string
	// refused is the reason the connector reported when it could not read
	// the document (pass.Fail); such a document must not be stored.
	refused string
}

// TestHostileCorpusEndToEnd ingests every hostile document through the
// files, IMAP and webhook connectors into untrusted-external installations
// beside a trusted handbook, then checks the product's two promises for
// each one: every stored chunk is a well-formed fence (nothing in the body
// closes or opens one), and a query made of the document's own words
// retrieves it with tools_allowed=false naming its document id.
func TestHostileCorpusEndToEnd(t *testing.T) {
	corpus := MustHostileCorpus(t)
	env := mustHostileEnv(t)
	total := newTally()

	t.Run("files", func(t *testing.T) {
		docs := ingestFiles(t, env, corpus)
		verifyHostile(t, env, instFiles, docs, total)
	})
	t.Run("imap", func(t *testing.T) {
		docs := ingestIMAP(t, env, corpus)
		verifyHostile(t, env, instIMAP, docs, total)
	})
	t.Run("webhook", func(t *testing.T) {
		docs := ingestWebhook(t, env, corpus)
		verifyHostile(t, env, instHooks, docs, total)
	})

	// The test can tell: a query only the handbook answers allows tools.
	res, err := env.svc.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "green CI run release channel", Installations: []string{instHandbook.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verdict.ToolsAllowed || len(res.Primary) == 0 {
		t.Errorf("trusted-only answer: verdict %+v with %d primary chunks; want tools allowed", res.Verdict, len(res.Primary))
	}
	t.Logf("hostile corpus, all connectors: %s", total)
	if total.escapes != 0 || total.toolsWithUT != 0 {
		t.Errorf("fence escapes %d, verdicts allowing tools with untrusted text %d; want 0 and 0", total.escapes, total.toolsWithUT)
	}
}

// ingestFiles writes the corpus as .md, .txt and .eml files into a folder
// and syncs it through the files connector.
func ingestFiles(t *testing.T, env *hostileEnv, corpus []hostile) []ingested {
	root := t.TempDir()
	date := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	var docs []ingested
	for i, h := range corpus {
		var rel string
		var data []byte
		switch i % 3 {
		case 0:
			rel, data = h.Name+".md", []byte("# "+h.Subject+"\n\n"+h.Body)
		case 1:
			rel, data = h.Name+".txt", []byte(h.Body)
		default:
			rel, data = h.Name+".eml", rawMail(h, date)
		}
		mustWriteFile(t, filepath.Join(root, rel), data)
		docs = append(docs, ingested{h: h, docID: ingestd.DocumentID(instFiles.ID, rel), query: queryWords(h.Body, 12)})
	}
	src, err := files.NewSource(instFiles.ID, files.Config{Root: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := env.pipe.Sync(t.Context(), instFiles, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("files pass: %s", sum)
	for _, f := range sum.Failures {
		for i := range docs {
			if ingestd.DocumentID(instFiles.ID, f.ExternalID) == docs[i].docID {
				docs[i].refused = f.Reason
			}
		}
	}
	return docs
}

// ingestIMAP appends the corpus as messages to an imapmemserver on a
// loopback listener and syncs the mailbox through the IMAP connector.
func ingestIMAP(t *testing.T, env *hostileEnv, corpus []hostile) []ingested {
	srv := MustIMAPServer(t, "imap-password")
	date := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	var docs []ingested
	for i, h := range corpus {
		srv.MustAppend(t, "INBOX", date.Add(time.Duration(i)*time.Minute), rawMail(h, date))
		docs = append(docs, ingested{h: h, docID: ingestd.DocumentID(instIMAP.ID, imapconn.MessageExternalID("<"+h.Name+"@e2e.test>")),
			query: queryWords(h.Body, 12)})
	}
	src, err := imapconn.NewSource(instIMAP.ID, imapconn.Config{
		Addr: srv.Addr, Username: imapUser, PasswordEnv: "E2E_IMAP_PASSWORD", TLS: imapconn.TLSNone, Insecure: true,
		Timeout: 30 * time.Second,
	}, &imapconn.Options{LookupEnv: func(string) (string, bool) { return "imap-password", true }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := env.pipe.Sync(t.Context(), instIMAP, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imap pass: %s", sum)
	return docs
}

const hookSecret = "e2e webhook secret"

// ingestWebhook delivers the corpus as signed GitHub "issues opened"
// deliveries (the attack in the title and the body) through the webhook
// handler, whose Enqueue runs the pipeline in process.
func ingestWebhook(t *testing.T, env *hostileEnv, corpus []hostile) []ingested {
	raw, err := os.ReadFile(filepath.Join(sharedTestdata, "github-webhooks", "issues.opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := webhook.NewEndpoint(instHooks.ID, github.WebhookFlavor, nil, webhook.Config{}, []string{hookSecret})
	if err != nil {
		t.Fatal(err)
	}
	insts := staticInstallations{instHooks.ID: instHooks}
	h, err := webhook.New(webhook.Options{
		Endpoints: map[string]webhook.Endpoint{instHooks.ID: ep},
		Enqueue: func(ctx context.Context, job ingestd.Job, _ string) error {
			return env.pipe.Handle(ctx, job, insts)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var docs []ingested
	for i, hh := range corpus {
		var payload map[string]any
		if err := json.Unmarshal(raw, &payload); err != nil {
			t.Fatal(err)
		}
		issue := payload["issue"].(map[string]any)
		number := 1000 + i
		issue["number"] = number
		issue["title"] = hh.Subject
		issue["body"] = hh.Body
		repo := payload["repository"].(map[string]any)["full_name"].(string)
		body, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/v1/webhooks/"+instHooks.ID, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-GitHub-Event", "issues")
		r.Header.Set("X-GitHub-Delivery", "delivery-"+hh.Name)
		r.Header.Set("X-Hub-Signature-256", signGitHub(hookSecret, body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted {
			t.Errorf("%s: delivery answered %d %s", hh.Name, w.Code, w.Body)
			continue
		}
		docs = append(docs, ingested{h: hh, docID: ingestd.DocumentID(instHooks.ID, github.IssueID(repo, number)), query: queryWords(hh.Body, 12)})
	}
	return docs
}

func signGitHub(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

type staticInstallations map[string]ingestd.Installation

func (m staticInstallations) Installation(id string) (ingestd.Installation, ingestd.Source, error) {
	inst, ok := m[id]
	if !ok {
		return inst, nil, ingestd.Errorf(ingestd.ENOTFOUND, "no installation %q", id)
	}
	return inst, nil, nil
}

// verifyHostile checks, for each delivered document: it is stored with the
// installation's tier and at least one chunk; every stored chunk passes
// firewall.Check; a query of its own words, over the installation and the
// handbook, serves it and answers tools_allowed=false naming it, with every
// served chunk fenced.
func verifyHostile(t *testing.T, env *hostileEnv, inst ingestd.Installation, docs []ingested, total *tally) {
	ctx := t.Context()
	run := newTally()
	for _, d := range docs {
		run.byOrigin[d.h.Origin]++
		doc, err := env.store.Document(ctx, d.docID)
		if ingestd.ErrorCode(err) == ingestd.ENOTFOUND && d.refused != "" {
			run.refused[d.h.Name] = d.refused
			t.Logf("%s: refused at intake, not stored: %s", d.h.Name, d.refused)
			continue
		}
		if err == nil && d.refused != "" {
			t.Errorf("%s: refused at intake (%s) yet stored", d.h.Name, d.refused)
		}
		if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
			t.Errorf("%s: not stored", d.h.Name)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if doc.Tier != ingestd.TierUntrustedExternal || doc.Status != ingestd.StatusActive {
			t.Errorf("%s: stored with tier %q status %q", d.h.Name, doc.Tier, doc.Status)
		}
		run.stored++
		chunks, err := env.store.DocumentChunks(ctx, []string{d.docID})
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) == 0 {
			t.Errorf("%s: stored without chunks", d.h.Name)
		}
		for _, c := range chunks {
			run.chunks++
			if err := firewall.Check(c.Fenced); err != nil {
				run.escapes++
				t.Errorf("%s: stored chunk %s escapes its fence: %v", d.h.Name, c.ID, err)
			}
			if c.Tier != ingestd.TierUntrustedExternal {
				t.Errorf("%s: chunk %s tier %q", d.h.Name, c.ID, c.Tier)
			}
		}

		res, err := env.svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: d.query, TopK: 20, Installations: []string{inst.ID, instHandbook.ID}})
		if err != nil {
			t.Errorf("%s: retrieve %q: %v", d.h.Name, d.query, err)
			continue
		}
		var served []string
		for _, b := range [][]ingestd.ServedChunk{res.Primary, res.Expanded, res.Rejected} {
			for _, c := range b {
				served = append(served, c.DocumentID)
				checkServedFields(t, c) // title, uri, heading path and locator neutralised too
				if err := firewall.Check(c.Fenced); err != nil {
					run.escapes++
					t.Errorf("%s: served chunk %s of %s escapes its fence: %v", d.h.Name, c.ChunkID, c.DocumentID, err)
				}
			}
		}
		if !slices.Contains(served, d.docID) {
			t.Errorf("%s: query %q did not retrieve it (served %d chunks)", d.h.Name, d.query, len(served))
			continue
		}
		run.retrieved++
		if res.Verdict.ToolsAllowed || res.Verdict.Reason != ingestd.ReasonUntrusted || !slices.Contains(res.Verdict.UntrustedDocumentIDs, d.docID) {
			run.toolsWithUT++
			t.Errorf("%s: verdict %+v; want tools blocked naming %s", d.h.Name, res.Verdict, d.docID)
		}
	}
	t.Logf("%s: %s", inst.ID, run)
	for o, n := range run.byOrigin {
		total.byOrigin[inst.ID+"/"+o] += n
	}
	for n, why := range run.refused {
		total.refused[inst.ID+"/"+n] = why
	}
	total.stored += run.stored
	total.chunks += run.chunks
	total.escapes += run.escapes
	total.toolsWithUT += run.toolsWithUT
	total.retrieved += run.retrieved
}
