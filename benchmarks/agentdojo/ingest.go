package agentdojo

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/connectors/web"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/sqlite"
)

// Options configures Open.
type Options struct {
	// Suite is the suite folder (suite.json, documents/).
	Suite fs.FS
	// Grounding is the grounding of every search read's request:
	// ingestd.GroundingAuto (the default, the request README.md
	// recommends for agents) or ingestd.GroundingAll.
	Grounding string
	// Configure, when set, replaces the rules' configuration (Configure):
	// for experiments and for the test that shows a wrong one is seen.
	Configure func(Org) []Rule
	// Logger receives the pipeline's and connectors' logs; nil discards.
	Logger *slog.Logger
}

// Bench is a suite ingested through the real path, ready to replay. Close
// it.
type Bench struct {
	Suite     *Suite
	Org       Org
	Rules     []Rule
	insts     []ingestd.Installation
	store     *sqlite.Store
	svc       *retrieval.Service
	docID     map[string]string // document file → stored document id
	fileOf    map[string]string // stored document id → file
	closers   []func()
	log       *slog.Logger
	grounding string
}

// Open loads the suite, derives the organisation and its configuration,
// ingests every document through its connector and checks that each is
// stored exactly once.
func Open(ctx context.Context, o Options) (*Bench, error) {
	s, err := Load(o.Suite)
	if err != nil {
		return nil, err
	}
	org, err := Derive(s)
	if err != nil {
		return nil, err
	}
	configure := Configure
	if o.Configure != nil {
		configure = o.Configure
	}
	b := &Bench{Suite: s, Org: org, Rules: configure(org), docID: map[string]string{}, fileOf: map[string]string{}, log: o.Logger, grounding: o.Grounding}
	switch b.grounding {
	case "":
		b.grounding = ingestd.GroundingAuto
	case ingestd.GroundingAuto, ingestd.GroundingAll:
	default:
		return nil, fmt.Errorf("grounding %q is not auto or all", o.Grounding)
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	if err := b.ingest(ctx); err != nil {
		return nil, err
	}
	ok = true
	return b, nil
}

// Close releases the store, the servers and the temporary directory.
func (b *Bench) Close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

func (b *Bench) ingest(ctx context.Context) error {
	dir, err := private.MkdirTemp("", "ingestd-agentdojo-")
	if err != nil {
		return err
	}
	b.closers = append(b.closers, func() { os.RemoveAll(dir) })
	if b.store, err = sqlite.Open(ctx, filepath.Join(dir, "ingestd.db"), &sqlite.Options{Logger: b.log}); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	st := b.store
	b.closers = append(b.closers, func() { st.Close(context.Background()) })
	emb := embedder.NewCached(embedder.NewLexical(0), b.store)
	pipe, err := pipeline.New(pipeline.Options{Store: b.store, Embedder: emb, Logger: b.log})
	if err != nil {
		return err
	}
	for _, r := range b.Rules {
		b.insts = append(b.insts, ingestd.Installation{ID: r.Installation, Kind: r.Connector, Tier: r.Tier, VerifiedSenders: r.VerifiedSenders})
	}
	if err := b.store.PutInstallations(ctx, b.insts); err != nil {
		return fmt.Errorf("record installations: %w", err)
	}
	byInst := map[string][]Document{}
	for _, d := range b.Suite.Documents {
		raw, err := b.Suite.read(d.File)
		if err != nil {
			return err
		}
		id := route(b.Org, d, raw)
		byInst[id] = append(byInst[id], d)
	}
	for _, in := range b.insts {
		docs := byInst[in.ID]
		if len(docs) == 0 {
			continue
		}
		if err := b.load(ctx, pipe, in, docs, filepath.Join(dir, in.ID)); err != nil {
			return fmt.Errorf("installation %s: %w", in.ID, err)
		}
	}
	b.svc, err = retrieval.New(retrieval.Options{Store: b.store, Embedder: emb, Installations: b.insts, Documents: b.store})
	return err
}

// load ingests one installation's documents through its connector and
// maps each file to its stored document.
func (b *Bench) load(ctx context.Context, pipe *pipeline.Pipeline, in ingestd.Installation, docs []Document, dir string) error {
	ext := map[string]string{} // external id → file
	switch in.Kind {
	case "files":
		if err := b.syncFiles(ctx, pipe, in, docs, dir); err != nil {
			return err
		}
		for _, d := range docs {
			ext[d.File] = d.File
		}
	case "url":
		urls, err := b.syncWeb(ctx, pipe, in, docs)
		if err != nil {
			return err
		}
		ext = urls
	case "webhook":
		if err := b.deliver(ctx, pipe, in, docs); err != nil {
			return err
		}
		for _, d := range docs {
			ext[d.File] = d.File
		}
	default:
		return fmt.Errorf("connector %q", in.Kind)
	}
	refs, err := b.store.DocumentRefs(ctx, in.ID)
	if err != nil {
		return err
	}
	for _, r := range refs {
		f, ok := ext[r.ExternalID]
		if !ok {
			continue // a part the connector split off (a mail attachment)
		}
		b.docID[f], b.fileOf[r.ID] = r.ID, f
	}
	for _, d := range docs {
		if b.docID[d.File] == "" {
			return fmt.Errorf("%s was not stored", d.File)
		}
	}
	return nil
}

// syncFiles writes the documents into a folder and syncs it with the files
// connector, built from the settings an operator would write. Mail first
// passes the organisation's boundary (boundary).
func (b *Bench) syncFiles(ctx context.Context, pipe *pipeline.Pipeline, in ingestd.Installation, docs []Document, dir string) error {
	if err := private.MkdirAll(dir); err != nil {
		return err
	}
	for _, d := range docs {
		raw, err := b.Suite.read(d.File)
		if err != nil {
			return err
		}
		if strings.HasSuffix(d.File, ".eml") {
			raw = boundary(b.Org, raw)
		}
		if err := private.WriteFile(filepath.Join(dir, d.File), raw); err != nil {
			return err
		}
	}
	settings, err := yaml.Marshal(map[string]any{"root": dir, "include": []string{"*"}})
	if err != nil {
		return err
	}
	c, err := connectors.NewRegistry(files.Kind).Build(in, connectors.Settings{
		Decode: func(v any) error { return yaml.Unmarshal(settings, v) }, Logger: b.log,
	})
	if err != nil {
		return err
	}
	return sync1(ctx, pipe, in, c.Source)
}

func sync1(ctx context.Context, pipe *pipeline.Pipeline, in ingestd.Installation, src ingestd.Source) error {
	sum, err := pipe.Sync(ctx, in, src, nil)
	if err != nil {
		return err
	}
	if err := sum.Check(); err != nil {
		return err
	}
	if sum.Failed > 0 || sum.Skipped > 0 {
		return fmt.Errorf("did not load whole: %s %v %v", sum, sum.Failures, sum.Skips)
	}
	return nil
}

// boundary is what the organisation's boundary MTA does to a message on
// its way in, as the harness stands in for it: it removes every
// Authentication-Results field that claims its own authserv-id (RFC 8601
// section 5: only the boundary may write those) and, for a message whose
// From is in the organisation's domain, adds its own at the top with a
// DMARC pass. Outsiders' mail gets no field. The suites' mail carries no
// authentication results, and nothing in them says where a message came
// from but its From: the harness takes the organisation's own mail as
// genuine, which is what a boundary that signs and checks internal mail
// would report.
func boundary(o Org, raw []byte) []byte {
	if o.AuthservID == "" {
		return raw
	}
	head, rest, sep := splitHeader(raw)
	var kept []string
	for _, f := range head {
		name, v, _ := strings.Cut(f, ":")
		if strings.EqualFold(strings.TrimSpace(name), "Authentication-Results") &&
			strings.EqualFold(strings.TrimSpace(strings.SplitN(strings.TrimSpace(v), ";", 2)[0]), o.AuthservID) {
			continue
		}
		kept = append(kept, f)
	}
	if fromDomain(raw) == o.Domain {
		ar := "Authentication-Results: " + o.AuthservID + ";" + sep + "\tdmarc=pass (policy=reject) header.from=" + o.Domain + sep
		kept = append([]string{ar}, kept...)
	}
	return []byte(strings.Join(kept, "") + sep + rest)
}

// splitHeader splits a message into its header fields (each with its
// folded lines and line ends), the body and the line end it uses.
func splitHeader(raw []byte) (fields []string, body, sep string) {
	text := string(raw)
	sep = "\n"
	if strings.Contains(text, "\r\n") {
		sep = "\r\n"
	}
	head, body, _ := strings.Cut(text, sep+sep)
	for _, line := range strings.SplitAfter(head+sep, sep) {
		if line == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(fields) > 0 {
			fields[len(fields)-1] += line
			continue
		}
		fields = append(fields, line)
	}
	return fields, body, sep
}

// syncWeb serves the pages from an in-process HTTP server, one path per
// file, and syncs them with the url connector; it returns the external id
// (the page's URL) of each file.
func (b *Bench) syncWeb(ctx context.Context, pipe *pipeline.Pipeline, in ingestd.Installation, docs []Document) (map[string]string, error) {
	pages := map[string][]byte{}
	for _, d := range docs {
		raw, err := b.Suite.read(d.File)
		if err != nil {
			return nil, err
		}
		pages["/"+d.File] = raw
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(p)
	}))
	b.closers = append(b.closers, srv.Close)
	cfg := web.Config{AllowPrivateNetworks: true, RatePerHost: "1000/s"}
	for _, d := range docs {
		cfg.URLs = append(cfg.URLs, srv.URL+"/"+d.File)
	}
	src, err := web.NewSource(in, web.Options{Config: cfg, Logger: b.log, Version: "bench"})
	if err != nil {
		return nil, err
	}
	if err := sync1(ctx, pipe, in, src); err != nil {
		return nil, err
	}
	refs, err := b.store.DocumentRefs(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range refs {
		for _, d := range docs {
			if strings.HasSuffix(r.ExternalID, "/"+d.File) {
				out[r.ExternalID] = d.File
			}
		}
	}
	return out, nil
}

// deliver posts each document as a signed Standard Webhooks delivery to
// the installation's webhook intake, as the workspace's event relay
// would, and ingests the jobs the intake queued.
func (b *Bench) deliver(ctx context.Context, pipe *pipeline.Pipeline, in ingestd.Installation, docs []Document) error {
	var key [32]byte
	_, _ = rand.Read(key[:])
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key[:])
	ep, err := webhook.NewEndpoint(in.ID, webhook.Standard, &webhook.StandardConfig{Format: ingestd.FormatMarkdown}, webhook.Config{}, []string{secret})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var jobs []ingestd.Job
	h, err := webhook.New(webhook.Options{
		Endpoints: map[string]webhook.Endpoint{in.ID: ep},
		Enqueue: func(_ context.Context, j ingestd.Job, _ string) error {
			mu.Lock()
			defer mu.Unlock()
			jobs = append(jobs, j)
			return nil
		},
		Logger: b.log,
	})
	if err != nil {
		return err
	}
	for i, d := range docs {
		raw, err := b.Suite.read(d.File)
		if err != nil {
			return err
		}
		if err := post(h, in.ID, "msg_"+strconv.Itoa(i), key[:], event(d, raw)); err != nil {
			return fmt.Errorf("%s: %w", d.File, err)
		}
	}
	for _, j := range jobs {
		if j.Kind != ingestd.JobItem || j.Item == nil {
			return fmt.Errorf("the intake queued a %s job", j.Kind)
		}
		if _, err := pipe.IngestAt(ctx, in, *j.Item, j.At); err != nil {
			return err
		}
	}
	return nil
}

// event is the relay's JSON body for one Slack message or channel: its id
// (the file name), a title naming the channel and sender, and its text.
func event(d Document, raw []byte) []byte {
	fm := frontMatter(raw)
	title := strings.TrimSpace(unquote(fm["channel"]))
	if s := unquote(fm["sender"]); s != "" {
		title = s + " in " + title
	}
	body, _ := json.Marshal(map[string]any{"id": d.File, "title": title, "body": bodyText(raw), "author": unquote(fm["sender"])})
	return body
}

func bodyText(raw []byte) string { return body(raw) }

// post signs body with Standard Webhooks (HMAC-SHA256 over id.timestamp.body)
// and posts it to the handler; anything but 202 is an error.
func post(h http.Handler, installation, id string, key, body []byte) error {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	r := httptest.NewRequest(http.MethodPost, "/v1/webhooks/"+installation, bytes.NewReader(body))
	r.SetPathValue("installation", installation)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", ts)
	r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusAccepted {
		return fmt.Errorf("webhook intake answered %d: %s", w.Code, strings.TrimSpace(w.Body.String()))
	}
	return nil
}
