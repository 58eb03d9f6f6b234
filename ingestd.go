// Package ingestd holds the domain vocabulary of the ingest daemon: the
// documents and chunks it stores, the trust tiers stamped on them, the links
// between them and the turn-level verdict that retrieval answers with.
//
// It imports only the standard library. Every other package speaks these
// types; none of them redefines them. Tiers are stamped by package pipeline
// from the policy registered for an installation's connector kind: a
// connector emits an Item, never a Document, so it cannot set or forget its
// own tier.
package ingestd

import "time"

// Tier is the trust tier an installation declares for what its source
// carries. The zero value means undeclared (NULL in a store): written before
// tiers existed, read as allowed. Any other value that is not one of the
// three constants below is an unknown tier and reads as untrusted-external
// everywhere; package provenance owns that resolution.
type Tier string

// The declared tiers.
const (
	TierTrustedInternal   Tier = "trusted-internal"
	TierUntrustedExternal Tier = "untrusted-external"
	TierMachineGenerated  Tier = "machine-generated"
)

// Status is a document's life-cycle state.
type Status string

// Document statuses. A rejected document is a dismissed approach (a PR closed
// without merge, an issue closed as not planned, or one marked by a human):
// retrieval serves it only in the rejected block. A deleted document is a
// tombstone: it keeps its identity and hash, its chunks leave every index.
const (
	StatusActive   Status = "active"
	StatusRejected Status = "rejected"
	StatusDeleted  Status = "deleted"
)

// Text formats an Item's Text may be in; the chunker splits by them.
const (
	FormatPlain    = "plain"
	FormatMarkdown = "markdown"
	FormatHTML     = "html" // already converted to readable text by the connector is preferred
	FormatMail     = "mail" // plain text whose quoted history is separated
)

// Installation is one configured source: an id, a connector kind and the tier
// its owner declared for it.
type Installation struct {
	ID       string
	Kind     string
	Tier     Tier
	Interval time.Duration // how often serve syncs it; 0 means never on its own

	// TierByMeta lets the owner declare, in configuration, a different
	// tier for items whose connector-reported metadata has a given value:
	// {"author_association": {"OWNER": trusted-internal}} tells a public
	// repository's maintainers apart from strangers. Keys and values are
	// the owner's declaration; the connector only reports the fact.
	TierByMeta map[string]map[string]Tier

	// VerifiedSenders, when set, lets verified mail from the owner's own
	// domains take a higher tier (see VerifiedSenders); nil for most
	// installations.
	VerifiedSenders *VerifiedSenders

	// Readers is who the owner declares may read the installation's
	// documents (files, url, webhook), where the connector reports none
	// of its own; the zero value leaves them unmapped, readable by no
	// person. ReadersByPath, tried in order before it, declares readers
	// for the items whose external id (a files installation's path)
	// matches a glob (path.Match).
	Readers       Readers
	ReadersByPath []PathReaders
}

// PathReaders declares the readers of the items whose external id
// matches Glob (path.Match syntax; "**/" is not special).
type PathReaders struct {
	Glob    string
	Readers Readers
}

// Item is what a connector emits: one document as the source has it, with
// no tier. Package pipeline stamps the tier, chunks, fences and embeds it.
type Item struct {
	ExternalID string // stable within the installation: a path, a Message-ID, an issue number
	ItemKind   string // "file", "mail", "attachment", "issue", "pull_request", "comment", "page", ...
	URI        string
	Title      string
	Author     string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Format     string // one of the Format constants; empty means FormatPlain
	Text       string
	Meta       map[string]string

	// Sections, when not empty, holds the item's text as its source
	// divides it — the pages of a PDF, the heading sections of a DOCX —
	// in place of Text, which must then be empty. The pipeline chunks each
	// section apart, so no chunk spans two, and every chunk carries its
	// section's Locator. An item without sections is chunked from Text
	// and its chunks have no locator.
	Sections []Section

	// ParentExternalID names the item this one was derived from (an
	// attachment's mail, a comment's issue). The derived document's tier is
	// the most restrictive of its own and its parent's, and a "parent" link
	// joins them.
	ParentExternalID string
	// Links to other items of the same installation, by external id.
	Links []ItemLink
	// Status is the connector's word on the item's state: StatusRejected
	// (a dismissed approach), StatusActive (explicitly not dismissed, e.g.
	// reopened) or empty (no opinion: a new document is active and a
	// stored one keeps the status a human may have given it).
	Status Status
	// Tier, when set, restricts the installation's declared tier for this
	// one item (a connector that knows an author is outside the
	// organisation). It can only restrict: the stamp is the most restrictive
	// of this and the declared tier, so a connector cannot raise trust.
	Tier Tier
	// Readers, when not nil, is who the source says may read the item (a
	// mailbox's ACL, a repository's collaborators); an unmapped value says
	// the connector could not determine them. Nil leaves the readers the
	// owner declared for the installation. A derived item's readers are
	// intersected with its parent's.
	Readers *Readers
}

// Section is a run of an item's text that shares one locator.
type Section struct {
	// Locator says where the text is in its source, for a person: "p. 3"
	// for a PDF page, a heading path "Refunds > Steps" for a section of a
	// DOCX or ODT; "" for text before a document's first heading.
	Locator string
	Text    string
}

// ItemLink is a link from an item to another item of the same installation.
type ItemLink struct {
	ToExternalID string
	Relation     string // "thread", "reply", "parent", "xref", "link", ...
}

// Document is one stored item with its stamped tier.
type Document struct {
	ID           string // DocumentID(installation, external id)
	Installation string
	ExternalID   string
	SourceKind   string // the installation's connector kind
	ItemKind     string
	URI          string
	Title        string
	Author       string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	ContentHash  string
	Tier         Tier // as stored: may be undeclared ("") or a value this build does not know
	Status       Status
	ParentID     string
	Meta         map[string]string
	IngestedAt   time.Time
	// Readers is who may read it, stamped by the pipeline; the zero
	// value (unmapped) is readable by no person.
	Readers Readers
}

// Chunk is a piece of a document. Fenced is the only form of its text meant
// for a prompt; Text is for display and the full-text index.
type Chunk struct {
	ID          string // ChunkID(document id, text, occurrence)
	DocumentID  string
	Ordinal     int
	HeadingPath []string
	Text        string
	Fenced      string
	Tokens      int
	Embedding   []float32
	EmbedderID  string
	Tier        Tier // the document's tier, denormalised for filtering
	// Locator is where the chunk is in its source document ("p. 3",
	// "Refunds > Steps"): its section's (Item.Sections); "" for a
	// document without sections.
	Locator string
}

// Link is a directed relation between two stored documents.
type Link struct {
	From     string
	To       string
	Relation string
}

// Verdict is the turn-level tool-firewall answer that travels with every
// retrieval response. It is computed from the store's tiers, judged by the
// declaration in force (package provenance), over all three blocks, never
// from anything the caller sent and never from content.
//
// The rule is turn-level: the whole context is one, and nothing can show
// that a call was not influenced by untrusted text in it. What the verdict
// grades is what an influenced call can do (AllowedToolClasses):
// ToolsAllowed means every class; a turn that served untrusted text may
// still use closed-world read-only tools (ToolRead); a turn whose
// provenance is unknown may use none.
type Verdict struct {
	// ToolsAllowed means every tool class is allowed: AllowedToolClasses
	// holds all three. A host that knows no classes reads only this.
	ToolsAllowed         bool     `json:"tools_allowed"`
	Mode                 string   `json:"mode"`
	Reason               string   `json:"reason"`
	UntrustedDocumentIDs []string `json:"untrusted_document_ids"`
	WouldBlock           bool     `json:"would_block"`
	// AllowedToolClasses is the set of tool classes the turn may use, never
	// nil in a verdict the server made: all three when ToolsAllowed;
	// [read] in enforce mode over untrusted grounding; none in enforce
	// mode over unknown provenance. In shadow mode it is all three and
	// Reason says what enforce would have allowed.
	AllowedToolClasses ToolClasses `json:"allowed_tool_classes"`
}

// Firewall modes.
const (
	ModeEnforce = "enforce"
	ModeShadow  = "shadow"
	ModeOff     = "off"
)

// Verdict reasons.
const (
	ReasonNoUntrusted = "no_untrusted_grounding"
	ReasonUntrusted   = "untrusted_grounding"
	ReasonOff         = "firewall_off"
	// ReasonUnknownProvenance: a served document's provenance could not
	// be read (gone from the store between the search and the verdict, a
	// tier this build does not know), so the verdict cannot vouch for
	// what wrote it and allows no tool class at all.
	ReasonUnknownProvenance = "unknown_provenance"
)
