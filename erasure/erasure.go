// Package erasure removes ingested content for good and keeps it out: it
// plans an erasure (by document, by installation, by author), hands the
// store what to remove with the tombstones that record it, and answers
// the pipeline's question whether an item was erased.
//
// A tombstone is an HMAC-SHA256 of the erased identity — an installation
// and an external id, or an author — under the deployment's erasure key
// (Keyer): the store holds no identity in clear, and nobody without the
// key can test a guess against it. It never holds or logs erased content;
// what it reports lists documents by id and title, for the operator who
// asked.
package erasure

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
)

// MinKeyBytes is the shortest erasure key Keyer accepts.
const MinKeyBytes = 32

// Keyer computes tombstone keys under one erasure key. Every process of a
// deployment needs the same key: a tombstone made with another cannot
// match (stores then refuse with ECONFLICT, see ingestd.Eraser.Erased).
type Keyer struct {
	key []byte
	id  string
}

// NewKeyer returns a Keyer for the key; EINVALID for a key shorter than
// MinKeyBytes.
func NewKeyer(key []byte) (*Keyer, error) {
	if len(key) < MinKeyBytes {
		return nil, ingestd.Errorf(ingestd.EINVALID, "erasure key of %d bytes: want at least %d", len(key), MinKeyBytes)
	}
	k := &Keyer{key: slices.Clone(key)}
	k.id = k.mac("key-id")[:16]
	return k, nil
}

// ID names the key (a fingerprint, never the key): stores keep it beside
// each tombstone, and archives in their manifest.
func (k *Keyer) ID() string { return k.id }

func (k *Keyer) mac(parts ...string) string {
	h := hmac.New(sha256.New, k.key)
	h.Write([]byte("ingestd-erasure-v1"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Document is the tombstone key of an installation's external id.
func (k *Keyer) Document(installation, externalID string) string {
	return k.mac(ingestd.TombstoneDocument, installation, externalID)
}

// Author is the tombstone key of an author (a key AuthorKeys returns)
// within an installation, or in every installation when installation is
// "".
func (k *Keyer) Author(installation, author string) string {
	return k.mac(ingestd.TombstoneAuthor, installation, author)
}

// AuthorKeys returns the identities an Author field names, lower-cased
// and sorted: each mail address in it ("Alice <alice@example.com>, bob@
// example.com" names two), or, when it holds none, the whole field
// trimmed (a GitHub login, a webhook's author).
func AuthorKeys(author string) []string {
	var out []string
	for _, part := range strings.Split(author, ",") {
		part = strings.TrimSpace(part)
		if lt := strings.LastIndexByte(part, '<'); lt >= 0 {
			if gt := strings.IndexByte(part[lt:], '>'); gt > 0 {
				part = part[lt+1 : lt+gt]
			}
		}
		for _, f := range strings.Fields(part) {
			if strings.Contains(f, "@") {
				out = append(out, strings.ToLower(strings.Trim(f, "<>\"'")))
			}
		}
	}
	if len(out) == 0 {
		if a := strings.ToLower(strings.TrimSpace(author)); a != "" {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// NormalizeAuthor is the identity an operator names ("Alice
// <Alice@Example.com>" or "alice@example.com" or "octocat"), as
// AuthorKeys writes it; "" when it names none or more than one.
func NormalizeAuthor(s string) string {
	keys := AuthorKeys(s)
	if len(keys) != 1 {
		return ""
	}
	return keys[0]
}

// Tombstones is what Gate reads of a store (ingestd.Eraser has it).
type Tombstones interface {
	Erased(ctx context.Context, keyID string, keys []string) (bool, error)
}

// Gate answers whether an item was erased: its own identity, the
// document it was derived from, or one of its authors (in its
// installation or everywhere) carries a tombstone. It is what the
// pipeline asks before it stamps an item (pipeline.Erasures), and what
// the webhook intake asks before it queues one, so that erased text does
// not even reach the job stream. Safe for concurrent use.
type Gate struct {
	Keys  *Keyer
	Store Tombstones
}

// Erased reports whether the item of the installation was erased. Errors
// are the store's (ECONFLICT when its tombstones were made with another
// key).
func (g *Gate) Erased(ctx context.Context, installation string, item ingestd.Item) (bool, error) {
	return g.Store.Erased(ctx, g.Keys.ID(), g.keys(nil, installation, item))
}

// ErasedAny reports whether any of the items of the installation was
// erased, with one question to the store whatever their number. Errors
// as Erased.
func (g *Gate) ErasedAny(ctx context.Context, installation string, items []ingestd.Item) (bool, error) {
	var keys []string
	for _, it := range items {
		keys = g.keys(keys, installation, it)
	}
	if len(keys) == 0 {
		return false, nil
	}
	return g.Store.Erased(ctx, g.Keys.ID(), keys)
}

// keys appends the tombstone keys that would keep item out.
func (g *Gate) keys(keys []string, installation string, item ingestd.Item) []string {
	keys = append(keys, g.Keys.Document(installation, item.ExternalID))
	if item.ParentExternalID != "" {
		keys = append(keys, g.Keys.Document(installation, item.ParentExternalID))
	}
	for _, a := range AuthorKeys(item.Author) {
		keys = append(keys, g.Keys.Author(installation, a), g.Keys.Author("", a))
	}
	return keys
}

// ErasedJob reports whether the job carries an erased item: an item job
// whose item Erased; other jobs carry no text.
func (g *Gate) ErasedJob(ctx context.Context, job ingestd.Job) (bool, error) {
	if job.Kind != ingestd.JobItem || job.Item == nil {
		return false, nil
	}
	return g.Erased(ctx, job.Installation, *job.Item)
}
