package bench

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// MustCL100K returns OpenAI's cl100k_base encoding, loaded from the BPE
// ranks that tiktoken-go-loader embeds (no network).
func MustCL100K(tb testing.TB) *tiktoken.Tiktoken {
	tb.Helper()
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		tb.Fatal(err)
	}
	return enc
}

// TestCountTokensVsCL100K checks that chunker.CountTokens errs a little
// high against a real tokenizer on real text, so that a 400-token budget
// holds at most about 400 real tokens: the ratio ours/cl100k over each
// corpus must be within [1.0, 1.3].
func TestCountTokensVsCL100K(t *testing.T) {
	c := MustCorpus(t)
	enc := MustCL100K(t)
	for _, set := range []struct {
		name string
		docs []doc
	}{{"markdown", c.markdown}, {"plain", c.plain}} {
		ours, real := 0, 0
		for _, d := range set.docs {
			ours += chunker.CountTokens(d.text)
			real += len(enc.EncodeOrdinary(d.text))
		}
		ratio := float64(ours) / float64(real)
		t.Logf("%s: CountTokens %d, cl100k %d, ratio %.3f", set.name, ours, real, ratio)
		if ratio < 1.0 || ratio > 1.3 {
			t.Errorf("%s: ratio %.3f outside [1.0, 1.3]", set.name, ratio)
		}
	}
}

// TestChunkSizes reports, for each splitter at the shared budget, how many
// chunks it makes of the markdown corpus and how large they are in real
// (cl100k) tokens, so the benchmark compares like with like. It fails if an
// ingestd chunk is more than 35% over budget in real tokens (the worst case
// in this corpus is a space-padded numeric table, about 30% over).
func TestChunkSizes(t *testing.T) {
	c := MustCorpus(t)
	enc := MustCL100K(t)
	opts := &chunker.Options{MaxTokens: maxTokens, OverlapTokens: overlapTokens}
	texts := map[string][]string{}
	for _, d := range c.markdown {
		for _, ch := range chunker.Split(d.text, ingestd.FormatMarkdown, opts) {
			texts["ingestd"] = append(texts["ingestd"], ch.Text)
		}
		for name, s := range map[string]splitterText{"langchain-markdown": langchainMarkdownText(t), "langchain-recursive": langchainRecursiveText(t)} {
			texts[name] = append(texts[name], s(d.text)...)
		}
	}
	for _, name := range []string{"ingestd", "langchain-markdown", "langchain-recursive"} {
		total, most := 0, 0
		for _, s := range texts[name] {
			n := len(enc.EncodeOrdinary(s))
			total += n
			most = max(most, n)
		}
		t.Logf("%-20s %4d chunks, mean %5.1f cl100k tokens, max %d", name, len(texts[name]), float64(total)/float64(len(texts[name])), most)
		if name == "ingestd" && most > maxTokens*135/100 {
			t.Errorf("an ingestd chunk has %d cl100k tokens, budget %d", most, maxTokens)
		}
	}
}
