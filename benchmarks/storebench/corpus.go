package storebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/store/sqlite"
)

// Dims is the dimension of the lexical embedder the corpus is embedded
// with (the default).
const Dims = 384

// ChunksPerDoc is how many chunks each synthetic document has.
const ChunksPerDoc = 4

// Installation is one installation of the synthetic corpus: its id, the
// tier its configuration declares and the tier its documents were stamped
// with ("" for legacy: stamped before tiers existed).
type Installation struct {
	ID       string
	Declared ingestd.Tier
	Stamped  ingestd.Tier
}

// Installations are the five installations of the synthetic corpus, one of
// every tier and one undeclared, all of kind files (none is ever synced: the
// benchmark's configuration gives them no interval).
var Installations = []Installation{
	{"handbook", ingestd.TierTrustedInternal, ingestd.TierTrustedInternal},
	{"repo", ingestd.TierTrustedInternal, ingestd.TierTrustedInternal},
	{"support", ingestd.TierUntrustedExternal, ingestd.TierUntrustedExternal},
	{"legacy", ingestd.TierTrustedInternal, ""},
	{"bots", ingestd.TierMachineGenerated, ingestd.TierMachineGenerated},
}

// Synthetic generates the benchmark corpus deterministically: documents of
// ChunksPerDoc chunks of 40 to 100 words drawn by Zipf's law (s = 1.07)
// from a made-up vocabulary of 8,000 words, so a few words are everywhere
// and most are rare, as in real text; titles of four words; links to
// earlier documents of the same installation (parent, thread, xref); one
// document in 30 rejected; the five Installations in turn. Documents are
// generated in order and each depends only on the seed and its number, so
// any range can be generated alone (in parallel).
type Synthetic struct {
	vocab []string
	seed  uint64
}

// NewSynthetic returns the generator for seed.
func NewSynthetic(seed uint64) *Synthetic {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &Synthetic{vocab: Vocabulary(r, 8000), seed: seed}
}

// Doc is one generated document.
type Doc struct {
	Installation Installation
	ExternalID   string
	Title        string
	Status       ingestd.Status
	Chunks       []string
	Links        []ingestd.Link // by external id in To, same installation
}

// Doc returns document i.
func (s *Synthetic) Doc(i int) Doc {
	r := rand.New(rand.NewPCG(s.seed+uint64(i)*0x9e3779b97f4a7c15, uint64(i)))
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(s.vocab)-1))
	words := func(n int) string {
		w := make([]string, n)
		for j := range w {
			w[j] = s.vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	in := Installations[i%len(Installations)]
	d := Doc{Installation: in, ExternalID: fmt.Sprintf("doc-%07d", i), Title: words(4), Status: ingestd.StatusActive}
	if r.IntN(30) == 0 {
		d.Status = ingestd.StatusRejected
	}
	for range ChunksPerDoc {
		d.Chunks = append(d.Chunks, words(40+r.IntN(60)))
	}
	n := len(Installations)
	if i >= n*4 {
		back := func() string { return fmt.Sprintf("doc-%07d", i-n*(1+r.IntN(min(200, i/n)))) }
		switch r.IntN(3) {
		case 0:
			d.Links = append(d.Links, ingestd.Link{To: back(), Relation: "parent"})
		case 1:
			d.Links = append(d.Links, ingestd.Link{To: back(), Relation: "thread"})
		}
		if r.IntN(3) == 0 {
			d.Links = append(d.Links, ingestd.Link{To: back(), Relation: "xref"})
		}
	}
	return d
}

// Queries returns n queries of two to four words drawn like the text.
func (s *Synthetic) Queries(n int) []string {
	r := rand.New(rand.NewPCG(s.seed+1, s.seed+2))
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(s.vocab)-1))
	out := make([]string, n)
	for i := range out {
		w := make([]string, 2+r.IntN(3))
		for j := range w {
			w[j] = s.vocab[zipf.Uint64()]
		}
		out[i] = strings.Join(w, " ")
	}
	return out
}

// Vocabulary makes n distinct pronounceable words drawn from r: the
// made-up vocabulary of the synthetic corpora (this package's and the
// retrieval benchmarks').
func Vocabulary(r *rand.Rand, n int) []string {
	const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		if r.IntN(2) == 0 {
			b.WriteByte(cons[r.IntN(len(cons))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Put writes documents [from, to) of the corpus into s the way the
// pipeline would: every chunk fenced (firewall.Fence) and embedded by the
// lexical embedder, documents stamped with their installation's tier. It
// fences and embeds on every core and writes documents concurrently, so a
// store that commits concurrent writes together is measured doing so.
func (syn *Synthetic) Put(ctx context.Context, s ingestd.Store, from, to int, progress func(done int)) error {
	e := embedder.NewLexical(Dims)
	workers := max(2, runtime.GOMAXPROCS(0)*2)
	next := make(chan int)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		firstEr error
		done    int
	)
	fail := func(err error) {
		mu.Lock()
		if firstEr == nil {
			firstEr = err
		}
		mu.Unlock()
	}
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := syn.put(ctx, s, e, i); err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				done++
				if progress != nil && done%1000 == 0 {
					progress(done)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := from; i < to; i++ {
		mu.Lock()
		stop := firstEr != nil
		mu.Unlock()
		if stop {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			fail(ctx.Err())
			break feed
		}
	}
	close(next)
	wg.Wait()
	return firstEr
}

func (syn *Synthetic) put(ctx context.Context, s ingestd.Store, e ingestd.Embedder, i int) error {
	d := syn.Doc(i)
	in := d.Installation
	id := ingestd.DocumentID(in.ID, d.ExternalID)
	uri := "file:///bench/" + in.ID + "/" + d.ExternalID + ".md"
	at := time.Unix(1_700_000_000, 0).UTC()
	doc := &ingestd.Document{
		ID: id, Installation: in.ID, ExternalID: d.ExternalID, SourceKind: "files", ItemKind: "file",
		URI: uri, Title: d.Title, Tier: in.Stamped, Status: d.Status, CreatedAt: at, UpdatedAt: at, IngestedAt: at,
		ContentHash: ingestd.ContentHash(append([]string{d.Title, string(d.Status)}, d.Chunks...)...),
	}
	vecs, err := e.Embed(ctx, d.Chunks)
	if err != nil {
		return err
	}
	origin := firewall.Origin{Installation: in.ID, SourceKind: "files", Tier: provenance.Name(in.Stamped), URI: uri, Title: d.Title}
	chunks := make([]ingestd.Chunk, len(d.Chunks))
	for j, text := range d.Chunks {
		chunks[j] = ingestd.Chunk{
			ID: ingestd.ChunkID(id, text, 0), DocumentID: id, Ordinal: j, Text: text,
			Fenced: firewall.Fence(text, origin), Tokens: len(text) / 4,
			Embedding: vecs[j], EmbedderID: e.ID(), Tier: in.Stamped,
		}
	}
	links := make([]ingestd.Link, len(d.Links))
	for j, l := range d.Links {
		links[j] = ingestd.Link{From: id, To: ingestd.DocumentID(in.ID, l.To), Relation: l.Relation}
	}
	_, err = s.PutDocument(ctx, doc, chunks, links)
	return err
}

// Corpus is a built benchmark corpus: a directory holding an ingestd
// configuration (Config), its data directory with the SQLite file, and
// the queries (one a line) `ingestd bench retrieve --queries` reads.
type Corpus struct {
	Dir     string
	Config  string
	DB      string
	Queries string
	Docs    int
	Chunks  int
}

// CorpusAt names the files of a corpus in dir.
func CorpusAt(dir string) Corpus {
	return Corpus{
		Dir:     dir,
		Config:  filepath.Join(dir, "ingestd.yaml"),
		DB:      filepath.Join(dir, "data", "ingestd.db"),
		Queries: filepath.Join(dir, "queries.txt"),
	}
}

// BuildOptions configure Build.
type BuildOptions struct {
	Seed uint64 // default 1
	// Listen is the address the configuration serves on; default
	// 127.0.0.1:7791.
	Listen string
	// Progress, when set, is told how many documents are written, every
	// thousand.
	Progress func(docs int)
}

// Build writes a corpus of about chunks chunks (whole documents of
// ChunksPerDoc) into dir, which must not hold one already: the SQLite
// file, a configuration that serves it on the embedded default with the
// five installations declared, and 256 queries.
func Build(ctx context.Context, dir string, chunks int, o BuildOptions) (Corpus, error) {
	c := CorpusAt(dir)
	if _, err := os.Stat(c.DB); err == nil {
		return c, fmt.Errorf("%s already holds a corpus", dir)
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:7791"
	}
	if err := private.MkdirAll(filepath.Join(dir, "data")); err != nil {
		return c, err
	}
	if err := private.MkdirAll(filepath.Join(dir, "empty")); err != nil {
		return c, err
	}
	syn := NewSynthetic(o.Seed)
	c.Docs = (chunks + ChunksPerDoc - 1) / ChunksPerDoc
	c.Chunks = c.Docs * ChunksPerDoc
	s, err := sqlite.Open(ctx, c.DB, nil)
	if err != nil {
		return c, err
	}
	if err := syn.Put(ctx, s, 0, c.Docs, o.Progress); err != nil {
		s.Close(context.Background())
		return c, err
	}
	// Load the search indexes and optimize, as a serve that took these
	// writes would have: the file is left with a current index snapshot.
	if err := s.Warm(ctx); err != nil {
		s.Close(context.Background())
		return c, err
	}
	if err := s.Optimize(ctx); err != nil {
		s.Close(context.Background())
		return c, err
	}
	if err := s.Close(context.Background()); err != nil {
		return c, err
	}
	if err := private.WriteFile(c.Config, []byte(configYAML(o.Listen))); err != nil {
		return c, err
	}
	return c, private.WriteFile(c.Queries, []byte(strings.Join(syn.Queries(256), "\n")+"\n"))
}

// configYAML serves the corpus on the embedded default. The installations
// have no interval, so serve never syncs them (their root is empty: a sync
// would tombstone every document).
func configYAML(listen string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir: ./data\nlisten: %s\nlog: {level: warn}\ninstallations:\n", listen)
	for _, in := range Installations {
		fmt.Fprintf(&b, "  - id: %s\n    kind: files\n    tier: %s\n    files: {root: ./empty}\n", in.ID, in.Declared)
	}
	return b.String()
}
