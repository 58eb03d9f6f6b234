package connectors

import (
	"context"
	"net/http"
	"time"

	"github.com/ingestd/ingestd"
)

// Connector is what a kind builds for one installation: the Source every
// installation has, and the abilities its kind declares for it. A nil
// ability is one the installation does not have. cmd reaches an ability
// only through these fields: it never asks which kind built a connector,
// so a new kind with an ability needs no edit outside its own package and
// the registry list.
//
// connectortest has the conformance cases of each ability (RunWatcher,
// RunItemReader, RunFlavor); a kind's tests run them for what it declares.
type Connector struct {
	// Source syncs the installation. Required.
	Source ingestd.Source
	// Watcher, when set, reports changes at the source between passes:
	// serve runs it and queues a sync of the installation on each report.
	Watcher Watcher
	// Reader, when set, reads one item named at run time: `ingestd ingest
	// REF --installation ID` and, with RemoteRefs, POST
	// /v1/installations/{id}/urls.
	Reader ItemReader
	// RemoteRefs says Reader's references may come from an API client,
	// not only from the command line of the machine that holds the
	// configuration. A URL fetched through the guard may; a kind whose
	// references name the server's own files must leave it false.
	RemoteRefs bool
	// Intake, when set, accepts signed deliveries pushed to POST
	// /v1/webhooks/{installation}.
	Intake *Intake
	// Forgetter, when set, drops erased items from the sync state the
	// connector keeps in its own cursors.
	Forgetter Forgetter
}

// Forgetter is the ability to drop erased items from what a connector
// keeps of them in its installation's cursors, beyond the documents the
// pipeline stores (the IMAP connector's UID maps name each message's
// external id). An erasure asks it for cursor edits and applies them in
// the transaction that removes the documents.
type Forgetter interface {
	// Forget returns the edits that remove the external ids from the
	// cursors (an edit's empty Value removes the cursor). It reads
	// through cursors and writes nothing. What the connector needs to
	// give an item the same external id when it meets it again stays, so
	// that the erasure's tombstone still matches it.
	Forget(ctx context.Context, cursors CursorLister, externalIDs []string) ([]ingestd.Cursor, error)
}

// CursorLister reads one installation's cursors.
type CursorLister interface {
	// Cursors returns the cursors whose key starts with prefix, by key.
	Cursors(ctx context.Context, prefix string) ([]ingestd.Cursor, error)
}

// Watcher is the ability to report changes at the source as they happen
// (IMAP IDLE), so serve syncs within seconds instead of at the next
// interval. A report carries nothing: what changed is found by the sync
// pass it queues, so a watcher cannot bring in an item a pass would not.
type Watcher interface {
	// Watch blocks until ctx ends, calling changed — from one goroutine,
	// never concurrently — whenever the source may hold something the last
	// pass did not see; a spurious call costs one pass. It rides out a
	// broken connection itself (reconnecting with backoff). It returns nil
	// once ctx ends, and an error only when watching cannot go on (EINVALID:
	// the source refused the credentials); serve logs it and the
	// installation keeps its interval.
	Watch(ctx context.Context, changed func()) error
}

// ItemReader is the ability to ingest one item named at run time without a
// pass: `ingestd ingest REF --installation ID` and POST
// /v1/installations/{id}/urls. What a reference is belongs to the kind:
// files takes a path (absolute or relative to the working directory), url
// an http or https URL.
type ItemReader interface {
	// ReadOne returns the items ref names as a pass would Put them (a
	// parent before its children), without a tier. It is held to the
	// installation's scope as a pass is: a ref outside it (a path outside
	// the root, a URL off the installation's sites or refused by the
	// guard) is EINVALID naming the rule, and nothing is read; so is a ref
	// the kind cannot parse. An item over the installation's size cap is
	// ETOOLARGE; a ref that names nothing is ENOTFOUND or EINVALID. An
	// ended ctx is an error, and nothing is read.
	ReadOne(ctx context.Context, ref string) ([]ingestd.Item, error)
}

// Scheme names how a webhook sender signs its deliveries. Package
// connectors/webhook verifies each scheme; a Flavor picks one.
type Scheme string

// Schemes.
const (
	// SchemeHubSignature is the X-Hub-Signature-256 header: "sha256=" and
	// the hex HMAC-SHA256 of the body alone (GitHub, Gitea, Forgejo). No
	// time is signed.
	SchemeHubSignature Scheme = "hub-signature-256"
	// SchemeStandardWebhooks is Standard Webhooks: webhook-id,
	// webhook-timestamp and webhook-signature, an HMAC-SHA256 of
	// "id.timestamp.body" under a whsec_ secret. The timestamp is signed
	// and held to a tolerance.
	SchemeStandardWebhooks Scheme = "standard-webhooks"
)

// Known reports whether this build verifies the scheme.
func (s Scheme) Known() bool {
	return s == SchemeHubSignature || s == SchemeStandardWebhooks
}

// Intake is the ability to accept deliveries pushed to POST
// /v1/webhooks/{installation}: how they are signed, with which secrets,
// and how a verified delivery becomes jobs. The intake (package
// connectors/webhook) verifies every delivery before Mapper sees a byte of
// it, drops replays and answers 202 only once the jobs are queued.
type Intake struct {
	Scheme Scheme
	// Secrets are the signing keys (values, never variable names); a
	// delivery signed with any of them verifies. At least one.
	Secrets [][]byte
	// Tolerance bounds a signed timestamp's distance from now.
	Tolerance time.Duration
	// ReplayWindow is how long an accepted delivery is remembered.
	ReplayWindow time.Duration
	// Mapper turns verified deliveries into jobs. Required.
	Mapper DeliveryMapper
}

// Delivery is one pushed delivery whose signature verified.
type Delivery struct {
	// Header holds the request's headers. None of them is signed (the
	// scheme covers the body and, for Standard Webhooks, the id and
	// timestamp): a mapper may route on one (X-GitHub-Event) but takes
	// every fact it stores from Body.
	Header http.Header
	// Body is the verified body.
	Body []byte
	// SentAt is the signed timestamp; zero when the scheme signs none.
	SentAt time.Time
}

// DeliveryMapper turns the verified deliveries of one installation into
// jobs.
type DeliveryMapper interface {
	// Map returns the jobs the delivery asks for, in order; none for a
	// delivery that changes no document (a ping). Item and delete jobs are
	// for the mapper's installation and carry At, the time of the state
	// they describe, taken from the signed body (else SentAt), so a
	// replayed or late delivery cannot roll a document back; items carry no
	// tier. A sync job may name another installation. An error means the
	// delivery cannot be mapped: the intake answers 422 with its message
	// and drops the delivery, since the same body will not map better.
	// Map does no I/O.
	Map(d Delivery) ([]ingestd.Job, error)
}

// Flavor is a webhook flavour: one sender's signing scheme and the mapping
// of its deliveries. A kind supplies its flavours in Kind.Flavors
// (connectors/github supplies "github", connectors/webhook "standard");
// an installation of the webhook kind names one with webhook.flavor and
// finds it through Settings.Flavor, so the webhook kind imports no other
// kind and a new sender is a new Flavor, not an edit of the intake.
type Flavor struct {
	Name   string
	Scheme Scheme
	// keys returns a pointer to a new zero value of the flavour's own
	// keys, nil when it has none; build makes the mapper from them.
	// NewFlavor sets both, so that the keys build gets are always the
	// type keys made.
	keys  func() any
	build func(installation string, keys any) (DeliveryMapper, error)
}

// NewFlavor makes the flavour name, signed with scheme, whose own keys
// are the fields of the struct K: they sit in the installation's webhook
// block beside the webhook kind's keys and are decoded with them (unknown
// keys refused; a key both declare is an error). newMapper builds the
// mapper of one installation from its keys, the zero K when the block
// sets none; its errors are EINVALID and name the key. A flavour without
// keys of its own takes K = struct{}.
func NewFlavor[K any](name string, scheme Scheme, newMapper func(installation string, keys K) (DeliveryMapper, error)) Flavor {
	f := Flavor{Name: name, Scheme: scheme}
	if _, none := any(*new(K)).(struct{}); !none {
		f.keys = func() any { return new(K) }
	}
	f.build = func(installation string, keys any) (DeliveryMapper, error) {
		var k K
		if p, ok := keys.(*K); ok && p != nil {
			k = *p
		}
		return newMapper(installation, k)
	}
	return f
}

// NewKeys returns a pointer to a new zero value of the flavour's own keys
// for the webhook kind to decode into, or nil when it has none.
func (f Flavor) NewKeys() any {
	if f.keys == nil {
		return nil
	}
	return f.keys()
}

// Mapper builds the mapper of one installation from keys, the value
// NewKeys made once decoded (nil for the defaults). Returns EINVALID for
// a flavour not made by NewFlavor.
func (f Flavor) Mapper(installation string, keys any) (DeliveryMapper, error) {
	if f.build == nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "webhook flavour %q has no constructor", f.Name)
	}
	return f.build(installation, keys)
}
