// Expand: the expanded block — graph neighbours and adjacent chunks of
// the primary block.

package retrieval

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

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
	neighbours, via, err := a.neighbours(ctx, primaryDocs, inPrimary)
	if err != nil {
		return err
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

// neighbours returns the documents one link away from the primary
// documents (either direction) and the other children of their parents,
// in link order, each with the relation it was reached by (via).
func (a *answer) neighbours(ctx context.Context, primaryDocs []string, inPrimary map[string]bool) ([]string, map[string]string, error) {
	links, err := a.s.store.Links(ctx, primaryDocs)
	if err != nil {
		return nil, nil, fmt.Errorf("read links: %w", err)
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
			return nil, nil, fmt.Errorf("read sibling links: %w", err)
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
	return neighbours, via, nil
}

// expansionChunks reads the chunks expand chooses from: the neighbours
// of primary chunks and the few chunks of each neighbour document most
// similar to the query (ingestd.Expansion).
func (a *answer) expansionChunks(ctx context.Context, neighbours []string) ([]ingestd.ChunkView, error) {
	x := ingestd.Expansion{Query: a.qv, EmbedderID: a.s.embedder.ID(), Documents: neighbours, Reader: a.p.asked.filter.Reader}
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
