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
// every transport that serves this Service. The verdict is computed with
// one TierFacts read over the served documents, never from the request.
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
	"sort"
	"strings"
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

// tierSet is a set of tiers in force; nil means any.
type tierSet []ingestd.Tier

func (ts tierSet) has(t ingestd.Tier) bool { return ts == nil || slices.Contains(ts, t) }

// everyTier is every tier in force a document can have: undeclared and
// the declared tiers (provenance owns the list).
var everyTier = append(tierSet{""}, provenance.Tiers...)

// scope is a narrowing of what may be served: the store's filter, the
// tiers in force to keep among what the store returns (nil keeps all),
// and whether nothing can match.
type scope struct {
	filter ingestd.Filter
	tiers  tierSet
	empty  bool
}

// scope narrows to the installations and source kinds (empty: all) and
// the tiers in force (nil: all). The store filters by what
// Declarations.Reach says such documents can be; what it returns is judged
// by tier in force.
func (s *Service) scope(insts, kinds []string, tiers tierSet) scope {
	sc := scope{filter: ingestd.Filter{Installations: insts, SourceKinds: kinds}, tiers: tiers}
	if tiers == nil {
		return sc
	}
	reach, stored := s.decl.Reach(tiers)
	sc.filter.Tiers = stored
	if reach != nil {
		if len(insts) > 0 {
			reach = slices.DeleteFunc(slices.Clone(insts), func(id string) bool { return !slices.Contains(reach, id) })
		}
		sc.filter.Installations = reach
		sc.empty = len(reach) == 0
	}
	sc.empty = sc.empty || len(tiers) == 0
	return sc
}

// plan is a validated request.
type plan struct {
	query    string
	topK     int
	asked    scope // the caller's narrowing
	served   scope // what may be served: asked, narrowed by exclude_untrusted
	trusted  scope // asked without untrusted tiers: what exclude_untrusted serves
	expand   bool
	rejected bool
	exclude  bool
	auto     bool // grounding auto, without exclude_untrusted (which leaves it nothing to choose)
	view     bool // trusted_view
}

func (s *Service) plan(r ingestd.RetrieveRequest) (*plan, error) {
	q := strings.TrimSpace(r.Query)
	if q == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "query is empty")
	}
	if len(q) > ingestd.MaxQueryBytes {
		return nil, ingestd.Errorf(ingestd.EINVALID, "query is %d bytes, at most %d are allowed", len(q), ingestd.MaxQueryBytes)
	}
	p := &plan{query: q, topK: r.TopK, expand: r.Expand == nil || *r.Expand,
		rejected: r.IncludeRejected == nil || *r.IncludeRejected, exclude: r.ExcludeUntrusted,
		view: r.TrustedView}
	switch g := strings.TrimSpace(r.Grounding); g {
	case "", ingestd.GroundingAll:
	case ingestd.GroundingAuto:
		p.auto = !p.exclude
	default:
		return nil, ingestd.Errorf(ingestd.EINVALID, "grounding %q is not one of %s, %s", r.Grounding, ingestd.GroundingAll, ingestd.GroundingAuto)
	}
	switch {
	case p.topK == 0:
		p.topK = ingestd.DefaultTopK
	case p.topK < 0 || p.topK > ingestd.MaxTopK:
		return nil, ingestd.Errorf(ingestd.EINVALID, "top_k must be between 1 and %d, got %d", ingestd.MaxTopK, r.TopK)
	}
	var tiers tierSet
	for _, t := range r.Tiers {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || t == provenance.Undeclared:
			tiers = append(tiers, "")
		case provenance.Valid(ingestd.Tier(t)):
			tiers = append(tiers, ingestd.Tier(t))
		default:
			return nil, ingestd.Errorf(ingestd.EINVALID, "tier %q is not one of %s, %s", t, provenance.ValidList(), provenance.Undeclared)
		}
	}
	insts, kinds := nonEmpty(r.Installations), nonEmpty(r.SourceKinds)
	if err := s.checkInstallations(insts); err != nil {
		return nil, err
	}
	p.asked = s.scope(insts, kinds, tiers)
	p.served = p.asked
	if p.exclude || p.auto || p.view {
		keep, from := tierSet{}, tiers
		if from == nil {
			from = everyTier
		}
		for _, t := range from {
			if !provenance.Untrusted(t) {
				keep = append(keep, t)
			}
		}
		p.trusted = s.scope(insts, kinds, keep)
	}
	if p.exclude {
		p.served = p.trusted
	}
	return p, nil
}

// checkInstallations refuses a filter that names an installation that is
// not configured: a typo would otherwise read as an installation with
// nothing relevant in it.
func (s *Service) checkInstallations(ids []string) error {
	for _, id := range ids {
		if slices.Contains(s.ids, id) {
			continue
		}
		if len(s.ids) == 0 {
			return ingestd.Errorf(ingestd.EINVALID, "installation %q is not configured (none is)", id)
		}
		return ingestd.Errorf(ingestd.EINVALID, "installation %q is not configured (configured: %s)", id, strings.Join(s.ids, ", "))
	}
	return nil
}

func installationIDs(insts []ingestd.Installation) []string {
	ids := make([]string, len(insts))
	for i, inst := range insts {
		ids[i] = inst.ID
	}
	return ids
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

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
	a := s.newAnswer(p, vecs[0])
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
			va := s.newAnswer(&vp, vecs[0])
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

func (s *Service) newAnswer(p *plan, qv []float32) *answer {
	return &answer{s: s, p: p, qv: qv, excluded: map[string]bool{}, tiers: map[string]ingestd.Tier{},
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
// for the view a request with trusted_view asked for (which blocks only
// when a tier changed between the view's ranking and its verdict).
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
	counts, err := s.store.CountDocuments(ctx, s.decl.MetaKeys())
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
	doc := &ingestd.ServedDocument{
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
			Tier: doc.Tier, Fenced: c.Fenced, Text: c.Text, HeadingPath: c.HeadingPath,
		})
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

	tierMu sync.Mutex
	tiers  map[string]ingestd.Tier // tiers in force read so far, to filter by
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
	if a.trustedOnly {
		a.rejected = rej.trusted
		for _, id := range rej.untrusted {
			a.excluded[id] = true
		}
	}
	switch {
	case a.trustedOnly:
		a.grounded = ingestd.GroundedTrusted
	case a.p.auto:
		a.grounded = ingestd.GroundedExternal
	default:
		a.grounded = ingestd.GroundedAll
	}
	return nil
}

func (a *answer) primaryAndExpanded(ctx context.Context) error {
	if a.p.auto && a.p.served.empty {
		a.trustedOnly = true // nothing to choose from, and nothing untrusted to serve
	}
	if !a.p.served.empty {
		r, err := a.rank(ctx, a.p.served, a.candidates(a.p.topK))
		if err != nil {
			return err
		}
		hits := r.fused()
		if a.p.auto {
			if hits, err = a.ground(ctx, r, hits); err != nil {
				return err
			}
		}
		picked := pickPrimary(hits, a.p.topK, a.s.perDoc)
		views, err := a.views(ctx, picked)
		if err != nil {
			return err
		}
		for _, h := range picked {
			if v, ok := views[h.ChunkID]; ok {
				a.primary = append(a.primary, served{view: v, score: h.Score})
			}
		}
	}
	if a.p.exclude {
		if err := a.countExcludedPrimary(ctx); err != nil {
			return err
		}
	}
	if a.p.expand && len(a.primary) > 0 {
		if err := a.expand(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (a *answer) candidates(n int) int {
	return max(4*n, minCandidate)
}

// similar ranks chunks under sc by vector similarity alone. The rejected
// block admits a chunk only above a similarity threshold, so the nearest
// vectors are exactly its candidates and a full-text ranking would add
// none it could keep.
func (a *answer) similar(ctx context.Context, sc scope, limit int) ([]ingestd.Hit, error) {
	f := sc.filter
	f.EmbedderID = a.s.embedder.ID()
	vec, err := a.ranked(ctx, sc.tiers, limit, func(n int) ([]ingestd.Hit, error) {
		return a.s.store.SearchVector(ctx, a.qv, f, n)
	})
	if err != nil {
		return nil, fmt.Errorf("search vector: %w", err)
	}
	return slices.DeleteFunc(vec, func(h ingestd.Hit) bool { return h.Score < a.s.rejMin }), nil
}

// rankings are the two rankings of one search, each best first with its
// ranker's own score: text holds full-text relevance (BM25 on SQLite),
// vec the cosine similarity of chunks with any.
type rankings struct {
	text, vec []ingestd.Hit
}

// fused fuses the rankings (Fuse).
func (r rankings) fused() []ingestd.Hit { return Fuse(r.text, r.vec) }

// fused runs both rankers under sc, concurrently, and fuses their rankings.
func (a *answer) fused(ctx context.Context, sc scope, limit int) ([]ingestd.Hit, error) {
	r, err := a.rank(ctx, sc, limit)
	if err != nil {
		return nil, err
	}
	return r.fused(), nil
}

// rank runs both rankers under sc, concurrently.
func (a *answer) rank(ctx context.Context, sc scope, limit int) (rankings, error) {
	var (
		wg      sync.WaitGroup
		text    []ingestd.Hit
		textErr error
	)
	wg.Go(func() {
		text, textErr = a.ranked(ctx, sc.tiers, limit, func(n int) ([]ingestd.Hit, error) {
			return a.s.store.SearchText(ctx, a.p.query, sc.filter, n)
		})
	})
	vf := sc.filter
	vf.EmbedderID = a.s.embedder.ID() // compare only with vectors the same embedder made
	vec, err := a.ranked(ctx, sc.tiers, limit, func(n int) ([]ingestd.Hit, error) {
		return a.s.store.SearchVector(ctx, a.qv, vf, n)
	})
	wg.Wait()
	if textErr != nil {
		return rankings{}, fmt.Errorf("search text: %w", textErr)
	}
	if err != nil {
		return rankings{}, fmt.Errorf("search vector: %w", err)
	}
	// A chunk with no similarity at all is not a vector candidate.
	vec = slices.DeleteFunc(vec, func(h ingestd.Hit) bool { return h.Score <= 0 })
	return rankings{text: text, vec: vec}, nil
}

// maxRefills bounds how often ranked asks a ranker again for more.
const maxRefills = 2

// ranked returns the best limit hits of search whose document's tier in
// force is in tiers, best first. The store filtered by what such
// documents can be stamped with; when judging its answer by tier in force
// (a declaration narrowed since the stamp) leaves fewer than limit and the
// store may hold more, it asks again for four times as many, at most
// maxRefills times. With nil tiers it is search(limit).
func (a *answer) ranked(ctx context.Context, tiers tierSet, limit int, search func(n int) ([]ingestd.Hit, error)) ([]ingestd.Hit, error) {
	for n, refills := limit, 0; ; n, refills = 4*n, refills+1 {
		hits, err := search(n)
		if err != nil || tiers == nil {
			return hits, err
		}
		kept, err := a.keep(ctx, tiers, hits)
		if err != nil {
			return nil, err
		}
		if len(kept) >= limit || len(hits) < n || refills == maxRefills {
			return kept[:min(len(kept), limit)], nil
		}
	}
}

// keep returns the hits whose document's tier in force is in tiers.
func (a *answer) keep(ctx context.Context, tiers tierSet, hits []ingestd.Hit) ([]ingestd.Hit, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.DocumentID
	}
	inForce, err := a.inForce(ctx, ids)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(hits, func(h ingestd.Hit) bool { return !tiers.has(inForce[h.DocumentID]) }), nil
}

// inForce returns the tier in force of each document, reading only those
// this answer has not read yet. A document the store does not hold counts
// as untrusted-external.
func (a *answer) inForce(ctx context.Context, ids []string) (map[string]ingestd.Tier, error) {
	a.tierMu.Lock()
	var need []string
	seen := map[string]bool{}
	for _, id := range ids {
		if _, ok := a.tiers[id]; !ok && !seen[id] {
			seen[id] = true
			need = append(need, id)
		}
	}
	a.tierMu.Unlock()
	var read map[string]ingestd.Tier
	if len(need) > 0 {
		var err error
		if read, err = a.s.decl.Tiers(ctx, a.s.store, need); err != nil {
			return nil, fmt.Errorf("read tiers: %w", err)
		}
	}
	a.tierMu.Lock()
	defer a.tierMu.Unlock()
	for _, id := range need {
		t, ok := read[id]
		if !ok {
			t = ingestd.TierUntrustedExternal
		}
		a.tiers[id] = t
	}
	out := make(map[string]ingestd.Tier, len(ids))
	for _, id := range ids {
		out[id] = a.tiers[id]
	}
	return out, nil
}

// Fuse merges rankings by reciprocal rank fusion (k = 60): a chunk scores
// the sum of 1/(60+rank) over the rankings it appears in, rank from 1.
// Ties are broken by chunk id so the order is deterministic.
func Fuse(rankings ...[]ingestd.Hit) []ingestd.Hit {
	idx := map[string]int{}
	var out []ingestd.Hit
	for _, ranking := range rankings {
		for i, h := range ranking {
			sc := 1 / float64(rrfK+i+1)
			if j, ok := idx[h.ChunkID]; ok {
				out[j].Score += sc
				continue
			}
			idx[h.ChunkID] = len(out)
			out = append(out, ingestd.Hit{ChunkID: h.ChunkID, DocumentID: h.DocumentID, Score: sc})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ChunkID < out[j].ChunkID
	})
	return out
}

// pickPrimary takes the best topK hits with at most perDoc per document.
func pickPrimary(hits []ingestd.Hit, topK, perDoc int) []ingestd.Hit {
	var out []ingestd.Hit
	per := map[string]int{}
	for _, h := range hits {
		if len(out) == topK {
			break
		}
		if per[h.DocumentID] == perDoc {
			continue
		}
		per[h.DocumentID]++
		out = append(out, h)
	}
	return out
}

func (a *answer) views(ctx context.Context, hits []ingestd.Hit) (map[string]ingestd.ChunkView, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ChunkID
	}
	vs, err := a.s.store.Chunks(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read chunks: %w", err)
	}
	m := make(map[string]ingestd.ChunkView, len(vs))
	for _, v := range vs {
		m[v.ID] = v
	}
	return m, nil
}

// countExcludedPrimary ranks again without the exclusion and counts the
// untrusted documents that would have been in primary.
func (a *answer) countExcludedPrimary(ctx context.Context) error {
	if a.p.asked.empty {
		return nil
	}
	hits, err := a.fused(ctx, a.p.asked, a.candidates(a.p.topK))
	if err != nil {
		return err
	}
	var ids []string
	for _, h := range pickPrimary(hits, a.p.topK, a.s.perDoc) {
		ids = append(ids, h.DocumentID)
	}
	tiers, err := a.inForce(ctx, ids)
	if err != nil {
		return err
	}
	for id, t := range tiers {
		if provenance.Untrusted(t) {
			a.excluded[id] = true
		}
	}
	return nil
}

// allowed reports whether a chunk reached by expansion may be served: its
// document is active and matches the request's narrowing, by its tier in
// force from tiers. An untrusted one dropped by exclude_untrusted is
// counted.
func (a *answer) allowed(v ingestd.ChunkView, tiers map[string]ingestd.Tier) bool {
	if v.DocumentStatus != ingestd.StatusActive {
		return false
	}
	f := a.p.asked.filter
	if len(f.Installations) > 0 && !slices.Contains(f.Installations, v.Installation) {
		return false
	}
	if len(f.SourceKinds) > 0 && !slices.Contains(f.SourceKinds, v.SourceKind) {
		return false
	}
	if a.p.asked.tiers == nil && !a.trustedOnly {
		return true
	}
	t := tiers[v.DocumentID]
	if !a.p.asked.tiers.has(t) {
		return false
	}
	if a.trustedOnly && provenance.Untrusted(t) {
		a.excluded[v.DocumentID] = true
		return false
	}
	return true
}

// similarity is the cosine of the chunk's vector and the query's, 0 when
// the vector was made by another embedder. Vectors are L2-normalised.
func (a *answer) similarity(c ingestd.Chunk) float64 {
	if len(c.Embedding) != len(a.qv) || (c.EmbedderID != "" && c.EmbedderID != a.s.embedder.ID()) {
		return 0
	}
	return float64(ingestd.Dot(a.qv, c.Embedding))
}

// expand fills the expanded block: documents one link away from primary
// documents (either direction), the other children of a primary document's
// parent, and the chunks next to primary chunks. A neighbour document
// contributes its chunk most similar to the query.
func (a *answer) expand(ctx context.Context) error {
	inPrimary := map[string]bool{} // documents
	chunkSeen := map[string]bool{}
	var primaryDocs []string
	for _, c := range a.primary {
		chunkSeen[c.view.ID] = true
		if !inPrimary[c.view.DocumentID] {
			inPrimary[c.view.DocumentID] = true
			primaryDocs = append(primaryDocs, c.view.DocumentID)
		}
	}
	links, err := a.s.store.Links(ctx, primaryDocs)
	if err != nil {
		return fmt.Errorf("read links: %w", err)
	}
	sortLinks(links)
	via := map[string]string{} // neighbour document -> relation
	var neighbours []string
	add := func(doc, rel string) {
		if inPrimary[doc] || via[doc] != "" {
			return
		}
		via[doc] = rel
		neighbours = append(neighbours, doc)
	}
	var parents []string
	for _, l := range links {
		if inPrimary[l.From] {
			add(l.To, l.Relation)
			if l.Relation == "parent" {
				parents = append(parents, l.To)
			}
		}
		if inPrimary[l.To] {
			add(l.From, l.Relation)
		}
	}
	if len(parents) > 0 {
		pl, err := a.s.store.Links(ctx, uniq(parents))
		if err != nil {
			return fmt.Errorf("read sibling links: %w", err)
		}
		sortLinks(pl)
		isParent := map[string]bool{}
		for _, p := range parents {
			isParent[p] = true
		}
		for _, l := range pl {
			if l.Relation == "parent" && isParent[l.To] {
				add(l.From, ingestd.ViaSibling)
			}
		}
	}

	// One read for the chunks next to primary chunks and the best
	// candidates of neighbours.
	all, err := a.expansionChunks(ctx, neighbours)
	if err != nil {
		return err
	}
	byDoc := map[string][]ingestd.ChunkView{}
	for _, v := range all {
		byDoc[v.DocumentID] = append(byDoc[v.DocumentID], v)
	}
	var out []served
	for _, c := range a.primary {
		for _, v := range byDoc[c.view.DocumentID] {
			if (v.Ordinal == c.view.Ordinal-1 || v.Ordinal == c.view.Ordinal+1) && !chunkSeen[v.ID] {
				chunkSeen[v.ID] = true
				out = append(out, served{view: v, score: a.similarity(v.Chunk), via: ingestd.ViaAdjacent})
			}
		}
	}
	var tiers map[string]ingestd.Tier
	if a.p.asked.tiers != nil || a.trustedOnly {
		if tiers, err = a.inForce(ctx, neighbours); err != nil {
			return err
		}
	}
	for _, doc := range neighbours {
		chunks := byDoc[doc]
		if len(chunks) == 0 || !a.allowed(chunks[0], tiers) {
			continue
		}
		best, bestScore := chunks[0], a.similarity(chunks[0].Chunk)
		for _, v := range chunks[1:] {
			if sc := a.similarity(v.Chunk); sc > bestScore {
				best, bestScore = v, sc
			}
		}
		out = append(out, served{view: best, score: bestScore, via: via[doc]})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].view.ID < out[j].view.ID
	})
	if len(out) > a.s.expCap {
		out = out[:a.s.expCap]
	}
	a.expanded = out
	return nil
}

// expansionChunks reads the chunks expand chooses from: the neighbours
// of primary chunks and the few chunks of each neighbour document most
// similar to the query (ingestd.Expansion).
func (a *answer) expansionChunks(ctx context.Context, neighbours []string) ([]ingestd.ChunkView, error) {
	x := ingestd.Expansion{Query: a.qv, EmbedderID: a.s.embedder.ID(), Documents: neighbours}
	for _, c := range a.primary {
		x.Adjacent = append(x.Adjacent,
			ingestd.ChunkPosition{DocumentID: c.view.DocumentID, Ordinal: c.view.Ordinal - 1},
			ingestd.ChunkPosition{DocumentID: c.view.DocumentID, Ordinal: c.view.Ordinal + 1})
	}
	all, err := a.s.store.ExpansionChunks(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("read expansion chunks: %w", err)
	}
	return all, nil
}

func sortLinks(ls []ingestd.Link) {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].From != ls[j].From {
			return ls[i].From < ls[j].From
		}
		if ls[i].To != ls[j].To {
			return ls[i].To < ls[j].To
		}
		return ls[i].Relation < ls[j].Relation
	})
}

// rejectedPicks are the rejected block's candidates: all under the
// request's own narrowing, trusted without untrusted documents (only when
// the answer may leave them out), and untrusted the untrusted documents
// all holds.
type rejectedPicks struct {
	all, trusted []served
	untrusted    []string
}

// rejectedBlock picks the rejected block: chunks of rejected documents,
// ranked like primary, one per document, whose similarity to the query
// reaches RejectedMinScore. When the answer may leave untrusted documents
// out (exclude_untrusted, grounding auto) it picks both with and without
// them; run keeps the one that matches the answer.
//
// It runs concurrently with primary and expansion, so it touches nothing
// of a but what it reads.
func (a *answer) rejectedBlock(ctx context.Context) (rejectedPicks, error) {
	pick := func(sc scope) ([]served, error) {
		if sc.empty {
			return nil, nil
		}
		sc.filter.Statuses = []ingestd.Status{ingestd.StatusRejected}
		hits, err := a.similar(ctx, sc, a.candidates(a.s.rejCap))
		if err != nil {
			return nil, err
		}
		hits = pickPrimary(hits, 4*a.s.rejCap, 1)
		views, err := a.views(ctx, hits)
		if err != nil {
			return nil, err
		}
		var out []served
		for _, h := range hits {
			v, ok := views[h.ChunkID]
			if !ok || v.DocumentStatus != ingestd.StatusRejected {
				continue
			}
			if sc := a.similarity(v.Chunk); sc >= a.s.rejMin {
				out = append(out, served{view: v, score: sc})
				if len(out) == a.s.rejCap {
					break
				}
			}
		}
		return out, nil
	}
	var (
		r          rejectedPicks
		wg         sync.WaitGroup
		trustedErr error
	)
	if a.p.exclude || a.p.auto {
		wg.Go(func() { r.trusted, trustedErr = pick(a.p.trusted) })
	}
	all, err := pick(a.p.asked)
	wg.Wait()
	if err != nil {
		return r, err
	}
	if trustedErr != nil {
		return r, trustedErr
	}
	r.all = all
	if a.p.exclude || a.p.auto {
		ids := make([]string, len(all))
		for i, c := range all {
			ids[i] = c.view.DocumentID
		}
		tiers, err := a.inForce(ctx, ids)
		if err != nil {
			return r, err
		}
		for _, id := range ids {
			if provenance.Untrusted(tiers[id]) {
				r.untrusted = append(r.untrusted, id)
			}
		}
	}
	return r, nil
}

// response computes the verdict over the three blocks from one fresh read
// of their tiers in force and builds the answer. Served tiers come from
// that same read, so what a chunk shows and what the verdict counted
// agree.
func (a *answer) response(ctx context.Context) (*ingestd.RetrieveResponse, error) {
	var ids []string
	for _, block := range [][]served{a.primary, a.expanded, a.rejected} {
		for _, c := range block {
			ids = append(ids, c.view.DocumentID)
		}
	}
	ids = uniq(ids)
	tiers := map[string]ingestd.Tier{}
	if len(ids) > 0 {
		var err error
		if tiers, err = a.s.decl.Tiers(ctx, a.s.store, ids); err != nil {
			return nil, fmt.Errorf("read tiers: %w", err)
		}
	}
	v := firewall.Decide(a.s.mode, ids, tiers)
	if v.UntrustedDocumentIDs == nil {
		v.UntrustedDocumentIDs = []string{}
	}
	resp := &ingestd.RetrieveResponse{
		Primary:  a.chunks(a.primary, tiers),
		Expanded: a.chunks(a.expanded, tiers),
		Rejected: a.chunks(a.rejected, tiers),
		Verdict:  &v,
	}
	if a.trustedOnly {
		resp.ExcludedUntrustedDocuments = len(a.excluded)
	}
	resp.Grounding = a.grounded
	return resp, nil
}

func (a *answer) chunks(block []served, tiers map[string]ingestd.Tier) []ingestd.ServedChunk {
	out := make([]ingestd.ServedChunk, 0, len(block))
	for _, c := range block {
		t, ok := tiers[c.view.DocumentID]
		if !ok {
			t = ingestd.TierUntrustedExternal // gone from the store: firewall.Decide counts it so too
		}
		out = append(out, ingestd.ServedChunk{
			ChunkID: c.view.ID, DocumentID: c.view.DocumentID,
			Installation: c.view.Installation, SourceKind: c.view.SourceKind,
			URI: c.view.URI, Title: c.view.Title, Tier: provenance.Name(t),
			Score: c.score, Fenced: c.view.Fenced, Text: c.view.Text, Via: c.via,
			HeadingPath: c.view.HeadingPath, Locator: c.view.Locator,
		})
	}
	return out
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
