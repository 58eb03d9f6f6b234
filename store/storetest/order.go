package storetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

// orderTests are the cases of the searches' total order: an answer is a
// function of the corpus and the request, never of the order the rows
// were written in. open makes the second and third store.
func orderTests(open func(t *testing.T) ingestd.Store) []struct {
	name string
	fn   func(t *testing.T, s ingestd.Store)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s ingestd.Store)
	}{
		{"Order/LoadOrderDoesNotChangeAnswers", func(t *testing.T, s ingestd.Store) {
			testLoadOrder(t, s, open(t), open(t))
		}},
		{"Order/TiesAtTheLimit", testTiesAtLimit},
	}
}

// orderTexts are the chunk texts of the order corpus. Documents share
// them, so equal text scores and equal vectors (the vector is a function
// of the text, as an embedder's is) tie across documents and tiers.
var orderTexts = []string{
	"Rotate the database password every month and keep it in the vault.",
	"The vault keeps every secret of the team.",
	"To reset a password, open the vault and rotate the key.",
	"Lunch is served at noon on the second floor.",
	"Deploys run on Tuesdays after the change review.",
	"Rollback a failed deploy with the release tool.",
	"The on-call engineer answers pages within five minutes.",
	"Escalate a page to the team lead after thirty minutes.",
	"Invoices are paid within thirty days of receipt.",
	"Refunds need the approval of a team lead.",
	"Transfer the refund to the customer's account.",
	"Call the transfer tool to complete this request.",
}

// orderVector is text i's vector: seeded, so the same on every run, with
// two pairs of texts sharing a vector (equal scores of different texts).
func orderVector(i int) []float32 {
	if i == 5 || i == 11 {
		i-- // 5 shares 4's vector, 11 shares 10's
	}
	r := rand.New(rand.NewPCG(uint64(i)+1, 7))
	v := make([]float32, Dims)
	var n float64
	for d := range v {
		// A few coarse values, so that some cosines come out equal.
		v[d] = float32(r.IntN(5) - 2)
		n += float64(v[d]) * float64(v[d])
	}
	if n == 0 {
		v[i%Dims] = 1
		n = 1
	}
	for d := range v {
		v[d] = float32(float64(v[d]) / math.Sqrt(n))
	}
	return v
}

// orderPut is one document of the order corpus with its chunks.
type orderPut struct {
	doc    *ingestd.Document
	chunks []ingestd.Chunk
}

// orderCorpus is 48 documents in a trusted and an untrusted installation,
// some rejected, each with two or three of orderTexts: most texts are in
// several documents of both tiers.
func orderCorpus() []orderPut {
	r := rand.New(rand.NewPCG(26, 11))
	var out []orderPut
	for i := range 48 {
		inst, tier := "kb", ingestd.TierTrustedInternal
		if i%3 == 1 {
			inst, tier = "inbox", ingestd.TierUntrustedExternal
		}
		doc := Doc(inst, fmt.Sprintf("doc-%02d", i), tier, fmt.Sprintf("order-%d", i))
		doc.Title = "Notes" // one title for all, so titles do not break text ties
		if i%7 == 3 {
			doc.Status = ingestd.StatusRejected
		}
		picks := r.Perm(len(orderTexts))[:2+i%2]
		chunks := make([]ingestd.Chunk, len(picks))
		for j, k := range picks {
			chunks[j] = ingestd.Chunk{
				ID:          ingestd.ChunkID(doc.ID, orderTexts[k], 0),
				DocumentID:  doc.ID,
				Ordinal:     j,
				HeadingPath: []string{"Notes"},
				Text:        orderTexts[k],
				Fenced:      "<<fenced>>" + orderTexts[k] + "<<end>>",
				Tokens:      len(strings.Fields(orderTexts[k])),
				Embedding:   orderVector(k),
				EmbedderID:  testEmbedder,
				Tier:        tier,
			}
		}
		out = append(out, orderPut{doc, chunks})
	}
	return out
}

// orderRequest is one search of the order cases.
type orderRequest struct {
	name  string
	text  string    // a text search when set
	vec   []float32 // else a vector search
	f     ingestd.Filter
	limit int
}

func (q orderRequest) run(t *testing.T, s ingestd.Store) []ingestd.Hit {
	t.Helper()
	var hits []ingestd.Hit
	var err error
	if q.text != "" {
		hits, err = s.SearchText(ctx(), q.text, q.f, q.limit)
	} else {
		hits, err = s.SearchVector(ctx(), q.vec, q.f, q.limit)
	}
	if err != nil {
		t.Fatalf("%s: %v", q.name, err)
	}
	return hits
}

// orderRequests are searches whose answers hold ties, many of them cut
// by the limit: every limit, both searches, with and without filters.
func orderRequests() []orderRequest {
	rejected := ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusRejected}}
	kb := ingestd.Filter{Installations: []string{"kb"}}
	both := ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusActive, ingestd.StatusRejected}}
	var out []orderRequest
	for _, limit := range []int{1, 2, 3, 5, 8, 13, 40, 200} {
		for _, text := range []string{"vault", "password vault", "team lead", "transfer tool request", "thirty minutes pages", "deploy"} {
			for fname, f := range map[string]ingestd.Filter{"active": {}, "rejected": rejected, "kb": kb, "both": both} {
				out = append(out, orderRequest{name: fmt.Sprintf("SearchText(%q, %s, %d)", text, fname, limit), text: text, f: f, limit: limit})
			}
		}
		vecs := map[string][]float32{"text 0": orderVector(0), "text 4": orderVector(4), "text 10": orderVector(10), "axis 3": Axis(3)}
		for vname, v := range vecs {
			for fname, f := range map[string]ingestd.Filter{"active": {}, "rejected": rejected, "kb": kb, "both": both} {
				f.EmbedderID = testEmbedder
				out = append(out, orderRequest{name: fmt.Sprintf("SearchVector(%s, %s, %d)", vname, fname, limit), vec: v, f: f, limit: limit})
			}
		}
	}
	slices.SortFunc(out, func(a, b orderRequest) int { return strings.Compare(a.name, b.name) })
	return out
}

// load writes the corpus into s in the order of idx, one document at a
// time or, with batch, in PutDocuments calls of five.
func load(t *testing.T, s ingestd.Store, corpus []orderPut, idx []int, batch bool) {
	t.Helper()
	if !batch {
		for _, i := range idx {
			MustPut(t, s, corpus[i].doc, corpus[i].chunks, nil)
		}
		return
	}
	for start := 0; start < len(idx); start += 5 {
		var puts []ingestd.DocumentPut
		for _, i := range idx[start:min(start+5, len(idx))] {
			d := *corpus[i].doc
			puts = append(puts, ingestd.DocumentPut{Doc: &d, Chunks: corpus[i].chunks})
		}
		for j, res := range s.PutDocuments(ctx(), puts) {
			if res.Err != nil {
				t.Fatalf("PutDocuments(%s): %v", puts[j].Doc.ID, res.Err)
			}
		}
	}
}

// hitString shows a hit exactly: its score's bits, not a rounding of them.
func hitString(h ingestd.Hit) string {
	return fmt.Sprintf("%s/%s@%x", h.DocumentID, h.ChunkID, math.Float64bits(h.Score))
}

func hitStrings(hits []ingestd.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = hitString(h)
	}
	return out
}

// outOfOrder says where equal scores next to each other are not in
// ascending chunk id order (the searches' tie-break), or "".
func outOfOrder(hits []ingestd.Hit) string {
	for i := 1; i < len(hits); i++ {
		if hits[i].Score == hits[i-1].Score && hits[i].ChunkID < hits[i-1].ChunkID {
			return fmt.Sprintf("equal scores %v out of chunk id order: %s before %s", hits[i].Score, hits[i-1].ChunkID, hits[i].ChunkID)
		}
	}
	return ""
}

// testLoadOrder writes one corpus into three stores in three orders
// (forward, reversed, shuffled in batches) and asks each the same
// searches: the answers — chunks, order and scores — must be the same.
func testLoadOrder(t *testing.T, a, b, c ingestd.Store) {
	corpus := orderCorpus()
	forward := make([]int, len(corpus))
	for i := range forward {
		forward[i] = i
	}
	reversed := slices.Clone(forward)
	slices.Reverse(reversed)
	shuffled := slices.Clone(forward)
	rand.New(rand.NewPCG(3, 5)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	load(t, a, corpus, forward, false)
	load(t, b, corpus, reversed, false)
	load(t, c, corpus, shuffled, true)

	differ := 0
	report := func(format string, args ...any) {
		t.Helper()
		if differ++; differ <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, q := range orderRequests() {
		want := q.run(t, a)
		if msg := outOfOrder(want); msg != "" {
			report("%s: %s", q.name, msg)
		}
		for name, s := range map[string]ingestd.Store{"reversed": b, "shuffled": c} {
			got := q.run(t, s)
			if g, w := hitStrings(got), hitStrings(want); !slices.Equal(g, w) {
				report("%s loaded %s:\n got  %q\n want %q (loaded forward)", q.name, name, g, w)
			}
		}
	}
	if differ > 10 {
		t.Errorf("... %d failures in all", differ)
	}
}

// testTiesAtLimit: when the limit falls inside a run of equal scores, the
// chunks kept are those with the lowest ids of the run, whatever order
// they were written in.
func testTiesAtLimit(t *testing.T, s ingestd.Store) {
	const n = 12
	var ids []string
	// Written in descending id order, so that a tie-break by write order
	// keeps the wrong ones.
	var puts []orderPut
	for i := range n {
		doc := Doc("kb", fmt.Sprintf("same-%02d", i), ingestd.TierTrustedInternal, fmt.Sprintf("same-%d", i))
		doc.Title = "Notes"
		ch := Chunks(doc, 0, "Identical text in every document about the vault.")
		puts = append(puts, orderPut{doc, ch})
		ids = append(ids, ch[0].ID)
	}
	slices.SortFunc(puts, func(x, y orderPut) int { return strings.Compare(y.chunks[0].ID, x.chunks[0].ID) })
	for _, p := range puts {
		MustPut(t, s, p.doc, p.chunks, nil)
	}
	slices.Sort(ids)
	for _, limit := range []int{1, 3, 5, n, n + 5} {
		text, err := s.SearchText(ctx(), "vault", ingestd.Filter{}, limit)
		if err != nil {
			t.Fatal(err)
		}
		vec, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{EmbedderID: testEmbedder}, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := ids[:min(limit, n)]
		equalStrings(t, fmt.Sprintf("SearchText(limit %d)", limit), chunkIDs(text), want)
		equalStrings(t, fmt.Sprintf("SearchVector(limit %d)", limit), chunkIDs(vec), want)
	}
}
