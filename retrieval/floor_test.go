package retrieval_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// TestQueryThatMatchesNothingServesNothing: a query none of whose words
// the corpus holds is answered with no chunk in any block, says so
// (grounding "none"), and its verdict allows tools, since nothing
// untrusted was served. A query with one word the corpus holds is served
// as before.
func TestQueryThatMatchesNothingServesNothing(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	for _, q := range []string{"zzzqqq nonexistentword", "qwxz", "nonexistentword", "blorptastic frumious"} {
		for _, r := range []ingestd.RetrieveRequest{
			{Query: q},
			{Query: q, Grounding: ingestd.GroundingAuto, TrustedView: true},
			{Query: q, ExcludeUntrusted: true},
		} {
			resp := MustRetrieve(t, svc, r)
			if n := len(resp.Primary) + len(resp.Expanded) + len(resp.Rejected); n != 0 {
				t.Errorf("%+v: %d chunks served (first %v), want none", r, n, first(resp))
			}
			if resp.Grounding != ingestd.GroundedNothing {
				t.Errorf("%+v: grounding %q, want %q", r, resp.Grounding, ingestd.GroundedNothing)
			}
			if !resp.Verdict.ToolsAllowed {
				t.Errorf("%+v: verdict %+v, want tools allowed over nothing", r, resp.Verdict)
			}
		}
	}
	for _, q := range []string{"vacaton days accrue", "refund"} {
		if resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: q}); len(resp.Primary) == 0 || resp.Grounding == ingestd.GroundedNothing {
			t.Errorf("%q: %d primary, grounding %q: want it served", q, len(resp.Primary), resp.Grounding)
		}
	}
}

func first(resp *ingestd.RetrieveResponse) string {
	for _, b := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		if len(b) > 0 {
			return b[0].Text
		}
	}
	return ""
}

// toyModel embeds as a model does: every vector shares one direction
// (unrelated texts have a cosine well above 0) and a text gets a
// component per concept it names, by any of the concept's words, so a
// query can be near a chunk without a word in common.
type toyModel struct{}

var toyConcepts = [][]string{
	{"vacation", "furlough", "holiday"},
	{"refund", "reimburse"},
	{"deploy", "rollout", "ship"},
}

func (toyModel) ID() string { return "toy-model/1" }
func (toyModel) Dims() int  { return 1 + len(toyConcepts) }

func (toyModel) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, 1+len(toyConcepts))
		v[0] = 1
		for k, words := range toyConcepts {
			for _, w := range words {
				if strings.Contains(strings.ToLower(text), w) {
					v[1+k] = 2
				}
			}
		}
		var n float32
		for _, x := range v {
			n += x * x
		}
		n = float32(math.Sqrt(float64(n)))
		for j := range v {
			v[j] /= n
		}
		out[i] = v
	}
	return out, nil
}

// TestDenseFloorKeepsWhatBeatsTheNoise: with a model's embeddings and no
// query word in the corpus, a chunk more similar to the query than any is
// to nonsense is served ("furlough" is near the vacation policy), and a
// query of nonsense, as near everything as the probe is, is served
// nothing.
func TestDenseFloorKeepsWhatBeatsTheNoise(t *testing.T) {
	s := retrievaltest.MustStore(t)
	e := toyModel{}
	retrievaltest.MustPut(t, s, e, retrievaltest.Acceptance()...)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "furlough"})
	if len(resp.Primary) == 0 || resp.Primary[0].DocumentID != retrievaltest.Vacation.ID() {
		t.Errorf("furlough: primary %q, want the vacation policy first", first(resp))
	}
	resp = MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "zzzqqq nonexistentword"})
	if len(resp.Primary)+len(resp.Expanded) != 0 || resp.Grounding != ingestd.GroundedNothing {
		t.Errorf("zzzqqq: %d primary, grounding %q, want nothing", len(resp.Primary), resp.Grounding)
	}
	// A floor set above what two concepts' query is to one concept's
	// chunk (cosine 0.75) leaves nothing.
	high, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations(), MinSimilarity: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "furlough reimburse"}); len(resp.Primary) == 0 {
		t.Errorf("furlough reimburse: nothing served, want the vacation and refund documents")
	}
	if resp := MustRetrieve(t, high, ingestd.RetrieveRequest{Query: "furlough reimburse"}); len(resp.Primary) != 0 {
		t.Errorf("furlough reimburse under MinSimilarity 0.9: primary %q, want none", first(resp))
	}
}
