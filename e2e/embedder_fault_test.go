package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// Modes of the faulty embeddings endpoint, after its budget of good
// answers is spent.
const (
	endpointOK   = iota // answers every request
	endpoint500         // answers 500 Internal Server Error
	endpointHang        // never answers: the client's timeout fires
)

// faultyEndpoint is an OpenAI-compatible /v1/embeddings server whose
// health the test switches. Vectors come from the lexical embedder, so they
// are deterministic.
type faultyEndpoint struct {
	*httptest.Server
	lex      ingestd.Embedder
	mu       sync.Mutex
	mode     int
	budget   int // good answers left before mode applies; <0 means unlimited
	requests atomic.Int64
	failures atomic.Int64
	stop     chan struct{}
}

func mustFaultyEndpoint(tb testing.TB, dims int) *faultyEndpoint {
	tb.Helper()
	f := &faultyEndpoint{lex: embedder.NewLexical(dims), budget: -1, stop: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(func() {
		close(f.stop)
		f.Server.Close()
	})
	return f
}

// set makes the endpoint answer ok more requests well, then behave as mode.
func (f *faultyEndpoint) set(mode, ok int) {
	f.mu.Lock()
	f.mode, f.budget = mode, ok
	f.mu.Unlock()
}

func (f *faultyEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	f.mu.Lock()
	mode := f.mode
	if f.budget > 0 {
		f.budget--
		mode = endpointOK
	} else if f.budget < 0 {
		mode = endpointOK
	}
	f.mu.Unlock()
	switch mode {
	case endpoint500:
		f.failures.Add(1)
		http.Error(w, `{"error":{"message":"model crashed"}}`, http.StatusInternalServerError)
		return
	case endpointHang:
		f.failures.Add(1)
		select {
		case <-r.Context().Done():
		case <-f.stop:
		}
		return
	}
	var req struct {
		Input []string `json:"input"`
	}
	if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	vecs, err := f.lex.Embed(r.Context(), req.Input)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	type datum struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Data []datum `json:"data"`
	}{}
	for i, v := range vecs {
		resp.Data = append(resp.Data, datum{Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// TestEmbedderFaultLosesAndDoublesNothing syncs a folder through the
// pipeline with the OpenAI-compatible embedder while its endpoint first
// answers 500s, then stops answering, then recovers. Each failing pass
// must stop with EUNAVAILABLE and leave only whole documents behind (every
// stored document has all its chunks, each with a vector); the pass after
// recovery stores the rest, so that every document is stored exactly once
// with exactly the chunks a healthy run makes; and a further pass embeds
// nothing.
func TestEmbedderFaultLosesAndDoublesNothing(t *testing.T) {
	const dims, nDocs = 64, 12
	ctx := t.Context()
	root := t.TempDir()
	for i := range nDocs {
		var b strings.Builder
		fmt.Fprintf(&b, "# Runbook %d\n\n", i)
		for s := range 6 {
			fmt.Fprintf(&b, "## Step %d\n\nRunbook %d step %d: %s\n\n", s, i, s, strings.Repeat(fmt.Sprintf("check item %d-%d and record it. ", i, s), 20))
		}
		mustWriteFile(t, filepath.Join(root, fmt.Sprintf("runbook-%02d.md", i)), []byte(b.String()))
	}
	inst := ingestd.Installation{ID: "runbooks", Kind: "files", Tier: ingestd.TierTrustedInternal}
	src, err := files.NewSource(inst.ID, files.Config{Root: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunking := &chunker.Options{MaxTokens: 120, OverlapTokens: 10}

	// What a healthy run stores: the chunk ids per document.
	var want map[string][]string
	{
		ref := sqlitetest.MustOpen(t)
		p, err := pipeline.New(pipeline.Options{Store: ref, Embedder: embedder.NewLexical(dims), Chunking: chunking})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Sync(ctx, inst, src, nil); err != nil {
			t.Fatal(err)
		}
		want = chunkIDsByDoc(t, ref, inst.ID)
		if len(want) != nDocs {
			t.Fatalf("reference run stored %d documents, want %d", len(want), nDocs)
		}
	}
	var wantChunks int
	for _, ids := range want {
		wantChunks += len(ids)
		if len(ids) < 3 {
			t.Fatalf("a document has %d chunks; the test needs several per document to catch partial writes", len(ids))
		}
	}

	ep := mustFaultyEndpoint(t, dims)
	var sleeps atomic.Int64
	emb, err := embedder.NewOpenAI(embedder.OpenAIOptions{
		BaseURL: ep.URL + "/v1", Model: "fault-test", Dims: dims,
		BatchSize: 2, // several requests per document: a fault lands mid-document
		Timeout:   200 * time.Millisecond, MaxRetries: 2,
		Sleep: func(ctx context.Context, d time.Duration) error { sleeps.Add(1); return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	st := sqlitetest.MustOpen(t)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(emb, st), Chunking: chunking})
	if err != nil {
		t.Fatal(err)
	}

	// Each fault lets one more document through whole, then strikes in
	// the middle of the next one (its second request of several).
	reqs := func(file string) int { return (len(want[ingestd.DocumentID(inst.ID, file)]) + 1) / 2 }
	phases := []struct {
		name string
		mode int
		ok   int // good answers before the fault
	}{
		{"500s", endpoint500, reqs("runbook-00.md") + 1},
		{"timeouts", endpointHang, reqs("runbook-01.md") + 1},
	}
	for _, ph := range phases {
		ep.set(ph.mode, ph.ok)
		before := ep.failures.Load()
		sum, err := p.Sync(ctx, inst, src, nil)
		if err == nil {
			t.Fatalf("%s: pass succeeded (%+v); want it to stop", ph.name, sum)
		}
		if got := ingestd.ErrorCode(err); got != ingestd.EUNAVAILABLE {
			t.Errorf("%s: error code %q (%v), want %q", ph.name, got, err, ingestd.EUNAVAILABLE)
		}
		if sum.Complete || sum.Deleted != 0 {
			t.Errorf("%s: failed pass reported %+v; want incomplete with nothing tombstoned", ph.name, sum)
		}
		if got := ep.failures.Load() - before; got != 3 {
			t.Errorf("%s: endpoint failed %d requests; want 3 (1 attempt + 2 retries)", ph.name, got)
		}
		got := chunkIDsByDoc(t, st, inst.ID)
		for id, ids := range got {
			if strings.Join(ids, ",") != strings.Join(want[id], ",") {
				t.Errorf("%s: document %s stored with %d chunks, a healthy run stores %d: partial write", ph.name, id, len(ids), len(want[id]))
			}
		}
		if len(got) == 0 || len(got) == nDocs {
			t.Errorf("%s: %d of %d documents stored; the fault should land mid-pass", ph.name, len(got), nDocs)
		}
		t.Logf("%s: pass stopped with %v; %d of %d documents stored whole", ph.name, err, len(got), nDocs)
	}
	if sleeps.Load() == 0 {
		t.Error("the embedder never backed off between attempts")
	}

	// Recovery: the next pass stores everything exactly once.
	ep.set(endpointOK, -1)
	sum, err := p.Sync(ctx, inst, src, nil)
	if err != nil {
		t.Fatalf("pass after recovery: %v", err)
	}
	if sum.Failed != 0 || sum.Deleted != 0 || sum.Added+sum.Unchanged != nDocs || !sum.Complete {
		t.Errorf("pass after recovery = %+v; want %d added or unchanged", sum, nDocs)
	}
	got := chunkIDsByDoc(t, st, inst.ID)
	var gotChunks int
	for id, ids := range want {
		gotChunks += len(got[id])
		if strings.Join(got[id], ",") != strings.Join(ids, ",") {
			t.Errorf("document %s: %d chunks after recovery, want %d", id, len(got[id]), len(ids))
		}
	}
	if len(got) != nDocs || gotChunks != wantChunks {
		t.Errorf("after recovery %d documents, %d chunks; want %d and %d", len(got), gotChunks, nDocs, wantChunks)
	}
	counts, err := st.CountDocuments(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, c := range counts {
		n += c.Count
	}
	if n != nDocs {
		t.Errorf("CountDocuments = %d, want %d", n, nDocs)
	}
	views, err := st.DocumentChunks(ctx, keys(got))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if len(v.Embedding) != dims || v.EmbedderID != emb.ID() {
			t.Errorf("chunk %s: %d-dim vector by %q", v.ID, len(v.Embedding), v.EmbedderID)
		}
	}

	// Nothing left to do: a further pass writes and embeds nothing.
	before := ep.requests.Load()
	sum, err = p.Sync(ctx, inst, src, nil)
	if err != nil || sum.Unchanged != nDocs {
		t.Errorf("pass after that = %+v, %v; want %d unchanged", sum, err, nDocs)
	}
	if got := ep.requests.Load() - before; got != 0 {
		t.Errorf("an unchanged pass made %d embedding requests", got)
	}
}

// chunkIDsByDoc returns the chunk ids of every not-deleted document of the
// installation, in ordinal order.
func chunkIDsByDoc(tb testing.TB, st ingestd.Store, installation string) map[string][]string {
	tb.Helper()
	refs, err := st.DocumentRefs(tb.Context(), installation)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string][]string{}
	var ids []string
	for _, r := range refs {
		out[r.ID] = nil
		ids = append(ids, r.ID)
	}
	views, err := st.DocumentChunks(tb.Context(), ids)
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range views {
		out[v.DocumentID] = append(out[v.DocumentID], v.ID)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
