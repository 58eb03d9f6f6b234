package fwbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	goimap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite"
)

// Options configures Open.
type Options struct {
	// Corpus is the corpus tree (corpus.yaml, questions.yaml, corpus/);
	// nil means Embedded().
	Corpus fs.FS
	// Dir receives the extracted folders and the SQLite file; it should
	// be empty. "" means a temporary directory that Close removes.
	Dir string
	// Logger receives the pipeline's and connectors' logs; nil discards.
	Logger *slog.Logger
	// IgnoreVerifiedSenders opens the installations without their
	// verified_senders blocks: the baseline that shows what they buy.
	IgnoreVerifiedSenders bool
}

// Bench is a corpus ingested through the real path — connectors, pipeline,
// a SQLite file, the lexical embedder — ready to be asked. Close it.
type Bench struct {
	Corpus *Corpus
	// Syncs are the pass summaries, one per installation, in corpus order.
	Syncs []pipeline.Summary
	// Stored counts the stored (not deleted) documents per installation.
	Stored map[string]int

	store    *sqlite.Store
	embedder ingestd.Embedder
	insts    []ingestd.Installation
	byID     map[string]Doc // every corpus document, by document id
	injected map[string]Injection
	markers  []string // normalised injection markers
	closers  []func()
}

// Open loads the corpus, ingests every installation through its connector
// and checks that the corpus loaded whole: every pass without failures or
// skips, every file (every forum comment, every labelled attachment)
// stored, the dismissed documents rejected and the rest active, and each
// injection's marker in its document's stored text. Any shortfall is an
// error: a benchmark over part of its corpus would measure nothing.
func Open(ctx context.Context, o Options) (*Bench, error) {
	fsys := o.Corpus
	if fsys == nil {
		fsys = Embedded()
	}
	c, err := Load(fsys)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bench{Corpus: c, Stored: map[string]int{}, byID: map[string]Doc{}, injected: map[string]Injection{}}
	opened := false
	defer func() {
		if !opened {
			b.Close()
		}
	}()
	dir := o.Dir
	if dir == "" {
		if dir, err = private.MkdirTemp("", "ingestd-fwbench-"); err != nil {
			return nil, err
		}
		b.closers = append(b.closers, func() { os.RemoveAll(dir) })
	}
	if b.store, err = sqlite.Open(ctx, filepath.Join(dir, "ingestd.db"), &sqlite.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	st := b.store
	b.closers = append(b.closers, func() { st.Close(context.Background()) })
	b.embedder = embedder.NewCached(embedder.NewLexical(0), b.store)
	pipe, err := pipeline.New(pipeline.Options{Store: b.store, Embedder: b.embedder, Logger: log})
	if err != nil {
		return nil, err
	}
	for i, in := range c.Installations {
		if o.IgnoreVerifiedSenders {
			c.Installations[i].VerifiedSenders = nil
			in.VerifiedSenders = nil
		}
		b.insts = append(b.insts, ingestd.Installation{ID: in.ID, Kind: in.Kind, Tier: in.Tier, VerifiedSenders: in.VerifiedSenders.declaration()})
	}
	if err := b.store.PutInstallations(ctx, b.insts); err != nil {
		return nil, fmt.Errorf("record installations: %w", err)
	}
	for i, in := range c.Installations {
		src, err := b.source(in, dir, log)
		if err != nil {
			return nil, fmt.Errorf("installation %s: %w", in.ID, err)
		}
		sum, err := pipe.Sync(ctx, b.insts[i], src, nil)
		if err != nil {
			return nil, err
		}
		if err := sum.Check(); err != nil {
			return nil, fmt.Errorf("installation %s: summary: %w", in.ID, err)
		}
		if sum.Failed > 0 || sum.Skipped > 0 {
			return nil, fmt.Errorf("installation %s did not load whole: %s %v %v", in.ID, sum, sum.Failures, sum.Skips)
		}
		b.Syncs = append(b.Syncs, sum)
	}
	for _, r := range c.Rejected.ByOperator {
		d, _ := c.Doc(r) // resolved by Load
		if err := b.store.SetStatus(ctx, d.ID, ingestd.StatusRejected); err != nil {
			return nil, fmt.Errorf("reject %s: %w", r, err)
		}
	}
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	opened = true
	return b, nil
}

// Close releases the store, the servers and a temporary directory.
func (b *Bench) Close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// source builds the connector of one installation over its corpus folder:
// the folder itself for files, an in-process IMAP server holding the
// .eml files for imap, an in-process GitHub API serving the posts for
// github.
func (b *Bench) source(in InstallationSpec, dir string, log *slog.Logger) (ingestd.Source, error) {
	names, err := b.Corpus.files(in.ID)
	if err != nil {
		return nil, err
	}
	switch in.Kind {
	case KindFiles:
		root := filepath.Join(dir, in.ID)
		for _, n := range names {
			data, err := fs.ReadFile(b.Corpus.fsys, path.Join("corpus", in.ID, n))
			if err != nil {
				return nil, err
			}
			p := filepath.Join(root, filepath.FromSlash(n))
			if err := private.MkdirAll(filepath.Dir(p)); err != nil {
				return nil, err
			}
			if err := private.WriteFile(p, data); err != nil {
				return nil, err
			}
		}
		return files.NewSource(in.ID, files.Config{Root: root}, log)
	case KindIMAP:
		return b.imapSource(in, names, log)
	case KindGitHub:
		return b.forumSource(in, names, log)
	}
	return nil, fmt.Errorf("kind %q", in.Kind)
}

const imapUser = "support@kestrel.example"

// imapSource starts go-imap's in-memory server on a loopback port with
// the installation's .eml files in INBOX (in path order, each dated by its
// Date header) and returns the imap connector's source for it.
func (b *Bench) imapSource(in InstallationSpec, names []string, log *slog.Logger) (ingestd.Source, error) {
	var key [12]byte
	_, _ = rand.Read(key[:])
	password := hex.EncodeToString(key[:])
	user := imapmemserver.NewUser(imapUser, password)
	if err := user.Create("INBOX", nil); err != nil {
		return nil, err
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".eml") {
			return nil, fmt.Errorf("%s: an imap installation holds only .eml files", n)
		}
		raw, err := fs.ReadFile(b.Corpus.fsys, path.Join("corpus", in.ID, n))
		if err != nil {
			return nil, err
		}
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		date, err := m.Header.Date()
		if err != nil {
			return nil, fmt.Errorf("%s: Date: %w", n, err)
		}
		if _, err := user.Append("INBOX", literal{bytes.NewReader(raw)}, &goimap.AppendOptions{Time: date}); err != nil {
			return nil, fmt.Errorf("append %s: %w", n, err)
		}
	}
	mem := imapmemserver.New()
	mem.AddUser(user)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         goimap.CapSet{goimap.CapIMAP4rev1: {}, goimap.CapIMAP4rev2: {}},
		InsecureAuth: true,
		Logger:       discard{},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	b.closers = append(b.closers, func() { srv.Close() })
	const env = "FWBENCH_IMAP_PASSWORD"
	return imap.NewSource(in.ID, imap.Config{
		Addr: ln.Addr().String(), Username: imapUser, PasswordEnv: env,
		TLS: imap.TLSNone, Insecure: true, Timeout: 30 * time.Second,
	}, &imap.Options{
		LookupEnv:  func(name string) (string, bool) { return password, name == env },
		Logger:     log,
		AuthservID: authservID(in),
	})
}

type literal struct{ *bytes.Reader }

func (l literal) Size() int64 { return int64(l.Len()) }

type discard struct{}

func (discard) Printf(string, ...any) {}

// forumSource starts an in-process HTTP server that answers the three
// GitHub REST calls the github connector makes for a repository's issues
// and issue comments, built from the installation's posts, and returns the
// connector's source for it.
func (b *Bench) forumSource(in InstallationSpec, names []string, log *slog.Logger) (ingestd.Source, error) {
	type user struct {
		Login string `json:"login"`
	}
	type label struct {
		Name string `json:"name"`
	}
	type issue struct {
		Number      int       `json:"number"`
		Title       string    `json:"title"`
		Body        string    `json:"body"`
		User        user      `json:"user"`
		Association string    `json:"author_association"`
		State       string    `json:"state"`
		StateReason *string   `json:"state_reason"`
		Labels      []label   `json:"labels"`
		Created     time.Time `json:"created_at"`
		Updated     time.Time `json:"updated_at"`
		HTMLURL     string    `json:"html_url"`
	}
	type comment struct {
		ID          int64     `json:"id"`
		Body        string    `json:"body"`
		User        user      `json:"user"`
		Association string    `json:"author_association"`
		Created     time.Time `json:"created_at"`
		Updated     time.Time `json:"updated_at"`
		HTMLURL     string    `json:"html_url"`
		IssueURL    string    `json:"issue_url"`
	}
	repo := b.Corpus.Forum()
	web := "https://github.com/" + repo
	var issues []issue
	var comments []comment
	for _, n := range names {
		if !strings.HasSuffix(n, ".md") {
			return nil, fmt.Errorf("%s: a github installation holds only .md posts", n)
		}
		p, err := b.Corpus.forumPost(path.Join("corpus", in.ID, n))
		if err != nil {
			return nil, err
		}
		is := issue{Number: p.Number, Title: p.Title, Body: p.Body, User: user{p.Author}, Association: p.Association,
			State: p.State, Created: p.Created, Updated: p.Created,
			HTMLURL: fmt.Sprintf("%s/issues/%d", web, p.Number)}
		if p.StateReason != "" {
			is.StateReason = &p.StateReason
		}
		for _, l := range p.Labels {
			is.Labels = append(is.Labels, label{l})
		}
		for k, cm := range p.Comments {
			id := commentID(p.Number, k+1)
			comments = append(comments, comment{ID: id, Body: cm.Body, User: user{cm.Author}, Association: cm.Association,
				Created: cm.Created, Updated: cm.Created,
				HTMLURL:  fmt.Sprintf("%s/issues/%d#issuecomment-%d", web, p.Number, id),
				IssueURL: fmt.Sprintf("https://api.github.com/repos/%s/issues/%d", repo, p.Number)})
			if cm.Created.After(is.Updated) {
				is.Updated = cm.Created
			}
		}
		issues = append(issues, is)
	}
	// Listings are sorted by updated_at ascending, as the connector asks.
	slices.SortStableFunc(issues, func(x, y issue) int { return x.Updated.Compare(y.Updated) })
	slices.SortStableFunc(comments, func(x, y comment) int { return x.Updated.Compare(y.Updated) })
	routes := map[string]any{
		"/repos/" + repo:                      map[string]string{"full_name": repo, "default_branch": "main", "html_url": web},
		"/repos/" + repo + "/issues":          issues,
		"/repos/" + repo + "/issues/comments": comments,
	}
	bodies := map[string][]byte{}
	for p, v := range routes {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		bodies[p] = data
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := bodies[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	b.closers = append(b.closers, srv.Close)
	off := false
	return github.NewSource(in.ID, github.Config{
		Repos:   []string{repo},
		BaseURL: srv.URL + "/",
		Include: github.Include{Pulls: &off, ReviewComments: &off, Docs: &off},
	}, github.Options{HTTPClient: srv.Client(), Logger: log})
}

// check verifies that the corpus loaded whole (see Open) and indexes the
// corpus documents and injections: every file, forum comment and stored
// mail attachment has a ref, every ref is stored with the status its
// labels give, and nothing else is stored.
func (b *Bench) check(ctx context.Context) error {
	c := b.Corpus
	for _, in := range c.Installations {
		names, err := c.files(in.ID)
		if err != nil {
			return err
		}
		for _, n := range names {
			if _, err := c.resolve(in.ID + ":" + n); err != nil {
				return err
			}
			if in.Kind != KindGitHub {
				continue
			}
			p, err := c.forumPost(path.Join("corpus", in.ID, n))
			if err != nil {
				return err
			}
			for k := range p.Comments {
				if _, err := c.resolve(fmt.Sprintf("%s:%s#comment-%d", in.ID, n, k+1)); err != nil {
					return err
				}
			}
		}
	}
	refOf := map[string]string{}
	for ref, d := range c.docs {
		refOf[d.ID] = ref
	}
	for _, in := range c.Installations {
		stored, err := b.store.DocumentRefs(ctx, in.ID)
		if err != nil {
			return err
		}
		b.Stored[in.ID] = len(stored)
		for _, s := range stored {
			if _, ok := refOf[s.ID]; ok {
				continue
			}
			// A mail attachment: its parent's ref and the connector's fragment.
			base, frag, ok := strings.Cut(s.ExternalID, "#attachment/")
			parent, known := refOf[ingestd.DocumentID(in.ID, base)]
			if !ok || !known {
				return fmt.Errorf("installation %s: stored document %q is not in the corpus", in.ID, s.ExternalID)
			}
			d, err := c.resolve(parent + "#attachment/" + frag)
			if err != nil {
				return err
			}
			if d.ID != s.ID {
				return fmt.Errorf("installation %s: attachment %q resolves to another document", in.ID, s.ExternalID)
			}
			refOf[s.ID] = d.Ref
		}
	}
	rejected := map[string]bool{}
	for _, r := range append(slices.Clone(c.Rejected.ByOperator), c.Rejected.BySource...) {
		rejected[r] = true
	}
	var ids []string
	for ref, d := range c.docs {
		doc, err := b.store.Document(ctx, d.ID)
		if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
			return fmt.Errorf("%s (%s) was not stored", ref, d.ExternalID)
		}
		if err != nil {
			return fmt.Errorf("load %s: %w", ref, err)
		}
		want := ingestd.StatusActive
		if rejected[ref] {
			want = ingestd.StatusRejected
		}
		if doc.Status != want {
			return fmt.Errorf("%s is stored %s, want %s", ref, doc.Status, want)
		}
		b.byID[d.ID] = d
		ids = append(ids, d.ID)
	}
	text := map[string]*strings.Builder{}
	chunks, err := b.store.DocumentChunks(ctx, ids)
	if err != nil {
		return err
	}
	for _, ch := range chunks {
		if text[ch.DocumentID] == nil {
			text[ch.DocumentID] = &strings.Builder{}
		}
		text[ch.DocumentID].WriteString(normalize(ch.Text))
		text[ch.DocumentID].WriteByte(' ')
	}
	for _, inj := range c.Injections {
		d, _ := c.Doc(inj.Doc)
		m := normalize(inj.Marker)
		t := text[d.ID]
		if t == nil || !strings.Contains(t.String(), m) {
			return fmt.Errorf("injection in %s: marker %q is not in its stored text", inj.Doc, inj.Marker)
		}
		b.injected[d.ID] = inj
		b.markers = append(b.markers, m)
	}
	if len(b.markers) == 0 {
		return errors.New("the corpus plants no injection")
	}
	return nil
}

// normalize lower-cases s and collapses white space, so a marker is found
// whatever line breaks the chunker or the mail kept.
func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// authservID is the boundary MTA's authserv-id of an installation with
// verified senders, "" without.
func authservID(in InstallationSpec) string {
	if in.VerifiedSenders == nil {
		return ""
	}
	return in.VerifiedSenders.AuthservID
}
