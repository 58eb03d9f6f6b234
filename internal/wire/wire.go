// Package wire converts between the root's retrieval vocabulary
// (ingestd.RetrieveRequest, RetrieveResponse, ProvenanceReport) and the
// generated protobuf messages, for the server (api) and the
// client (client). It copies fields; it never decides anything.
// It imports the root, the generated API and connect, nothing of the
// server, so the client does not either.
package wire

import (
	"github.com/ingestd/ingestd"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
)

// RequestFromProto converts a request message.
func RequestFromProto(m *ingestdv1.RetrieveRequest) ingestd.RetrieveRequest {
	return ingestd.RetrieveRequest{
		Query: m.GetQuery(), TopK: int(m.GetTopK()),
		Installations: m.GetInstallations(), Tiers: m.GetTiers(), SourceKinds: m.GetSourceKinds(),
		Expand: m.Expand, IncludeRejected: m.IncludeRejected,
		ExcludeUntrusted: m.GetExcludeUntrusted(), RequestID: m.GetRequestId(),
		Grounding: m.GetGrounding(), TrustedView: m.GetTrustedView(), Principal: m.GetPrincipal(),
	}
}

// RequestToProto converts a request.
func RequestToProto(r ingestd.RetrieveRequest) *ingestdv1.RetrieveRequest {
	return &ingestdv1.RetrieveRequest{
		Query: r.Query, TopK: int32(min(max(r.TopK, -1), ingestd.MaxTopK+1)),
		Installations: r.Installations, Tiers: r.Tiers, SourceKinds: r.SourceKinds,
		Expand: r.Expand, IncludeRejected: r.IncludeRejected,
		ExcludeUntrusted: r.ExcludeUntrusted, RequestId: r.RequestID,
		Grounding: r.Grounding, TrustedView: r.TrustedView, Principal: r.Principal,
	}
}

// ResponseToProto converts a response. A nil verdict stays absent, which
// every client reads as blocked.
func ResponseToProto(r *ingestd.RetrieveResponse) *ingestdv1.RetrieveResponse {
	m := &ingestdv1.RetrieveResponse{
		Primary: chunksToProto(r.Primary), Expanded: chunksToProto(r.Expanded), Rejected: chunksToProto(r.Rejected),
		Verdict:                    verdictToProto(r.Verdict),
		ExcludedUntrustedDocuments: int32(r.ExcludedUntrustedDocuments),
		Grounding:                  r.Grounding,
	}
	if v := r.TrustedView; v != nil {
		m.TrustedView = &ingestdv1.RetrieveView{
			Primary: chunksToProto(v.Primary), Expanded: chunksToProto(v.Expanded), Rejected: chunksToProto(v.Rejected),
			Verdict:                    verdictToProto(v.Verdict),
			ExcludedUntrustedDocuments: int32(v.ExcludedUntrustedDocuments),
		}
	}
	return m
}

// ResponseFromProto converts a response message. An absent verdict stays
// absent (nil): the gate treats it as blocked.
func ResponseFromProto(m *ingestdv1.RetrieveResponse) *ingestd.RetrieveResponse {
	r := &ingestd.RetrieveResponse{
		Primary: chunksFromProto(m.GetPrimary()), Expanded: chunksFromProto(m.GetExpanded()), Rejected: chunksFromProto(m.GetRejected()),
		Verdict:                    verdictFromProto(m.GetVerdict()),
		ExcludedUntrustedDocuments: int(m.GetExcludedUntrustedDocuments()),
		Grounding:                  m.GetGrounding(),
	}
	if v := m.GetTrustedView(); v != nil {
		r.TrustedView = &ingestd.RetrieveView{
			Primary: chunksFromProto(v.GetPrimary()), Expanded: chunksFromProto(v.GetExpanded()), Rejected: chunksFromProto(v.GetRejected()),
			Verdict:                    verdictFromProto(v.GetVerdict()),
			ExcludedUntrustedDocuments: int(v.GetExcludedUntrustedDocuments()),
		}
	}
	return r
}

func verdictToProto(v *ingestd.Verdict) *ingestdv1.Verdict {
	if v == nil {
		return nil
	}
	return &ingestdv1.Verdict{
		ToolsAllowed: v.ToolsAllowed, Mode: v.Mode, Reason: v.Reason,
		UntrustedDocumentIds: v.UntrustedDocumentIDs, WouldBlock: v.WouldBlock,
		AllowedToolClasses: classesToProto(v.AllowedToolClasses),
	}
}

func classesToProto(cs ingestd.ToolClasses) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// classesFromProto keeps the values as sent, unknown ones included, for
// the client's gate to judge (client.Validate). None is nil: protobuf
// cannot tell an empty list from a server older than the field, and a
// nil set is judged by tools_allowed (every class or none), which an
// empty set over unknown provenance agrees with.
func classesFromProto(cs []string) ingestd.ToolClasses {
	if len(cs) == 0 {
		return nil
	}
	out := make(ingestd.ToolClasses, len(cs))
	for i, c := range cs {
		out[i] = ingestd.ToolClass(c)
	}
	return out
}

func verdictFromProto(pv *ingestdv1.Verdict) *ingestd.Verdict {
	if pv == nil {
		return nil
	}
	ids := pv.GetUntrustedDocumentIds()
	if ids == nil {
		ids = []string{}
	}
	return &ingestd.Verdict{
		ToolsAllowed: pv.GetToolsAllowed(), Mode: pv.GetMode(), Reason: pv.GetReason(),
		UntrustedDocumentIDs: ids, WouldBlock: pv.GetWouldBlock(),
		AllowedToolClasses: classesFromProto(pv.GetAllowedToolClasses()),
	}
}

func chunksToProto(cs []ingestd.ServedChunk) []*ingestdv1.Chunk {
	out := make([]*ingestdv1.Chunk, len(cs))
	for i, c := range cs {
		out[i] = &ingestdv1.Chunk{
			ChunkId: c.ChunkID, DocumentId: c.DocumentID, Installation: c.Installation,
			SourceKind: c.SourceKind, Uri: c.URI, Title: c.Title, Tier: c.Tier, Score: c.Score,
			Fenced: c.Fenced, Text: c.Text, Via: c.Via, HeadingPath: c.HeadingPath, Locator: c.Locator,
		}
	}
	return out
}

func chunksFromProto(cs []*ingestdv1.Chunk) []ingestd.ServedChunk {
	out := make([]ingestd.ServedChunk, len(cs))
	for i, c := range cs {
		out[i] = ingestd.ServedChunk{
			ChunkID: c.GetChunkId(), DocumentID: c.GetDocumentId(), Installation: c.GetInstallation(),
			SourceKind: c.GetSourceKind(), URI: c.GetUri(), Title: c.GetTitle(), Tier: c.GetTier(),
			Score: c.GetScore(), Fenced: c.GetFenced(), Text: c.GetText(), Via: c.GetVia(),
			HeadingPath: c.GetHeadingPath(), Locator: c.GetLocator(),
		}
	}
	return out
}

// ReportToProto converts the corpus report.
func ReportToProto(r ingestd.ProvenanceReport) *ingestdv1.ProvenanceReport {
	m := &ingestdv1.ProvenanceReport{
		Total: int64(r.Total), Declared: int64(r.Declared), Undeclared: int64(r.Undeclared), Orphaned: int64(r.Orphaned),
		Unmapped:           int64(r.Unmapped),
		ExternallyAuthored: int64(r.ExternallyAuthored), ExternallyAuthoredPct: r.ExternallyAuthoredPct,
		Tiers: sharesToProto(r.Tiers),
		Policy: &ingestdv1.ReportPolicy{FirewallMode: r.Policy.FirewallMode,
			UntrustedTurnToolClasses: classesToProto(r.Policy.UntrustedTurnToolClasses)},
	}
	for _, in := range r.Installations {
		m.Installations = append(m.Installations, &ingestdv1.InstallationReport{
			Id: in.ID, Kind: in.Kind, Tier: in.Tier, Documents: int64(in.Documents), Tiers: sharesToProto(in.Tiers),
			Unmapped: int64(in.Unmapped),
		})
	}
	return m
}

// ReportFromProto converts a report message.
func ReportFromProto(m *ingestdv1.ProvenanceReport) ingestd.ProvenanceReport {
	r := ingestd.ProvenanceReport{
		Total: int(m.GetTotal()), Declared: int(m.GetDeclared()), Undeclared: int(m.GetUndeclared()), Orphaned: int(m.GetOrphaned()),
		Unmapped:           int(m.GetUnmapped()),
		ExternallyAuthored: int(m.GetExternallyAuthored()), ExternallyAuthoredPct: m.GetExternallyAuthoredPct(),
		Tiers: sharesFromProto(m.GetTiers()), Installations: []ingestd.InstallationReport{},
		Policy: ingestd.ReportPolicy{FirewallMode: m.GetPolicy().GetFirewallMode(),
			UntrustedTurnToolClasses: classesFromProto(m.GetPolicy().GetUntrustedTurnToolClasses())},
	}
	for _, in := range m.GetInstallations() {
		r.Installations = append(r.Installations, ingestd.InstallationReport{
			ID: in.GetId(), Kind: in.GetKind(), Tier: in.GetTier(), Documents: int(in.GetDocuments()), Tiers: sharesFromProto(in.GetTiers()),
			Unmapped: int(in.GetUnmapped()),
		})
	}
	return r
}

func sharesToProto(ss []ingestd.TierShare) []*ingestdv1.TierShare {
	out := make([]*ingestdv1.TierShare, len(ss))
	for i, s := range ss {
		out[i] = &ingestdv1.TierShare{Tier: s.Tier, Count: int64(s.Count), Pct: s.Pct}
	}
	return out
}

func sharesFromProto(ss []*ingestdv1.TierShare) []ingestd.TierShare {
	out := make([]ingestd.TierShare, len(ss))
	for i, s := range ss {
		out[i] = ingestd.TierShare{Tier: s.GetTier(), Count: int(s.GetCount()), Pct: s.GetPct()}
	}
	return out
}
