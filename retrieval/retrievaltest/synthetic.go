package retrievaltest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/benchmarks/storebench"
)

// Synthetic is a generated corpus for benchmarks: text drawn from a Zipf
// distribution over a made-up vocabulary (so a few words are everywhere
// and most are rare, as in real text), documents of four chunks, links
// between documents (threads, cross-references, parents), a mix of tiers
// and some rejected documents.
type Synthetic struct {
	Docs    []Doc
	Queries []string
}

// NewSynthetic generates about chunks chunks (rounded to whole documents)
// and 256 queries, deterministically from seed.
func NewSynthetic(chunks int, seed uint64) *Synthetic {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vocab := storebench.Vocabulary(r, 8000)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed+1, seed+2)), 1.07, 2, uint64(len(vocab)-1))
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	const perDoc = 4
	insts := SyntheticInstallations(false)
	s := &Synthetic{}
	n := (chunks + perDoc - 1) / perDoc
	for i := range n {
		in := insts[i%len(insts)]
		d := Doc{Installation: in.ID, Kind: in.Kind, ExternalID: fmt.Sprintf("doc-%06d", i), Title: words(4), Tier: in.Tier}
		if in.ID == "repo" {
			d.Meta = map[string]string{"author_association": "MEMBER"}
			if r.IntN(4) == 0 {
				d.Tier = ingestd.TierUntrustedExternal // a stranger's comment in a member's repo
				d.Meta["author_association"] = "NONE"
			}
		}
		if r.IntN(30) == 0 {
			d.Status = ingestd.StatusRejected
		}
		for range perDoc {
			d.Chunks = append(d.Chunks, words(40+r.IntN(60)))
		}
		// Links to earlier documents of the same installation.
		if i >= len(insts)*4 {
			back := func() string { return fmt.Sprintf("doc-%06d", i-len(insts)*(1+r.IntN(min(200, i/len(insts))))) }
			switch r.IntN(3) {
			case 0:
				d.Links = append(d.Links, Link{To: back(), Relation: "parent"})
			case 1:
				d.Links = append(d.Links, Link{To: back(), Relation: "thread"})
			}
			if r.IntN(3) == 0 {
				d.Links = append(d.Links, Link{To: back(), Relation: "xref"})
			}
		}
		s.Docs = append(s.Docs, d)
	}
	for range 256 {
		s.Queries = append(s.Queries, words(2+r.IntN(3)))
	}
	return s
}

// SyntheticInstallations are the installations of the synthetic corpus,
// as its documents were stamped. With tierBy, "repo" is declared as a
// public repository would be — untrusted-external, with
// tier_by_author_association trusting its members — which judges its
// documents alike but makes every tier lookup read their metadata.
func SyntheticInstallations(tierBy bool) []ingestd.Installation {
	insts := []ingestd.Installation{
		{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal},
		{ID: "repo", Kind: "github", Tier: ingestd.TierTrustedInternal},
		{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal},
		{ID: "legacy", Kind: "files"}, // configured before tiers existed
		{ID: "bots", Kind: "webhook", Tier: ingestd.TierMachineGenerated},
	}
	if tierBy {
		insts[1].Tier = ingestd.TierUntrustedExternal
		insts[1].TierByMeta = map[string]map[string]ingestd.Tier{"author_association": {"MEMBER": ingestd.TierTrustedInternal}}
	}
	return insts
}
