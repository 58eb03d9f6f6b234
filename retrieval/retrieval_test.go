package retrieval_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// MustService returns a service over the acceptance corpus in mode.
func MustService(tb testing.TB, mode string) *retrieval.Service {
	tb.Helper()
	s, e := retrievaltest.MustAcceptance(tb)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, FirewallMode: mode, Installations: retrievaltest.Installations()})
	if err != nil {
		tb.Fatalf("new service: %v", err)
	}
	return svc
}

// MustRetrieve retrieves and checks the invariants every answer holds:
// every chunk fenced, the verdict's untrusted ids a subset of the served
// documents.
func MustRetrieve(tb testing.TB, svc *retrieval.Service, r ingestd.RetrieveRequest) *ingestd.RetrieveResponse {
	tb.Helper()
	resp, err := svc.Retrieve(tb.Context(), r)
	if err != nil {
		tb.Fatalf("retrieve %q: %v", r.Query, err)
	}
	CheckFenced(tb, resp)
	served := docs(resp)
	for _, id := range resp.Verdict.UntrustedDocumentIDs {
		if !slices.Contains(served, id) {
			tb.Errorf("verdict names %s, which is not served", id)
		}
	}
	return resp
}

// CheckFenced fails unless every chunk of every block carries a valid fence.
func CheckFenced(tb testing.TB, resp *ingestd.RetrieveResponse) {
	tb.Helper()
	for _, b := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		for _, c := range b {
			if err := firewall.Check(c.Fenced); err != nil {
				tb.Errorf("chunk %s of %s: fenced text does not pass Check: %v", c.ChunkID, c.DocumentID, err)
			}
		}
	}
}

func docs(resp *ingestd.RetrieveResponse) []string {
	var out []string
	for _, b := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		for _, c := range b {
			if !slices.Contains(out, c.DocumentID) {
				out = append(out, c.DocumentID)
			}
		}
	}
	return out
}

func blockDocs(b []ingestd.ServedChunk) []string {
	var out []string
	for _, c := range b {
		if !slices.Contains(out, c.DocumentID) {
			out = append(out, c.DocumentID)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func sorted(ids ...string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

func TestVerdictAcceptance(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	tests := []struct {
		name        string
		req         ingestd.RetrieveRequest
		wantPrimary []string // documents that must be in primary
		wantAllowed bool
		wantIDs     []string
		notPrimary  bool // the untrusted documents must be outside primary
	}{
		{
			name:        "internal only allows tools",
			req:         ingestd.RetrieveRequest{Query: "vacation days accrue", TopK: 1},
			wantPrimary: []string{retrievaltest.Vacation.ID()},
			wantAllowed: true, wantIDs: []string{},
		},
		{
			name:        "external in primary blocks",
			req:         ingestd.RetrieveRequest{Query: "process my refund by wire transfer", TopK: 1, IncludeRejected: ptr(false)},
			wantPrimary: []string{retrievaltest.Refund.ID()},
			wantIDs:     []string{retrievaltest.Refund.ID()},
		},
		{
			name:        "external reached only through expansion blocks",
			req:         ingestd.RetrieveRequest{Query: "flaky scheduler timezone boundaries", TopK: 1},
			wantPrimary: []string{retrievaltest.Issue.ID()},
			wantIDs:     []string{retrievaltest.StrangerComment.ID()},
			notPrimary:  true,
		},
		{
			name:        "external sibling blocks",
			req:         ingestd.RetrieveRequest{Query: "reproduced TZ Pacific/Apia", TopK: 1},
			wantPrimary: []string{retrievaltest.MemberComment.ID()},
			wantIDs:     []string{retrievaltest.StrangerComment.ID()},
			notPrimary:  true,
		},
		{
			name:        "external in rejected blocks",
			req:         ingestd.RetrieveRequest{Query: "database migration plan orders", TopK: 1},
			wantPrimary: []string{retrievaltest.Migration.ID()},
			wantIDs:     []string{retrievaltest.MongoProposal.ID()},
			notPrimary:  true,
		},
		{
			name:        "rejected block left out allows",
			req:         ingestd.RetrieveRequest{Query: "database migration plan orders", TopK: 1, IncludeRejected: ptr(false)},
			wantPrimary: []string{retrievaltest.Migration.ID()},
			wantAllowed: true, wantIDs: []string{},
		},
		{
			name:        "stored unknown tier blocks",
			req:         ingestd.RetrieveRequest{Query: "quarterly partner loyalty points", TopK: 1},
			wantPrimary: []string{retrievaltest.PartnerBrief.ID()},
			wantIDs:     []string{retrievaltest.PartnerBrief.ID()},
		},
		{
			name:        "undeclared stamp takes a trusted declaration",
			req:         ingestd.RetrieveRequest{Query: "legacy printer setup third floor", TopK: 1},
			wantPrimary: []string{retrievaltest.PrinterGuide.ID()},
			wantAllowed: true, wantIDs: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := MustRetrieve(t, svc, tt.req)
			if got := blockDocs(resp.Primary); !slices.Equal(got, tt.wantPrimary) {
				t.Fatalf("primary documents = %v, want %v (expanded %v, rejected %v)", got, tt.wantPrimary, blockDocs(resp.Expanded), blockDocs(resp.Rejected))
			}
			v := resp.Verdict
			if got, want := v.ToolsAllowed, tt.wantAllowed; got != want {
				t.Errorf("tools_allowed = %v, want %v", got, want)
			}
			if got, want := v.UntrustedDocumentIDs, sorted(tt.wantIDs...); !slices.Equal(got, want) {
				t.Errorf("untrusted_document_ids = %v, want %v", got, want)
			}
			wantReason := ingestd.ReasonNoUntrusted
			if !tt.wantAllowed {
				wantReason = ingestd.ReasonUntrusted
			}
			if v.Mode != ingestd.ModeEnforce || v.Reason != wantReason || v.WouldBlock == tt.wantAllowed {
				t.Errorf("verdict = %+v, want mode enforce, reason %s, would_block %v", v, wantReason, !tt.wantAllowed)
			}
			for _, id := range tt.wantIDs {
				if tt.notPrimary && slices.Contains(blockDocs(resp.Primary), id) {
					t.Errorf("untrusted %s is in primary; the case needs it elsewhere", id)
				}
			}
			if slices.Contains(docs(resp), retrievaltest.DeletedComment.ID()) {
				t.Errorf("deleted document served")
			}
		})
	}
}

func TestUnknownTierServedAsUntrusted(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "quarterly partner loyalty points", TopK: 1})
	if got, want := resp.Primary[0].Tier, string(ingestd.TierUntrustedExternal); got != want {
		t.Errorf("tier = %q, want %q", got, want)
	}
	// An undeclared stamp takes its installation's declaration.
	resp = MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "legacy printer setup third floor", TopK: 1})
	if got, want := resp.Primary[0].Tier, string(ingestd.TierTrustedInternal); got != want {
		t.Errorf("tier = %q, want %q", got, want)
	}
}

func TestExpansion(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	t.Run("adjacent chunks", func(t *testing.T) {
		resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "kubernetes canary promote release", TopK: 1})
		if len(resp.Primary) != 1 || resp.Primary[0].ChunkID != ingestd.ChunkID(retrievaltest.Runbook.ID(), retrievaltest.Runbook.Chunks[1], 1) {
			t.Fatalf("primary = %+v, want the runbook's second chunk", resp.Primary)
		}
		var adjacent []string
		for _, c := range resp.Expanded {
			if c.Via == ingestd.ViaAdjacent {
				adjacent = append(adjacent, c.Text)
			}
		}
		if got, want := sorted(adjacent...), sorted(retrievaltest.Runbook.Chunks[0], retrievaltest.Runbook.Chunks[2]); !slices.Equal(got, want) {
			t.Errorf("adjacent = %q, want %q", got, want)
		}
	})
	t.Run("parent and sibling relations", func(t *testing.T) {
		resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "reproduced TZ Pacific/Apia", TopK: 1})
		via := map[string]string{}
		for _, c := range resp.Expanded {
			via[c.DocumentID] = c.Via
		}
		want := map[string]string{retrievaltest.Issue.ID(): "parent", retrievaltest.StrangerComment.ID(): ingestd.ViaSibling}
		for id, rel := range want {
			if via[id] != rel {
				t.Errorf("expanded %s via %q, want %q (all: %v)", id, via[id], rel, via)
			}
		}
	})
	t.Run("expand false", func(t *testing.T) {
		resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "flaky scheduler timezone boundaries", TopK: 1, Expand: ptr(false)})
		if len(resp.Expanded) != 0 || !resp.Verdict.ToolsAllowed {
			t.Errorf("expanded = %v, verdict %+v; want none and tools allowed", blockDocs(resp.Expanded), resp.Verdict)
		}
	})
	t.Run("cap", func(t *testing.T) {
		s, e := retrievaltest.MustAcceptance(t)
		capped, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, ExpandCap: 1, Installations: retrievaltest.Installations()})
		if err != nil {
			t.Fatal(err)
		}
		resp := MustRetrieve(t, capped, ingestd.RetrieveRequest{Query: "reproduced TZ Pacific/Apia", TopK: 1})
		if len(resp.Expanded) != 1 {
			t.Errorf("expanded = %d chunks, want 1", len(resp.Expanded))
		}
	})
}

func TestModes(t *testing.T) {
	q := ingestd.RetrieveRequest{Query: "process my refund by wire transfer", TopK: 1, IncludeRejected: ptr(false)}
	t.Run("shadow allows and would block", func(t *testing.T) {
		v := MustRetrieve(t, MustService(t, ingestd.ModeShadow), q).Verdict
		if !v.ToolsAllowed || !v.WouldBlock || v.Mode != ingestd.ModeShadow || v.Reason != ingestd.ReasonUntrusted ||
			!slices.Equal(v.UntrustedDocumentIDs, []string{retrievaltest.Refund.ID()}) {
			t.Errorf("verdict = %+v", v)
		}
	})
	t.Run("off says firewall_off", func(t *testing.T) {
		v := MustRetrieve(t, MustService(t, ingestd.ModeOff), q).Verdict
		if !v.ToolsAllowed || v.WouldBlock || v.Mode != ingestd.ModeOff || v.Reason != ingestd.ReasonOff {
			t.Errorf("verdict = %+v", v)
		}
	})
	t.Run("bad mode refused", func(t *testing.T) {
		s, e := retrievaltest.MustAcceptance(t)
		if _, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, FirewallMode: "lenient"}); err == nil {
			t.Error("New accepted mode lenient")
		}
	})
}

func TestExcludeUntrusted(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	q := ingestd.RetrieveRequest{Query: "please process my refund by wire transfer today", TopK: 3}
	plain := MustRetrieve(t, svc, q)
	if got := plain.Primary[0].Tier; got != string(ingestd.TierUntrustedExternal) {
		t.Fatalf("best hit without exclusion is %s (%s); the case needs an external one", plain.Primary[0].DocumentID, got)
	}
	if plain.Verdict.ToolsAllowed {
		t.Fatalf("without exclusion tools are allowed: %+v", plain.Verdict)
	}
	q.ExcludeUntrusted = true
	resp := MustRetrieve(t, svc, q)
	for _, b := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		for _, c := range b {
			if c.Tier != string(ingestd.TierTrustedInternal) && c.Tier != string(ingestd.TierMachineGenerated) && c.Tier != "undeclared" {
				t.Errorf("served %s with tier %s", c.DocumentID, c.Tier)
			}
		}
	}
	if got := blockDocs(resp.Primary); !slices.Contains(got, retrievaltest.RefundPolicy.ID()) || !slices.Contains(got, retrievaltest.RefundForm.ID()) {
		t.Errorf("primary = %v, want the internal policy and the form of a trusted legacy installation in it", got)
	}
	if !resp.Verdict.ToolsAllowed || resp.Verdict.Reason != ingestd.ReasonNoUntrusted {
		t.Errorf("verdict = %+v, want tools allowed", resp.Verdict)
	}
	// Honest count: every untrusted document the same query serves in
	// primary without the exclusion, and any that expansion from the
	// trusted primary reached and left out.
	if got, want := resp.ExcludedUntrustedDocuments, untrustedDocs(plain.Primary); got < want || got == 0 {
		t.Errorf("excluded_untrusted_documents = %d, want at least %d", got, want)
	}
	if plain.ExcludedUntrustedDocuments != 0 {
		t.Errorf("without exclusion excluded_untrusted_documents = %d", plain.ExcludedUntrustedDocuments)
	}
}

// untrustedDocs counts the distinct untrusted documents of a block.
func untrustedDocs(block []ingestd.ServedChunk) int {
	seen := map[string]bool{}
	for _, c := range block {
		if c.Tier == string(ingestd.TierUntrustedExternal) {
			seen[c.DocumentID] = true
		}
	}
	return len(seen)
}

func TestExcludeUntrustedDropsNeighbours(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "flaky scheduler timezone boundaries", TopK: 1, ExcludeUntrusted: true})
	if slices.Contains(docs(resp), retrievaltest.StrangerComment.ID()) {
		t.Errorf("stranger's comment served")
	}
	if !resp.Verdict.ToolsAllowed || resp.ExcludedUntrustedDocuments != 1 {
		t.Errorf("verdict %+v, excluded %d; want allowed and 1", resp.Verdict, resp.ExcludedUntrustedDocuments)
	}
}

func TestFilters(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "refund wire transfer", Installations: []string{"handbook"}})
	for _, d := range docs(resp) {
		if d != retrievaltest.RefundPolicy.ID() {
			if c := resp.Primary; len(c) > 0 && c[0].Installation != "handbook" {
				t.Errorf("installation filter leaked %s", d)
			}
		}
	}
	for _, c := range resp.Primary {
		if c.Installation != "handbook" {
			t.Errorf("primary has %s from %s", c.DocumentID, c.Installation)
		}
	}
	resp = MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "refund wire transfer", Tiers: []string{"trusted-internal"}})
	if got := blockDocs(resp.Primary); !slices.Contains(got, retrievaltest.RefundForm.ID()) || !slices.Contains(got, retrievaltest.RefundPolicy.ID()) {
		t.Errorf("tier filter trusted-internal: primary = %v, want the policy and the undeclared form of a trusted installation", got)
	}
	for _, c := range slices.Concat(resp.Primary, resp.Expanded, resp.Rejected) {
		if c.Tier != string(ingestd.TierTrustedInternal) {
			t.Errorf("tier filter trusted-internal leaked %s (%s)", c.DocumentID, c.Tier)
		}
	}
	// Every installation declares a tier: no tier in force is undeclared.
	resp = MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "refund wire transfer", Tiers: []string{"undeclared"}})
	if got := docs(resp); len(got) != 0 {
		t.Errorf("tier filter undeclared: served %v", got)
	}
	resp = MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "refund wire transfer", SourceKinds: []string{"imap"}, IncludeRejected: ptr(false)})
	for _, c := range resp.Primary {
		if c.SourceKind != "imap" {
			t.Errorf("source kind filter leaked %s (%s)", c.DocumentID, c.SourceKind)
		}
	}
}

func TestPerDocumentCap(t *testing.T) {
	s := retrievaltest.MustStore(t)
	e := corpusEmbedder()
	long := retrievaltest.Doc{Installation: "handbook", ExternalID: "long.md", Tier: ingestd.TierTrustedInternal}
	for i := range 6 {
		long.Chunks = append(long.Chunks, strings.Repeat("zebra ", i+1)+"stripes section")
	}
	retrievaltest.MustPut(t, s, e, long)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, PerDocument: 2, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "zebra stripes", Expand: ptr(false)})
	if got := len(resp.Primary); got != 2 {
		t.Errorf("primary has %d chunks of one document, want 2", got)
	}
}

func TestRequestValidation(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	tests := []struct {
		name    string
		req     ingestd.RetrieveRequest
		wantErr string // substring of the message; "" means no error
	}{
		{name: "empty query", req: ingestd.RetrieveRequest{Query: "  "}, wantErr: "query is empty"},
		{name: "top_k too large", req: ingestd.RetrieveRequest{Query: "refund", TopK: 101}, wantErr: "top_k must be a whole number from 1 to 100, not 101"},
		{name: "top_k negative", req: ingestd.RetrieveRequest{Query: "refund", TopK: -1}, wantErr: "top_k must be a whole number from 1 to 100"},
		{name: "top_k max", req: ingestd.RetrieveRequest{Query: "refund", TopK: 100}},
		{name: "unknown tier filter", req: ingestd.RetrieveRequest{Query: "refund", Tiers: []string{"partner-beta"}}, wantErr: `tier "partner-beta" is not one of`},
		{name: "long query", req: ingestd.RetrieveRequest{Query: strings.Repeat("a", ingestd.MaxQueryBytes+1)}, wantErr: "at most 4096"},
		{name: "configured installations", req: ingestd.RetrieveRequest{Query: "refund", Installations: []string{"support", " handbook "}}},
		{name: "an installation that is not configured", req: ingestd.RetrieveRequest{Query: "refund", Installations: []string{"support", "suport"}},
			wantErr: `installation "suport" is not configured (configured: handbook, support`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Retrieve(t.Context(), tt.req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var e *ingestd.Error
			if !errors.As(err, &e) || e.Code != ingestd.EINVALID || !strings.Contains(e.Message, tt.wantErr) {
				t.Errorf("err = %v, want EINVALID containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBlockedLog: a turn the verdict blocks is logged with its mode,
// reason, untrusted documents and request id; an allowed one is not.
// (The metrics are retrieval/metrics's.)
func TestBlockedLog(t *testing.T) {
	s, e := retrievaltest.MustAcceptance(t)
	var buf bytes.Buffer
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations(),
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "vacation days accrue", TopK: 1, RequestID: "req-allowed"})
	MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "process my refund by wire transfer", TopK: 1, IncludeRejected: ptr(false), RequestID: "req-1"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("log has %d lines, want 1:\n%s", len(lines), buf.String())
	}
	var rec struct {
		Msg          string   `json:"msg"`
		Level        string   `json:"level"`
		Mode         string   `json:"mode"`
		Reason       string   `json:"reason"`
		ToolsAllowed *bool    `json:"tools_allowed"`
		IDs          []string `json:"untrusted_document_ids"`
		RequestID    string   `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	// An audit event at INFO (the metric counts it), not a warning per request.
	if rec.Msg != "provenance.tool_firewall.blocked" || rec.Level != "INFO" || rec.Mode != "enforce" || rec.ToolsAllowed == nil || *rec.ToolsAllowed ||
		rec.Reason != ingestd.ReasonUntrusted || rec.RequestID != "req-1" || !slices.Equal(rec.IDs, []string{retrievaltest.Refund.ID()}) {
		t.Errorf("log record = %+v", rec)
	}
}

func TestProvenance(t *testing.T) {
	svc := MustService(t, ingestd.ModeShadow)
	rep, err := svc.Provenance(t.Context(), ingestd.ProvenanceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// 14 documents, one deleted; untrusted: Refund, Refund2, StrangerComment, MongoProposal, PartnerBrief.
	if rep.Total != 13 || rep.ExternallyAuthored != 5 || rep.Undeclared != 2 || rep.Orphaned != 0 || rep.Policy.FirewallMode != ingestd.ModeShadow {
		t.Errorf("report = %+v", rep)
	}
	if len(rep.Installations) < 3 || rep.Installations[0].ID != "handbook" {
		t.Errorf("installations = %+v", rep.Installations)
	}
}

func TestFuse(t *testing.T) {
	a := []ingestd.Hit{{ChunkID: "x"}, {ChunkID: "y"}, {ChunkID: "z"}}
	b := []ingestd.Hit{{ChunkID: "z"}, {ChunkID: "y"}}
	got := retrieval.Fuse(a, b)
	var ids []string
	for _, h := range got {
		ids = append(ids, h.ChunkID)
	}
	// z: 1/63 + 1/61 beats y: 1/62 + 1/62 beats x: 1/61.
	if want := []string{"z", "y", "x"}; !slices.Equal(ids, want) {
		t.Errorf("order = %v, want %v", ids, want)
	}
	if want := 1.0/63 + 1.0/61; got[0].Score != want {
		t.Errorf("score = %v, want %v", got[0].Score, want)
	}
}

func corpusEmbedder() ingestd.Embedder { return embedder.NewLexical(retrievaltest.Dims) }

func TestRequestIDIsMadeWhenAbsent(t *testing.T) {
	s, e := retrievaltest.MustAcceptance(t)
	var buf bytes.Buffer
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations(), Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r1 := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "process my refund by wire transfer", TopK: 1})
	r2 := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "process my refund by wire transfer", TopK: 1})
	if len(r1.RequestID) != 16 || r1.RequestID == r2.RequestID {
		t.Fatalf("request ids %q, %q: want two distinct 16-digit ids", r1.RequestID, r2.RequestID)
	}
	if !strings.Contains(buf.String(), `"request_id":"`+r1.RequestID+`"`) {
		t.Fatalf("blocked log does not carry the made-up id %s:\n%s", r1.RequestID, buf.String())
	}
}
