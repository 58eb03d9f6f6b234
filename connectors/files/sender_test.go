package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// TestVerifiedSendersThroughThePipeline syncs a mixed mailbox export
// (colleagues' mail beside outsiders' and forgeries, the mail parser's
// sender fixtures) through the real connector and pipeline under a
// declaration that trusts verified mail from example.com, and reads the
// stored tiers in force. Only the verified colleagues' own text is
// trusted: a forged From, a foreign or misplaced Authentication-Results,
// an unaligned DKIM pass, and a verified message that forwards or
// attaches outside mail stay untrusted, as does the attached message
// itself; a verified reply's quoted outside lines are never stored.
func TestVerifiedSendersThroughThePipeline(t *testing.T) {
	want := map[string]ingestd.Tier{
		"dmarc-pass.eml":                               ingestd.TierTrustedInternal,
		"dkim-aligned.eml":                             ingestd.TierTrustedInternal,
		"quoted-reply.eml":                             ingestd.TierTrustedInternal,
		"forged-from.eml":                              ingestd.TierUntrustedExternal,
		"foreign-authserv.eml":                         ingestd.TierUntrustedExternal,
		"above-boundary.eml":                           ingestd.TierUntrustedExternal,
		"forged-below-boundary.eml":                    ingestd.TierUntrustedExternal,
		"dkim-other-domain.eml":                        ingestd.TierUntrustedExternal,
		"dmarc-other-domain.eml":                       ingestd.TierUntrustedExternal,
		"two-from.eml":                                 ingestd.TierUntrustedExternal,
		"attached-message.eml":                         ingestd.TierUntrustedExternal,
		"attached-message.eml#attachment/1/refund.eml": ingestd.TierUntrustedExternal,
		"forwarded-inline.eml":                         ingestd.TierUntrustedExternal,
	}
	root := t.TempDir()
	for name := range want {
		if strings.Contains(name, "#") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("..", "internal", "mail", "testdata", "sender", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	inst := ingestd.Installation{ID: "support", Kind: "files", Tier: ingestd.TierUntrustedExternal,
		VerifiedSenders: &ingestd.VerifiedSenders{AuthservID: "mx.example.com", Domains: []string{"example.com"}, Tier: ingestd.TierTrustedInternal}}
	c, err := connectors.NewRegistry(files.Kind).Build(inst, connectors.Settings{Decode: yamlDecoder("root: " + root + "\ninclude: ['*.eml']\n")})
	if err != nil {
		t.Fatal(err)
	}
	st := sqlitetest.MustOpen(t)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewLexical(64)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sync(t.Context(), inst, c.Source, nil); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	var docIDs []string
	for name := range want {
		id := ingestd.DocumentID(inst.ID, name)
		ids[id] = name
		docIDs = append(docIDs, id)
	}
	tiers, err := provenance.Declare([]ingestd.Installation{inst}).Tiers(t.Context(), st, docIDs)
	if err != nil {
		t.Fatal(err)
	}
	for id, name := range ids {
		got, ok := tiers[id]
		if !ok {
			t.Errorf("%s: not stored", name)
			continue
		}
		if got != want[name] {
			t.Errorf("%s: tier in force %q, want %q", name, got, want[name])
		}
	}
	chunks, err := st.DocumentChunks(t.Context(), docIDs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if tiers[c.DocumentID] == ingestd.TierTrustedInternal && strings.Contains(c.Text, "DE00 6666") {
			t.Errorf("%s: a trusted chunk holds outside text: %q", ids[c.DocumentID], c.Text)
		}
	}
	// The same mailbox without the declaration is all the installation's tier.
	plain := inst
	plain.VerifiedSenders = nil
	tiers, err = provenance.Declare([]ingestd.Installation{plain}).Tiers(t.Context(), st, docIDs)
	if err != nil {
		t.Fatal(err)
	}
	for id, got := range tiers {
		if got != ingestd.TierUntrustedExternal {
			t.Errorf("%s without verified_senders: %q", ids[id], got)
		}
	}
}
