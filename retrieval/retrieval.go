// Package retrieval answers queries over the store: hybrid ranking
// (full-text and vector candidates fused by reciprocal rank fusion), the
// three blocks of an answer (primary, expanded, rejected) and the
// turn-level tool-firewall verdict computed over all three.
//
// It serves only fenced chunks as the store holds them (fenced at ingest)
// and never fences, unfences or reads chunk content to decide anything
// about trust. Every tier it shows, filters by or decides the verdict with
// is a tier in force: provenance.Declarations, built from the configured
// installations, judges the store's tier facts (stored stamp, installation,
// the metadata its tier_by rules look at, parent), so a configuration
// change holds in every answer the moment the configuration is loaded, on
// every transport that serves this Service. Each request judges a
// document's tier once, in one tier view its stages and the verdict share
// (tierview.go); the verdict is computed from it over the served
// documents, never from the request.
//
// The files follow an answer's stages: plan.go (the request validated
// into scopes), rank.go (the primary block), grounding.go, expand.go (the
// expanded block), rejected.go (the rejected block), tierview.go and
// verdict.go (the verdict over all three and the response).
//
// When to use RetrieveRequest.ExcludeUntrusted: a turn that must be able
// to act (an agent step that will call a tool whatever it reads) asks for
// grounding that allows tools instead of gambling on what retrieval
// brings. The answer then leaves untrusted-external and unknown-tier
// documents out of all three blocks, says how many it left out, and its
// verdict allows tools honestly. A turn that answers a question (quoting
// a customer's mail is fine) should not set it: it would hide what the
// outside said.
//
// Grounding auto (RetrieveRequest.Grounding) is the middle way, and the
// recommended request (README.md, docs/BENCHMARKS.md): it ranks every
// tier together, then leaves untrusted documents out of all three blocks
// unless an untrusted chunk is the best full-text evidence for the query
// (it beats every trusted chunk's score). A question about the handbook
// that a customer's mail happens to echo is answered from the handbook
// with tools allowed; a question about what the customer wrote, whose
// names and numbers only the mail holds, gets the mail and a verdict that
// blocks. RetrieveResponse.Grounding says which happened. The choice reads
// ranking scores, never tiers' consequences: the verdict is computed
// afterwards over what was served, as for every answer.
//
// RetrieveRequest.TrustedView asks for both in one call, for a host that
// plans with everything and acts on trusted text only: the answer as
// requested, and beside it the blocks exclude_untrusted would serve, each
// with a verdict over exactly its own blocks. The host quotes the answer
// to the user and gives the tools only the view.
package retrieval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
)

// Defaults and bounds; a request's are ingestd.DefaultTopK, MaxTopK and
// MaxQueryBytes.
const (
	DefaultPerDocument = 3
	DefaultExpandCap   = 20
	DefaultRejectedCap = 3
	// DefaultRejectedMinScore is the cosine similarity between the query
	// vector and a rejected chunk below which the chunk is not shown: a
	// dismissed approach is only worth prompt space when it is about the
	// question. Tuned on the lexical embedder, whose signed feature hashing
	// gives unrelated short texts cosines up to about 0.2 while texts that
	// share the query's distinctive words score 0.35 and above. Semantic
	// embedders sit higher overall; 0.3-0.45 suits most of them.
	DefaultRejectedMinScore = 0.25

	rrfK         = 60 // reciprocal rank fusion constant
	minCandidate = 50 // candidates fetched per ranker, at least
)

// Options configures a Service. Store and Embedder are required.
type Options struct {
	Store    ingestd.Searcher
	Embedder ingestd.Embedder
	// FirewallMode is a mode as returned by firewall.ParseMode; empty means
	// enforce.
	FirewallMode string
	// Installations are the configured installations: the declaration in
	// force (provenance.Declare) that judges every tier the service shows,
	// filters by and decides verdicts with, and the provenance report's
	// list. A document whose installation is not listed (or is listed
	// with another kind) is orphaned and counts as untrusted-external:
	// with none listed, every document does.
	Installations []ingestd.Installation
	// PerDocument is the most chunks of one document in primary; 0 means 3.
	PerDocument int
	// ExpandCap bounds the expanded block; 0 means 20.
	ExpandCap int
	// RejectedCap bounds the rejected block; 0 means 3.
	RejectedCap int
	// RejectedMinScore is the query similarity a rejected chunk needs to be
	// shown; 0 means DefaultRejectedMinScore.
	RejectedMinScore float64
	// Documents serves Document (a document read whole, for MCP's
	// document resources); nil answers it with EUNAVAILABLE. An
	// ingestd.Store is one.
	Documents ChunkReader
	// Index serves ListDocuments and the document's own fields (author,
	// dates, metadata) in Document; nil answers ListDocuments with
	// EUNAVAILABLE and leaves those fields out. An ingestd.Store is one.
	Index DocumentIndex
	// MinSimilarity raises the relevance floor a vector hit must clear
	// when no word of the query is in the corpus, for an embedder that is
	// not the lexical one (see floor.go); 0 leaves the calibrated floor.
	MinSimilarity float64
	// Logger receives the provenance.tool_firewall.blocked line of every
	// turn the verdict blocks (or would block, in shadow mode).
	Logger *slog.Logger
}

var _ ingestd.Retriever = (*Service)(nil)

// ChunkReader reads every chunk of documents, in document and ordinal
// order, with the fields of their documents (ingestd.Store.DocumentChunks).
type ChunkReader interface {
	DocumentChunks(ctx context.Context, docIDs []string) ([]ingestd.ChunkView, error)
}

// Service answers retrieval requests over a store. It is safe for
// concurrent use. It keeps no metrics: package retrieval/metrics wraps
// any ingestd.Retriever with them.
type Service struct {
	store    ingestd.Searcher
	embedder ingestd.Embedder
	mode     string
	decl     *provenance.Declarations
	insts    []ingestd.Installation
	ids      []string // insts' ids, in order
	docs     ChunkReader
	index    DocumentIndex
	minSim   float64
	probe    probe // the relevance floor's (floor.go)
	perDoc   int
	expCap   int
	rejCap   int
	rejMin   float64
	log      *slog.Logger
}

// New returns a Service. It fails when Store or Embedder is missing or
// when FirewallMode is not a valid mode.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Embedder == nil {
		return nil, fmt.Errorf("retrieval: store and embedder are required")
	}
	mode := o.FirewallMode
	if mode == "" {
		mode = ingestd.ModeEnforce
	}
	mode, err := firewall.ParseMode(mode)
	if err != nil {
		return nil, fmt.Errorf("retrieval: %w", err)
	}
	s := &Service{
		store: o.Store, embedder: o.Embedder, mode: mode,
		decl:   provenance.Declare(o.Installations),
		insts:  slices.Clone(o.Installations),
		ids:    installationIDs(o.Installations),
		docs:   o.Documents,
		index:  o.Index,
		minSim: o.MinSimilarity,
		perDoc: orDefault(o.PerDocument, DefaultPerDocument),
		expCap: orDefault(o.ExpandCap, DefaultExpandCap),
		rejCap: orDefault(o.RejectedCap, DefaultRejectedCap),
		rejMin: o.RejectedMinScore,
		log:    o.Logger,
	}
	if s.rejMin == 0 {
		s.rejMin = DefaultRejectedMinScore
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Mode returns the firewall mode the service decides with.
func (s *Service) Mode() string { return s.mode }

// Retrieve answers r. It returns EINVALID for an empty or overlong query, a
// top_k outside 1..100, an unknown tier filter and an installation filter
// naming one that is not configured; store and embedder errors pass
// through. Every served chunk's Fenced is the store's, fenced at
// ingest. A turn the verdict blocks is logged.
func (s *Service) Retrieve(ctx context.Context, r ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	p, err := s.plan(r)
	if err != nil {
		return nil, err
	}
	vecs, err := s.embedder.Embed(ctx, []string{p.query})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("embed query: embedder returned %d vectors for 1 text", len(vecs))
	}
	tiers := newTierView(s.decl, s.store) // one per request: the answer and its view
	a := s.newAnswer(p, vecs[0], tiers)
	var (
		wg      sync.WaitGroup
		view    *ingestd.RetrieveResponse
		viewErr error
	)
	if p.view {
		// The view is what exclude_untrusted serves, computed as for a
		// request that sets it.
		vp := *p
		vp.exclude, vp.auto, vp.view, vp.served = true, false, false, p.trusted
		wg.Go(func() {
			va := s.newAnswer(&vp, vecs[0], tiers)
			if viewErr = va.run(ctx); viewErr == nil {
				view, viewErr = va.response(ctx)
			}
		})
	}
	err = a.run(ctx)
	var resp *ingestd.RetrieveResponse
	if err == nil {
		resp, err = a.response(ctx)
	}
	wg.Wait()
	if err == nil {
		err = viewErr
	}
	if err != nil {
		return nil, err
	}
	resp.RequestID = r.RequestID
	if resp.RequestID == "" {
		resp.RequestID = newRequestID()
	}
	s.logBlocked(resp.Verdict, resp.RequestID, "answer")
	if view != nil {
		resp.TrustedView = &ingestd.RetrieveView{
			Primary: view.Primary, Expanded: view.Expanded, Rejected: view.Rejected,
			Verdict: view.Verdict, ExcludedUntrustedDocuments: view.ExcludedUntrustedDocuments,
		}
		s.logBlocked(view.Verdict, resp.RequestID, "trusted_view")
	}
	return resp, nil
}

func (s *Service) newAnswer(p *plan, qv []float32, tiers *tierView) *answer {
	return &answer{s: s, p: p, qv: qv, excluded: map[string]bool{}, tiers: tiers,
		trustedOnly: p.exclude}
}

// newRequestID returns 16 random hex digits.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return hex.EncodeToString(b[:])
}

// logBlocked logs a verdict that blocks tools or would block them. A
// blocked turn is an audit event at INFO, not a warning: blocking is the
// firewall doing its job, and under load a WARN per request buries the
// warnings that need someone. The metric is counted by the decorator in
// retrieval/metrics.
//
// view names the blocks the verdict covers: "answer", or "trusted_view"
// for the view a request with trusted_view asked for (judged by the same
// tier view as its ranking, it leaves out what its verdict would count
// untrusted, so it does not block).
func (s *Service) logBlocked(v *ingestd.Verdict, requestID, view string) {
	if !v.ToolsAllowed || v.WouldBlock {
		s.log.Info("provenance.tool_firewall.blocked",
			slog.String("mode", v.Mode),
			slog.String("reason", v.Reason),
			slog.Bool("tools_allowed", v.ToolsAllowed),
			slog.Any("untrusted_document_ids", v.UntrustedDocumentIDs),
			slog.String("request_id", requestID),
			slog.String("view", view))
	}
}

// Provenance returns the corpus report, by tier in force, beside the
// firewall mode. With installations named, it counts only their documents
// and lists only them (a named installation that is not configured is
// listed when it holds documents, as an orphan).
func (s *Service) Provenance(ctx context.Context, r ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	counts, err := s.store.CountDocumentsFor(ctx, s.decl.MetaKeys(), r.Reader)
	if err != nil {
		return ingestd.ProvenanceReport{}, fmt.Errorf("count documents: %w", err)
	}
	only := nonEmpty(r.Installations)
	if len(only) == 0 {
		return s.report(s.decl, counts), nil
	}
	kept := counts[:0:0]
	for _, c := range counts {
		if slices.Contains(only, c.Installation) {
			kept = append(kept, c)
		}
	}
	// The same declarations, less the installations not asked for: a
	// document's tier in force depends on its own installation's alone.
	var insts []ingestd.Installation
	for _, in := range s.insts {
		if slices.Contains(only, in.ID) {
			insts = append(insts, in)
		}
	}
	return s.report(provenance.Declare(insts), kept), nil
}

// Document returns one document with every chunk, fenced as stored, and
// its tier in force (the resolver that judges retrieval's tiers). It
// returns ENOTFOUND for a document the store does not hold, holds as
// deleted or holds without chunks, and EUNAVAILABLE when the service was
// built without Options.Documents.
func (s *Service) Document(ctx context.Context, id string) (*ingestd.ServedDocument, error) {
	if s.docs == nil {
		return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "documents cannot be read whole here")
	}
	views, err := s.docs.DocumentChunks(ctx, []string{id})
	if err != nil {
		return nil, fmt.Errorf("read document %s: %w", id, err)
	}
	if len(views) == 0 || views[0].DocumentStatus == ingestd.StatusDeleted {
		return nil, ingestd.Errorf(ingestd.ENOTFOUND, "document %q not found", id)
	}
	tiers, err := s.decl.Tiers(ctx, s.store, []string{id})
	if err != nil {
		return nil, fmt.Errorf("tier of document %s: %w", id, err)
	}
	t, ok := tiers[id]
	if !ok {
		t = ingestd.TierUntrustedExternal
	}
	v := views[0]
	facts, err := s.store.TierFacts(ctx, []string{id}, nil)
	if err != nil {
		return nil, fmt.Errorf("readers of document %s: %w", id, err)
	}
	doc := &ingestd.ServedDocument{Readers: facts[id].Readers,
		ID: id, Installation: v.Installation, SourceKind: v.SourceKind, URI: v.URI, Title: v.Title,
		Tier: provenance.Name(t), Untrusted: provenance.Untrusted(t), Status: v.DocumentStatus,
		Chunks: make([]ingestd.ServedChunk, 0, len(views)),
	}
	for _, c := range views {
		if c.DocumentID != id {
			continue
		}
		doc.Chunks = append(doc.Chunks, ingestd.ServedChunk{
			ChunkID: c.ID, DocumentID: id, Installation: c.Installation, SourceKind: c.SourceKind, URI: c.URI, Title: c.Title,
			Tier: doc.Tier, Fenced: c.Fenced, Text: c.Text, HeadingPath: c.HeadingPath, Locator: c.Locator,
		})
	}
	if err := s.describe(ctx, doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// answer is the work of one Retrieve call.
type answer struct {
	s  *Service
	p  *plan
	qv []float32

	primary, expanded, rejected []served
	excluded                    map[string]bool // untrusted documents left out
	// trustedOnly leaves untrusted documents out of every block:
	// exclude_untrusted, or grounding auto's choice (see ground).
	trustedOnly bool
	grounded    string // what grounded the answer, an ingestd.Grounded* value
	// noMatch: nothing cleared the relevance floor (floor.go), so the
	// answer serves nothing.
	noMatch bool

	tiers *tierView // the tiers in force every stage and the verdict read
}

// served is a chunk chosen for a block with its score and relation.
type served struct {
	view  ingestd.ChunkView
	score float64
	via   string
}

// run fills the three blocks. The rejected block is independent of the
// other two and is computed concurrently with them.
//
// Grounding auto decides from the primary rankings whether untrusted
// documents may be served; the rejected block picks both ways meanwhile
// and keeps the one that matches the choice.
func (a *answer) run(ctx context.Context) error {
	var (
		wg     sync.WaitGroup
		rejErr error
		rej    rejectedPicks
	)
	if a.p.rejected {
		wg.Go(func() { rej, rejErr = a.rejectedBlock(ctx) })
	}
	err := a.primaryAndExpanded(ctx)
	wg.Wait()
	if err != nil {
		return err
	}
	if rejErr != nil {
		return rejErr
	}
	a.rejected = rej.all
	if a.noMatch {
		if err := a.floorRejected(ctx); err != nil {
			return err
		}
	}
	if a.trustedOnly {
		a.rejected = rej.trusted
		for _, id := range rej.untrusted {
			a.excluded[id] = true
		}
	}
	switch {
	case a.noMatch && len(a.rejected) == 0:
		a.grounded = ingestd.GroundedNothing
	case a.trustedOnly:
		a.grounded = ingestd.GroundedTrusted
	case a.p.auto:
		a.grounded = ingestd.GroundedExternal
	default:
		a.grounded = ingestd.GroundedAll
	}
	return nil
}

// uniq returns the distinct strings in first-seen order.
func uniq(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
