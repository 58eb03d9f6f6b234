package ingestd

import (
	"context"
	"time"
)

// Retriever answers retrieval: the three blocks of an answer with the
// verdict over them, and the corpus report. retrieval.Service implements
// it over a store and client.Client over the network, so a chat
// backend written against a Retriever runs in process or remote alike;
// api serves any Retriever on HTTP and gRPC, and metrics wrap
// one as a decorator at the edge.
type Retriever interface {
	// Retrieve answers r. Returns EINVALID for an empty query, one longer
	// than MaxQueryBytes, a top_k outside 1..MaxTopK, an unknown tier
	// filter or an installation filter naming one that is not configured
	// (the message names those that are); EUNAVAILABLE when the store, the embedder or the server
	// cannot be reached; EUNAUTHORIZED or EFORBIDDEN when a server refuses
	// the caller's token.
	Retrieve(ctx context.Context, r RetrieveRequest) (*RetrieveResponse, error)
	// Provenance returns the corpus report, by tier in force, beside the
	// firewall mode, over the installations r names (all when none).
	// Errors as for Retrieve.
	Provenance(ctx context.Context, r ProvenanceRequest) (ProvenanceReport, error)
}

// ProvenanceRequest narrows the corpus report: the query of GET
// /v1/provenance and the ProvenanceRequest message.
type ProvenanceRequest struct {
	// Installations limits the report to the documents of these
	// installations, and its list to them; empty means all.
	Installations []string `json:"installations,omitempty"`
	// Principal and Reader are RetrieveRequest's: the report of a person
	// counts only what they may read.
	Principal string  `json:"principal,omitempty"`
	Reader    *Reader `json:"-"`
}

// Bounds of a RetrieveRequest.
const (
	DefaultTopK   = 8
	MaxTopK       = 100
	MaxQueryBytes = 4096
)

// RetrieveRequest is one retrieval query: the body of POST /v1/retrieve
// and the RetrieveRequest message.
type RetrieveRequest struct {
	Query string `json:"query"`
	// TopK is the size of the primary block: 0 means DefaultTopK;
	// 1..MaxTopK.
	TopK          int      `json:"top_k,omitempty"`
	Installations []string `json:"installations,omitempty"`
	// Tiers narrows by tier in force (see provenance.Declarations);
	// "undeclared" (or "") selects documents whose tier in force is
	// undeclared, which a loaded configuration never leaves (an
	// undeclared stamp takes its installation's declaration).
	Tiers       []string `json:"tiers,omitempty"`
	SourceKinds []string `json:"source_kinds,omitempty"`
	// Expand and IncludeRejected default to true when nil.
	Expand          *bool `json:"expand,omitempty"`
	IncludeRejected *bool `json:"include_rejected,omitempty"`
	// ExcludeUntrusted leaves the documents whose tier in force is
	// untrusted-external (unknown stamps and orphaned documents included)
	// out of all three blocks, so that a turn that needs tools can ask for
	// grounding that allows them.
	ExcludeUntrusted bool `json:"exclude_untrusted,omitempty"`
	// RequestID is carried into the firewall log.
	RequestID string `json:"request_id,omitempty"`
	// Grounding chooses how untrusted-external documents may ground the
	// answer: GroundingAll ("" means it) ranks every tier the request
	// allows together; GroundingAuto answers from the other tiers when
	// they hold the best evidence for the query and lets untrusted
	// documents in only when one of them answers it better (see
	// package retrieval). RetrieveResponse.Grounding says which happened.
	Grounding string `json:"grounding,omitempty"`
	// TrustedView asks for a second answer in the same call: the blocks
	// exclude_untrusted would serve, with their own verdict
	// (RetrieveResponse.TrustedView). A plan-then-act host quotes from the
	// answer and acts on the view.
	TrustedView bool `json:"trusted_view,omitempty"`
	// Principal names the person the request is for
	// ("user:alice@example.com", or the bare address): what a token that
	// acts for people must send, and what a token bound to one person may
	// only repeat. The one scope check (api/access) resolves it.
	Principal string `json:"principal,omitempty"`
	// Reader is who the request reads for, as api/access resolved it
	// from the caller's token and Principal: never read from a request
	// body. Nil is the service view (a service token, the operator),
	// which reads unmapped documents too; a person's reader reads only
	// the documents whose readers name them (Reader.May), in every
	// block and count.
	Reader *Reader `json:"-"`
}

// Values of RetrieveRequest.Grounding.
const (
	GroundingAll  = "all"
	GroundingAuto = "auto"
)

// Values of RetrieveResponse.Grounding: what grounded the answer.
const (
	// GroundedAll: every tier the request allows was ranked together
	// (grounding all).
	GroundedAll = "all"
	// GroundedTrusted: untrusted-external documents were left out, by
	// exclude_untrusted or because grounding auto found the best evidence
	// outside them.
	GroundedTrusted = "trusted"
	// GroundedExternal: grounding auto let untrusted-external documents in
	// because one of them answers the query better than any other.
	GroundedExternal = "external"
	// GroundedNothing: nothing answers the query (the relevance floor,
	// package retrieval), so no block holds a chunk and the verdict, over
	// nothing untrusted, allows tools.
	GroundedNothing = "none"
)

// RetrieveResponse is a retrieval answer. The verdict covers every
// document of the three blocks.
type RetrieveResponse struct {
	Primary  []ServedChunk `json:"primary"`
	Expanded []ServedChunk `json:"expanded"`
	Rejected []ServedChunk `json:"rejected"`
	// Verdict is never nil in an answer the server made. A client leaves
	// it nil when the answer carried none, or one with fields it does not
	// know; a nil verdict allows no tools (client's gate).
	Verdict *Verdict `json:"verdict"`
	// ExcludedUntrustedDocuments counts the distinct untrusted documents
	// that exclude_untrusted, or grounding auto answering from trusted
	// documents, left out of the blocks they would have been in.
	ExcludedUntrustedDocuments int `json:"excluded_untrusted_documents"`
	// Grounding says what grounded the answer: GroundedAll,
	// GroundedTrusted, GroundedExternal, or GroundedNothing when nothing
	// matches the query and every block is empty.
	Grounding string `json:"grounding"`
	// TrustedView is the trusted-only answer a request with trusted_view
	// asked for, nil otherwise. Its verdict is computed over exactly its
	// own blocks, as the answer's is over the answer's.
	TrustedView *RetrieveView `json:"trusted_view,omitempty"`
	// RequestID is the caller's id (request_id or X-Request-Id) or one made
	// up for the call; the firewall log line carries the same id.
	RequestID string `json:"request_id"`
}

// RetrieveView is a second set of blocks of one answer with its own
// verdict: RetrieveResponse.TrustedView.
type RetrieveView struct {
	Primary  []ServedChunk `json:"primary"`
	Expanded []ServedChunk `json:"expanded"`
	Rejected []ServedChunk `json:"rejected"`
	// Verdict covers exactly the view's three blocks. A client treats a
	// nil one as blocked, as for RetrieveResponse.Verdict.
	Verdict                    *Verdict `json:"verdict"`
	ExcludedUntrustedDocuments int      `json:"excluded_untrusted_documents"`
}

// ServedChunk is one chunk of an answer. Fenced is the only field meant
// for a prompt; Text is for display, as its author wrote it. URI, Title,
// HeadingPath and Locator, which outsiders write too, are for display and
// were neutralised where they entered (firewall.Neutralise: no marker-like
// or hidden text); the other fields are ingestd's own. (Chunk is the
// stored form.)
//
// Score means, per block: primary, the reciprocal-rank-fusion score of the
// full-text and vector rankings; expanded and rejected, the cosine
// similarity of the chunk's vector to the query's, shown as 0 when it is
// below 0 (an expanded chunk comes by its relation, and may point away).
type ServedChunk struct {
	ChunkID      string `json:"chunk_id"`
	DocumentID   string `json:"document_id"`
	Installation string `json:"installation"`
	SourceKind   string `json:"source_kind"`
	URI          string `json:"uri"`
	Title        string `json:"title"`
	// Tier is the document's tier in force: the most restrictive of its
	// stored stamp and its installation's current declaration,
	// untrusted-external for an unknown stamp or an orphaned document.
	Tier   string  `json:"tier"`
	Score  float64 `json:"score"`
	Fenced string  `json:"fenced"`
	Text   string  `json:"text"`
	// Via is the relation an expanded chunk came through: a stored link
	// relation ("thread", "reply", "parent", "xref", "link", ...),
	// ViaAdjacent or ViaSibling.
	Via         string   `json:"via,omitempty"`
	HeadingPath []string `json:"heading_path,omitempty"`
	// Locator is where the chunk is in its source document, for a person
	// to follow: "p. 3" for a page of a PDF, "Refunds > Steps" for a
	// section of a DOCX or ODT. Absent for documents without sections.
	Locator string `json:"locator,omitempty"`
}

// ServedDocument is one document as it is served for reading whole (an
// MCP resource): every chunk, fenced, in order, and the document's tier
// in force. Chunks' Score and Via are zero.
type ServedDocument struct {
	ID           string `json:"document_id"`
	Installation string `json:"installation"`
	SourceKind   string `json:"source_kind"`
	URI          string `json:"uri"`
	Title        string `json:"title"`
	// Tier is the tier in force, as in ServedChunk.
	Tier string `json:"tier"`
	// Untrusted is true when Tier is untrusted-external: text written
	// outside the organisation, never to drive a tool call.
	Untrusted bool          `json:"untrusted"`
	Status    Status        `json:"status"`
	Chunks    []ServedChunk `json:"chunks"`
	// The document's own fields, set where the reader holds them (GET
	// /v1/documents/{id}); MCP's resource leaves them out. Author and
	// Metadata are written by the source, for display only: Author was
	// neutralised where it entered, Metadata is where it is served.
	ExternalID string            `json:"external_id,omitempty"`
	ItemKind   string            `json:"item_kind,omitempty"`
	Author     string            `json:"author,omitempty"`
	CreatedAt  time.Time         `json:"created_at,omitzero"`
	UpdatedAt  time.Time         `json:"updated_at,omitzero"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	// Readers is who may read the document, for the one scope check
	// (api/access) to judge; it is never served.
	Readers Readers `json:"-"`
}

// Relations an expanded chunk can come through besides the stored link
// relations.
const (
	ViaAdjacent = "adjacent" // the chunk before or after a primary chunk
	ViaSibling  = "sibling"  // another child of a primary document's parent
)

// ProvenanceReport is the corpus report over not-deleted documents: how
// much of the corpus was written outside the organisation, beside whether
// that can drive a tool call (the firewall mode). Tiers,
// ExternallyAuthored and each installation's breakdown count tiers in
// force; Declared and Undeclared count the stored stamps, since "100%
// trusted with 0 declared" has not been assessed. Orphaned counts the
// documents whose installation is no longer configured (or is configured
// with another connector kind): they count as untrusted-external. Package
// provenance computes it (Declarations.Report).
type ProvenanceReport struct {
	Total      int `json:"total"`
	Declared   int `json:"declared"`
	Undeclared int `json:"undeclared"`
	Orphaned   int `json:"orphaned"`
	// Unmapped counts the documents whose readers could not be
	// determined (ingestd.Readers): no person may read them until a sync
	// maps them or the owner declares their readers. A person's report
	// counts none.
	Unmapped              int                  `json:"unmapped"`
	ExternallyAuthored    int                  `json:"externally_authored"`
	ExternallyAuthoredPct float64              `json:"externally_authored_pct"`
	Tiers                 []TierShare          `json:"tiers"`
	Installations         []InstallationReport `json:"installations"`
	Policy                ReportPolicy         `json:"policy"`
}

// TierShare is one tier's count and share of the total.
type TierShare struct {
	Tier  string  `json:"tier"`
	Count int     `json:"count"`
	Pct   float64 `json:"pct"`
}

// InstallationReport is one installation's line of the report. Tiers breaks
// its documents down by tier in force: an installation whose connector
// restricts some items (a public repo's strangers), or whose tier_by rules
// trust some (its maintainers), shows both.
type InstallationReport struct {
	ID        string      `json:"id"`
	Kind      string      `json:"kind"`
	Tier      string      `json:"tier"`
	Documents int         `json:"documents"`
	Unmapped  int         `json:"unmapped"`
	Tiers     []TierShare `json:"tiers"`
}

// ReportPolicy is the firewall setting the counts are to be read beside.
type ReportPolicy struct {
	FirewallMode string `json:"firewall_mode"`
	// UntrustedTurnToolClasses is what a turn that served untrusted text
	// may use under FirewallMode: [read] in enforce mode, every class in
	// shadow and off mode.
	UntrustedTurnToolClasses ToolClasses `json:"untrusted_turn_tool_classes"`
}
