// The cases of ingestd.Searcher: what retrieval reads — filters, full text,
// vectors, chunks, expansion, links, tier facts and the corpus counts.

package storetest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

type searchFunc func(t *testing.T, s ingestd.Store, f ingestd.Filter) []ingestd.Hit

// searchText finds every chunk of the filter fixtures ("shared" is in all).
func searchText(t *testing.T, s ingestd.Store, f ingestd.Filter) []ingestd.Hit {
	t.Helper()
	hits, err := s.SearchText(ctx(), "shared", f, 100)
	if err != nil {
		t.Fatalf("SearchText: %v", err)
	}
	return hits
}

// searchVector finds every chunk (all fixtures lie along axis 0).
func searchVector(t *testing.T, s ingestd.Store, f ingestd.Filter) []ingestd.Hit {
	t.Helper()
	hits, err := s.SearchVector(ctx(), Axis(0), f, 100)
	if err != nil {
		t.Fatalf("SearchVector: %v", err)
	}
	return hits
}

// filterFixtures writes five documents that all contain "shared" and lie
// along axis 0, and returns their ids by name.
func filterFixtures(t *testing.T, s ingestd.Store) map[string]string {
	t.Helper()
	type fx struct {
		name, inst, kind string
		tier             ingestd.Tier
	}
	ids := map[string]string{}
	for _, f := range []fx{
		{"internal", "handbook", "files", ingestd.TierTrustedInternal},
		{"external", "support", "imap", ingestd.TierUntrustedExternal},
		{"machine", "bots", "webhook", ingestd.TierMachineGenerated},
		{"undeclared", "legacy", "files", ""},
		{"unknown", "partner", "url", "partner-v2"},
	} {
		d := Doc(f.inst, f.name+".md", f.tier, f.name)
		d.SourceKind = f.kind
		MustPut(t, s, d, Chunks(d, 0, "shared words of "+f.name), nil)
		ids[f.name] = d.ID
	}
	return ids
}

func testFilters(t *testing.T, s ingestd.Store, search searchFunc) {
	ids := filterFixtures(t, s)
	pick := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, ids[n])
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name string
		f    ingestd.Filter
		want []string
	}{
		{"none", ingestd.Filter{}, pick("internal", "external", "machine", "undeclared", "unknown")},
		{"installation", ingestd.Filter{Installations: []string{"support", "bots"}}, pick("external", "machine")},
		{"unknown installation", ingestd.Filter{Installations: []string{"nobody"}}, nil},
		{"source kind", ingestd.Filter{SourceKinds: []string{"files"}}, pick("internal", "undeclared")},
		{"tier", ingestd.Filter{Tiers: []ingestd.Tier{ingestd.TierTrustedInternal}}, pick("internal")},
		{"undeclared tier", ingestd.Filter{Tiers: []ingestd.Tier{""}}, pick("undeclared")},
		{"unknown tier verbatim", ingestd.Filter{Tiers: []ingestd.Tier{"partner-v2"}}, pick("unknown")},
		{"unknown tier is not external", ingestd.Filter{Tiers: []ingestd.Tier{ingestd.TierUntrustedExternal}}, pick("external")},
		{"combined", ingestd.Filter{Installations: []string{"handbook", "legacy", "support"}, SourceKinds: []string{"files"},
			Tiers: []ingestd.Tier{"", ingestd.TierUntrustedExternal}}, pick("undeclared")},
		{"deleted status", ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusDeleted}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			equalStrings(t, "documents", docIDs(search(t, s, tt.f)), tt.want)
		})
	}
	// A deleted document never matches, even when deleted is asked for.
	if err := s.DeleteDocument(ctx(), ids["internal"]); err != nil {
		t.Fatal(err)
	}
	all := ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusActive, ingestd.StatusDeleted}}
	equalStrings(t, "after delete", docIDs(search(t, s, all)), pick("external", "machine", "undeclared", "unknown"))
}

// factString renders facts for comparison: maps print sorted.
func factString(f ingestd.TierFacts) string {
	out := fmt.Sprintf("%s/%s/%q/%v", f.Installation, f.SourceKind, f.Tier, f.Meta)
	if f.Parent != nil {
		out += " parent " + factString(*f.Parent)
	}
	return out
}

// wantFacts compares TierFacts answers by factString.
func wantFacts(t *testing.T, what string, got map[string]ingestd.TierFacts, want map[string]ingestd.TierFacts) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d facts, want %d: %v", what, len(got), len(want), got)
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("%s: no facts for %s", what, id)
			continue
		}
		if factString(g) != factString(w) {
			t.Errorf("%s: facts of %s = %s, want %s", what, id, factString(g), factString(w))
		}
	}
}

func testTierFacts(t *testing.T, s ingestd.Store) {
	ids := filterFixtures(t, s)
	gh := Doc("repo", "issue-1", ingestd.TierTrustedInternal, "i1")
	gh.SourceKind = "github"
	gh.Meta = map[string]string{"author_association": "OWNER", "number": "1"}
	MustPut(t, s, gh, Chunks(gh, 1, "an owner's issue"), nil)
	gone := Doc("support", "gone.md", ingestd.TierUntrustedExternal, "g")
	MustPut(t, s, gone, Chunks(gone, 2, "gone words"), nil)
	if err := s.DeleteDocument(ctx(), gone.ID); err != nil {
		t.Fatal(err)
	}
	asked := []string{ids["internal"], ids["undeclared"], ids["unknown"], ids["external"], gh.ID, gone.ID, "dmissing"}
	want := map[string]ingestd.TierFacts{
		ids["internal"]:   {Installation: "handbook", SourceKind: "files", Tier: ingestd.TierTrustedInternal},
		ids["undeclared"]: {Installation: "legacy", SourceKind: "files"},
		ids["unknown"]:    {Installation: "partner", SourceKind: "url", Tier: "partner-v2"},
		ids["external"]:   {Installation: "support", SourceKind: "imap", Tier: ingestd.TierUntrustedExternal},
		gh.ID:             {Installation: "repo", SourceKind: "github", Tier: ingestd.TierTrustedInternal},
		gone.ID:           {Installation: "support", SourceKind: "files", Tier: ingestd.TierUntrustedExternal},
	}
	withMeta := map[string]ingestd.TierFacts{}
	for id, f := range want {
		withMeta[id] = f
	}
	f := withMeta[gh.ID]
	f.Meta = map[string]string{"author_association": "OWNER"}
	withMeta[gh.ID] = f
	// Before any search and after one: a store that answers from an
	// in-memory index once it is loaded must answer the same.
	for _, when := range []string{"before a search", "after a search"} {
		got, err := s.TierFacts(ctx(), asked, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantFacts(t, "no keys, "+when, got, want)
		got, err = s.TierFacts(ctx(), asked, []string{"author_association", "absent"})
		if err != nil {
			t.Fatal(err)
		}
		wantFacts(t, "keys, "+when, got, withMeta)
		got, err = s.TierFacts(ctx(), asked, []string{"author_association"})
		if err != nil {
			t.Fatal(err)
		}
		wantFacts(t, "one key, "+when, got, withMeta)
		searchVector(t, s, ingestd.Filter{})
	}
	if got, err := s.TierFacts(ctx(), nil, []string{"author_association"}); err != nil || len(got) != 0 {
		t.Fatalf("TierFacts(nil) = %v, %v", got, err)
	}
	// A change of tier or metadata is seen at once.
	gh2 := *gh
	gh2.Tier, gh2.ContentHash = ingestd.TierUntrustedExternal, ingestd.ContentHash("i1 edited")
	gh2.Meta = map[string]string{"author_association": "NONE"}
	MustPut(t, s, &gh2, Chunks(&gh2, 1, "a stranger's issue now"), nil)
	got, err := s.TierFacts(ctx(), []string{gh.ID}, []string{"author_association"})
	if err != nil {
		t.Fatal(err)
	}
	wantFacts(t, "after a change", got, map[string]ingestd.TierFacts{gh.ID: {Installation: "repo", SourceKind: "github",
		Tier: ingestd.TierUntrustedExternal, Meta: map[string]string{"author_association": "NONE"}}})
	// The metadata alone changes (another writer's rules stamp it alike).
	gh3 := gh2
	gh3.ContentHash = ingestd.ContentHash("i1 edited again")
	gh3.Meta = map[string]string{"author_association": "MEMBER"}
	MustPut(t, s, &gh3, Chunks(&gh3, 1, "a member's issue now"), nil)
	got, err = s.TierFacts(ctx(), []string{gh.ID}, []string{"author_association"})
	if err != nil {
		t.Fatal(err)
	}
	wantFacts(t, "after a metadata change", got, map[string]ingestd.TierFacts{gh.ID: {Installation: "repo", SourceKind: "github",
		Tier: ingestd.TierUntrustedExternal, Meta: map[string]string{"author_association": "MEMBER"}}})
}

func testTierFactsParents(t *testing.T, s ingestd.Store) {
	mail := Doc("support", "mail-1", ingestd.TierTrustedInternal, "m1")
	mail.SourceKind = "imap"
	mail.Meta = map[string]string{"mailbox": "Staff", "uid": "7"}
	att := Doc("support", "mail-1#attachment/1/a.txt", ingestd.TierTrustedInternal, "a1")
	att.SourceKind, att.ParentID = "imap", mail.ID
	att.Meta = map[string]string{"mailbox": "Staff", "content_type": "text/plain"}
	early := Doc("support", "mail-2#attachment/1/b.txt", ingestd.TierUntrustedExternal, "b1")
	early.SourceKind, early.ParentID = "imap", ingestd.DocumentID("support", "mail-2") // its parent is not stored
	for i, d := range []*ingestd.Document{mail, att, early} {
		MustPut(t, s, d, Chunks(d, i, "mail words "+d.ExternalID), nil)
	}
	keys := []string{"content_type", "mailbox"}
	parent := &ingestd.TierFacts{Installation: "support", SourceKind: "imap", Tier: ingestd.TierTrustedInternal, Meta: map[string]string{"mailbox": "Staff"}}
	want := map[string]ingestd.TierFacts{
		mail.ID:  {Installation: "support", SourceKind: "imap", Tier: ingestd.TierTrustedInternal, Meta: map[string]string{"mailbox": "Staff"}},
		att.ID:   {Installation: "support", SourceKind: "imap", Tier: ingestd.TierTrustedInternal, Meta: map[string]string{"mailbox": "Staff", "content_type": "text/plain"}, Parent: parent},
		early.ID: {Installation: "support", SourceKind: "imap", Tier: ingestd.TierUntrustedExternal},
	}
	for _, when := range []string{"before a search", "after a search"} {
		got, err := s.TierFacts(ctx(), []string{att.ID, early.ID, mail.ID}, keys)
		if err != nil {
			t.Fatal(err)
		}
		wantFacts(t, when, got, want)
		// The parent alone is enough to read it; without keys no metadata.
		got, err = s.TierFacts(ctx(), []string{att.ID}, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantFacts(t, when+", child alone", got, map[string]ingestd.TierFacts{att.ID: {Installation: "support", SourceKind: "imap",
			Tier: ingestd.TierTrustedInternal, Parent: &ingestd.TierFacts{Installation: "support", SourceKind: "imap", Tier: ingestd.TierTrustedInternal}}})
		searchVector(t, s, ingestd.Filter{})
	}
	// A parent stamped again, then deleted, is still the child's parent.
	mail2 := *mail
	mail2.Tier, mail2.ContentHash = ingestd.TierUntrustedExternal, ingestd.ContentHash("m1 again")
	MustPut(t, s, &mail2, Chunks(&mail2, 0, "mail words again"), nil)
	if err := s.DeleteDocument(ctx(), mail.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.TierFacts(ctx(), []string{att.ID}, keys)
	if err != nil {
		t.Fatal(err)
	}
	want[att.ID].Parent.Tier = ingestd.TierUntrustedExternal
	wantFacts(t, "deleted parent", got, map[string]ingestd.TierFacts{att.ID: want[att.ID]})
}

// countString renders counts for comparison, sorted.
func countStrings(counts []ingestd.DocumentCount) []string {
	out := make([]string, len(counts))
	for i, c := range counts {
		out[i] = fmt.Sprintf("%s = %d", factString(c.TierFacts), c.Count)
	}
	slices.Sort(out)
	return out
}

func testCountDocuments(t *testing.T, s ingestd.Store) {
	filterFixtures(t, s)
	extra := Doc("support", "second.md", ingestd.TierUntrustedExternal, "x")
	extra.SourceKind = "imap"
	MustPut(t, s, extra, nil, nil)
	rejected := Doc("support", "rejected.md", ingestd.TierUntrustedExternal, "r")
	rejected.SourceKind, rejected.Status = "imap", ingestd.StatusRejected
	MustPut(t, s, rejected, nil, nil)
	gone := Doc("support", "gone.md", ingestd.TierUntrustedExternal, "g")
	gone.SourceKind = "imap"
	MustPut(t, s, gone, nil, nil)
	if err := s.DeleteDocument(ctx(), gone.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.CountDocuments(ctx(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ingestd.DocumentCount{
		{TierFacts: ingestd.TierFacts{Installation: "bots", SourceKind: "webhook", Tier: ingestd.TierMachineGenerated}, Count: 1},
		{TierFacts: ingestd.TierFacts{Installation: "handbook", SourceKind: "files", Tier: ingestd.TierTrustedInternal}, Count: 1},
		{TierFacts: ingestd.TierFacts{Installation: "legacy", SourceKind: "files", Tier: ""}, Count: 1},
		{TierFacts: ingestd.TierFacts{Installation: "partner", SourceKind: "url", Tier: "partner-v2"}, Count: 1},
		{TierFacts: ingestd.TierFacts{Installation: "support", SourceKind: "imap", Tier: ingestd.TierUntrustedExternal}, Count: 3},
	}
	equalStrings(t, "CountDocuments", countStrings(got), countStrings(want))
}

func testCountDocumentsMeta(t *testing.T, s ingestd.Store) {
	put := func(ext string, tier ingestd.Tier, meta map[string]string, parent string) *ingestd.Document {
		d := Doc("repo", ext, tier, ext)
		d.SourceKind, d.Meta = "github", meta
		if parent != "" {
			d.ParentID = ingestd.DocumentID("repo", parent)
		}
		MustPut(t, s, d, nil, nil)
		return d
	}
	owner := map[string]string{"author_association": "OWNER", "number": "1"}
	put("i1", ingestd.TierTrustedInternal, owner, "")
	put("i2", ingestd.TierTrustedInternal, map[string]string{"number": "2", "author_association": "OWNER"}, "")
	put("i3", ingestd.TierUntrustedExternal, map[string]string{"author_association": "NONE"}, "")
	put("i4", ingestd.TierUntrustedExternal, nil, "")
	put("i1#a", ingestd.TierTrustedInternal, owner, "i1")
	put("i1#b", ingestd.TierTrustedInternal, owner, "i1")
	put("i9#a", ingestd.TierUntrustedExternal, nil, "i9") // its parent is not stored

	got, err := s.CountDocuments(ctx(), []string{"author_association"})
	if err != nil {
		t.Fatal(err)
	}
	gh := func(tier ingestd.Tier, assoc string) ingestd.TierFacts {
		f := ingestd.TierFacts{Installation: "repo", SourceKind: "github", Tier: tier}
		if assoc != "" {
			f.Meta = map[string]string{"author_association": assoc}
		}
		return f
	}
	withParent := gh(ingestd.TierTrustedInternal, "OWNER")
	p := gh(ingestd.TierTrustedInternal, "OWNER")
	withParent.Parent = &p
	want := []ingestd.DocumentCount{
		{TierFacts: gh(ingestd.TierTrustedInternal, "OWNER"), Count: 2},
		{TierFacts: gh(ingestd.TierUntrustedExternal, "NONE"), Count: 1},
		{TierFacts: gh(ingestd.TierUntrustedExternal, ""), Count: 2},
		{TierFacts: withParent, Count: 2},
	}
	equalStrings(t, "CountDocuments with keys", countStrings(got), countStrings(want))

	got, err = s.CountDocuments(ctx(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p = gh(ingestd.TierTrustedInternal, "")
	withParent = gh(ingestd.TierTrustedInternal, "")
	withParent.Parent = &p
	want = []ingestd.DocumentCount{
		{TierFacts: gh(ingestd.TierTrustedInternal, ""), Count: 2},
		{TierFacts: gh(ingestd.TierUntrustedExternal, ""), Count: 3},
		{TierFacts: withParent, Count: 2},
	}
	equalStrings(t, "CountDocuments without keys", countStrings(got), countStrings(want))
}

func testSearchTextRelevance(t *testing.T, s ingestd.Store) {
	on := Doc("inst", "on.md", "", "on")
	partial := Doc("inst", "partial.md", "", "partial")
	off := Doc("inst", "off.md", "", "off")
	MustPut(t, s, on, Chunks(on, 0, "How to rotate the database password: rotate it monthly and store the password in the vault."), nil)
	MustPut(t, s, partial, Chunks(partial, 0, "The vault holds many secrets for the team."), nil)
	MustPut(t, s, off, Chunks(off, 0, "Lunch is served at noon in the cafeteria on the second floor."), nil)
	hits, err := s.SearchText(ctx(), "rotate database password", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].DocumentID != on.ID {
		t.Fatalf("SearchText top hit = %v, want %s first", hits, on.ID)
	}
	for _, h := range hits {
		if h.DocumentID == off.ID {
			t.Fatalf("SearchText returned a chunk without any query word: %v", hits)
		}
	}
	// Any word may match when not all do; more matching words rank higher.
	hits, err = s.SearchText(ctx(), "password vault", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].DocumentID != on.ID || hits[1].DocumentID != partial.ID {
		t.Fatalf("SearchText(password vault) = %v, want %s then %s", hits, on.ID, partial.ID)
	}
	if !(hits[0].Score >= hits[1].Score) {
		t.Fatalf("scores not descending: %v", hits)
	}
	for _, h := range hits {
		if math.IsNaN(h.Score) || h.Score <= 0 {
			t.Fatalf("score %v of %s: want a positive number", h.Score, h.ChunkID)
		}
	}
	// Title words count too.
	titled := Doc("inst", "titled.md", "", "titled")
	titled.Title = "Kubernetes upgrade runbook"
	MustPut(t, s, titled, Chunks(titled, 0, "Drain nodes one at a time."), nil)
	hits, err = s.SearchText(ctx(), "kubernetes", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].DocumentID != titled.ID {
		t.Fatalf("SearchText(kubernetes) = %v, want the titled document", hits)
	}
}

// A query word finds chunks that hold its digits, its number word or a
// synonym (internal/lexnorm's groups), as the lexical embedder brings them
// near.
func testSearchTextFolds(t *testing.T, s ingestd.Store) {
	days := Doc("inst", "days.md", "", "days")
	buy := Doc("inst", "buy.md", "", "buy")
	minutes := Doc("inst", "minutes.md", "", "minutes")
	MustPut(t, s, days, Chunks(days, 0, "Refunds are paid within 30 days of the request."), nil)
	MustPut(t, s, buy, Chunks(buy, 0, "Teams buy their own laptops from the approved list."), nil)
	MustPut(t, s, minutes, Chunks(minutes, 0, "Allow fifteen minutes for the certificate to spread."), nil)
	for _, tt := range []struct {
		query string
		want  string
	}{
		{"thirty", days.ID},
		{"purchases", buy.ID},
		{"15", minutes.ID},
	} {
		hits, err := s.SearchText(ctx(), tt.query, ingestd.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].DocumentID != tt.want {
			t.Errorf("SearchText(%q) = %v, want %s alone", tt.query, hits, tt.want)
		}
	}
}

func testSearchTextSyntax(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", "", "a")
	MustPut(t, s, d, Chunks(d, 0, "error near the column title: disk full OR not, star * quote"), nil)
	for _, q := range []string{
		`"unbalanced`, `disk*`, `disk OR`, `NEAR disk`, `disk NEAR/3 full`, `-disk`, `title:disk`, `text:disk`,
		`(disk`, `disk)`, `AND`, `NOT disk`, `^disk`, `'disk'`, `disk "full`, `{}[]`, `***`, `"`, ``, `   `,
		`disk\`, `d:i:s:k`, `😀 disk`, `NEAR`, `OR`, `AND OR NOT`,
	} {
		hits, err := s.SearchText(ctx(), q, ingestd.Filter{}, 10)
		if err != nil {
			t.Fatalf("SearchText(%q): %v", q, err)
		}
		if strings.Contains(strings.ToLower(q), "disk") && len(hits) != 1 {
			t.Fatalf("SearchText(%q) = %v, want the one chunk", q, hits)
		}
	}
	// Operators are words: a chunk without "or" is not matched by "or" as
	// an operator joining two words that are absent.
	hits, err := s.SearchText(ctx(), "zebra OR giraffe", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.DocumentID != d.ID {
			t.Fatalf("unexpected hit %v", h)
		}
	}
}

func testSearchTextLimit(t *testing.T, s ingestd.Store) {
	for i := range 7 {
		d := Doc("inst", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		MustPut(t, s, d, Chunks(d, 0, fmt.Sprintf("common topic paragraph %d", i), fmt.Sprintf("common topic other %d", i)), nil)
	}
	hits, err := s.SearchText(ctx(), "common topic", ingestd.Filter{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 {
		t.Fatalf("%d hits, want limit 5", len(hits))
	}
	if _, err := s.SearchText(ctx(), "common", ingestd.Filter{}, 0); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("limit 0: err = %v, want EINVALID", err)
	}
}

// testSearchTextFilterDeep checks that a filter which rejects the best
// many matches still finds the weaker matches it keeps.
func testSearchTextFilterDeep(t *testing.T, s ingestd.Store) {
	for i := range 150 {
		d := Doc("noisy", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		MustPut(t, s, d, Chunks(d, 0, "needle needle haystack"), nil)
	}
	var want []string
	for i := range 2 {
		d := Doc("quiet", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		MustPut(t, s, d, Chunks(d, 0, "a needle lost in a long paragraph of many other words about nothing in particular"), nil)
		want = append(want, d.ID)
	}
	hits, err := s.SearchText(ctx(), "needle", ingestd.Filter{Installations: []string{"quiet"}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "filtered hits", docIDs(hits), sorted(want...))
	hits, err = s.SearchVector(ctx(), Axis(0), ingestd.Filter{Installations: []string{"quiet"}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "filtered vector hits", docIDs(hits), sorted(want...))
}

func testSearchVectorOrdering(t *testing.T, s ingestd.Store) {
	// Chunk i of each document lies along a mix of axes; the query is
	// nearest to chunk "near", then "mid", then "far".
	d := Doc("inst", "a.md", "", "a")
	cs := Chunks(d, 0, "near", "mid", "far", "opposite")
	cs[0].Embedding = []float32{1, 0.1, 0, 0, 0, 0, 0, 0}
	cs[1].Embedding = []float32{1, 1, 0, 0, 0, 0, 0, 0}
	cs[2].Embedding = []float32{0.2, 1, 0.3, 0, 0, 0, 0, 0}
	cs[3].Embedding = []float32{-1, 0, 0, 0, 0, 0, 0, 0}
	MustPut(t, s, d, cs, nil)
	hits, err := s.SearchVector(ctx(), []float32{2, 0, 0, 0, 0, 0, 0, 0}, ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "order", chunkIDs(hits), []string{cs[0].ID, cs[1].ID, cs[2].ID, cs[3].ID})
	want := []float64{1 / math.Sqrt(1.01), 1 / math.Sqrt2, 0.2 / math.Sqrt(1.13), -1}
	for i, h := range hits {
		if math.Abs(h.Score-want[i]) > 1e-4 {
			t.Fatalf("score of %d = %v, want cosine %v", i, h.Score, want[i])
		}
		if h.DocumentID != d.ID {
			t.Fatalf("hit %v: document id", h)
		}
	}
	hits, err = s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "limited", chunkIDs(hits), []string{cs[0].ID, cs[1].ID})
	if _, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 0); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("limit 0: err = %v, want EINVALID", err)
	}
	if _, err := s.SearchVector(ctx(), nil, ingestd.Filter{}, 3); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("empty vector: err = %v, want EINVALID", err)
	}
}

func testSearchVectorEmbedders(t *testing.T, s ingestd.Store) {
	a := Doc("inst", "a.md", "", "a")
	b := Doc("inst", "b.md", "", "b")
	ca := Chunks(a, 0, "from embedder a")
	cb := Chunks(b, 0, "from embedder b")
	cb[0].EmbedderID = "other/8"
	MustPut(t, s, a, ca, nil)
	MustPut(t, s, b, cb, nil)
	for _, tc := range []struct {
		embedder string
		want     []string
	}{
		{testEmbedder, []string{ca[0].ID}},
		{"other/8", []string{cb[0].ID}},
		{"", []string{cb[0].ID}}, // the most recently written
		{"missing/8", nil},
	} {
		hits, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{EmbedderID: tc.embedder}, 10)
		if err != nil {
			t.Fatal(err)
		}
		equalStrings(t, "embedder "+tc.embedder, chunkIDs(hits), tc.want)
	}
	// A query of another dimension compares nothing.
	hits, err := s.SearchVector(ctx(), []float32{1, 0, 0}, ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("3-d query matched 8-d vectors: %v", hits)
	}
}

func testSearchVectorLaterWrites(t *testing.T, s ingestd.Store) {
	a := Doc("inst", "a.md", "", "a")
	ca := Chunks(a, 1, "first")
	MustPut(t, s, a, ca, nil)
	if hits, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10); err != nil || len(hits) != 1 {
		t.Fatalf("first search = %v, %v", hits, err)
	}
	b := Doc("inst", "b.md", "", "b")
	cb := Chunks(b, 0, "second")
	MustPut(t, s, b, cb, nil)
	hits, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "after a later write", chunkIDs(hits), []string{cb[0].ID, ca[0].ID})
	// Re-embedding moves a chunk.
	if err := s.SetEmbeddings(ctx(), testEmbedder, map[string][]float32{ca[0].ID: Axis(0), cb[0].ID: Axis(2)}); err != nil {
		t.Fatal(err)
	}
	hits, err = s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "after SetEmbeddings", chunkIDs(hits), []string{ca[0].ID, cb[0].ID})
}

func testChunks(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", "partner-v2", "a")
	cs := Chunks(d, 2, "one", "two", "three")
	cs[1].Locator, cs[2].Locator = "p. 2", "Refunds > Steps"
	MustPut(t, s, d, cs, nil)
	e := Doc("other", "b.md", ingestd.TierTrustedInternal, "b")
	ce := Chunks(e, 0, "four")
	ce[0].HeadingPath = nil
	ce[0].Embedding = nil
	MustPut(t, s, e, ce, nil)
	ids := []string{cs[2].ID, "cmissing", ce[0].ID, cs[0].ID}
	got, err := s.Chunks(ctx(), ids)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "Chunks", viewIDs(got), []string{cs[2].ID, ce[0].ID, cs[0].ID})
	v := got[0]
	want := cs[2]
	if v.DocumentID != d.ID || v.Ordinal != 2 || v.Text != want.Text || v.Fenced != want.Fenced || v.Tokens != want.Tokens ||
		v.EmbedderID != want.EmbedderID || !slices.Equal(v.HeadingPath, want.HeadingPath) || !slices.Equal(v.Embedding, want.Embedding) ||
		v.Locator != want.Locator {
		t.Fatalf("chunk = %+v, want %+v", v.Chunk, want)
	}
	if v.Tier != "partner-v2" || v.DocumentTier != "partner-v2" || v.Installation != "inst" || v.SourceKind != "files" ||
		v.ItemKind != d.ItemKind || v.URI != d.URI || v.Title != d.Title || v.DocumentStatus != ingestd.StatusActive ||
		!v.UpdatedAt.Equal(d.UpdatedAt) {
		t.Fatalf("document fields = %+v", v)
	}
	if len(got[1].HeadingPath) != 0 || len(got[1].Embedding) != 0 || got[1].Locator != "" {
		t.Fatalf("empty heading path, embedding and locator came back as %v, %v, %q", got[1].HeadingPath, got[1].Embedding, got[1].Locator)
	}
	all, err := s.DocumentChunks(ctx(), []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	var locators []string
	for _, v := range all {
		locators = append(locators, v.Locator)
	}
	equalStrings(t, "DocumentChunks locators", locators, []string{"", "p. 2", "Refunds > Steps"})
	if got, err := s.Chunks(ctx(), nil); err != nil || len(got) != 0 {
		t.Fatalf("Chunks(nil) = %v, %v", got, err)
	}
}

func testDocumentChunks(t *testing.T, s ingestd.Store) {
	a := Doc("inst", "a.md", "", "a")
	b := Doc("inst", "b.md", "", "b")
	ca := Chunks(a, 0, "a0", "a1", "a2")
	cb := Chunks(b, 0, "b0", "b1")
	// Written out of ordinal order.
	MustPut(t, s, a, []ingestd.Chunk{ca[2], ca[0], ca[1]}, nil)
	MustPut(t, s, b, cb, nil)
	got, err := s.DocumentChunks(ctx(), []string{b.ID, a.ID, "dmissing"})
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "DocumentChunks", viewIDs(got), []string{cb[0].ID, cb[1].ID, ca[0].ID, ca[1].ID, ca[2].ID})
	if len(got[0].Embedding) != Dims {
		t.Fatalf("embedding not included: %v", got[0].Embedding)
	}
}

// testExpansionChunks: the chunks at the asked positions (missing ones
// skipped), then each document's two chunks most similar to the query in
// ordinal order — the lowest ordinals when none compares (another
// embedder, a query of another length).
func testExpansionChunks(t *testing.T, s ingestd.Store) {
	a := Doc("x", "a.md", "", "a")
	ac := Chunks(a, 0, "a0", "a1", "a2", "a3") // vectors along axes 0..3
	b := Doc("x", "b.md", "", "b")
	bc := Chunks(b, 4, "b0", "b1", "b2") // axes 4..6
	c := Doc("x", "c.md", "", "c")
	cc := Chunks(c, 0, "c0", "c1")
	for i := range cc {
		cc[i].EmbedderID = "other/8"
	}
	MustPut(t, s, a, ac, nil)
	MustPut(t, s, b, bc, nil)
	MustPut(t, s, c, cc, nil)
	at := func(doc *ingestd.Document, ords ...int) []ingestd.ChunkPosition {
		var out []ingestd.ChunkPosition
		for _, o := range ords {
			out = append(out, ingestd.ChunkPosition{DocumentID: doc.ID, Ordinal: o})
		}
		return out
	}
	tests := []struct {
		name string
		x    ingestd.Expansion
		want []string
	}{
		// b: its chunk on axis 5, then the lowest ordinal of the two that
		// score 0, in ordinal order; c: its first two, as its vectors are
		// another embedder's and all score 0.
		{"adjacent and documents", ingestd.Expansion{Query: Axis(5), EmbedderID: testEmbedder, Adjacent: at(a, -1, 1, 3), Documents: []string{b.ID, c.ID}},
			[]string{ac[1].ID, ac[3].ID, bc[0].ID, bc[1].ID, cc[0].ID, cc[1].ID}},
		{"a 0 score and the best", ingestd.Expansion{Query: Axis(6), EmbedderID: testEmbedder, Documents: []string{b.ID}},
			[]string{bc[0].ID, bc[2].ID}},
		{"query of another length", ingestd.Expansion{Query: []float32{1, 2}, EmbedderID: testEmbedder, Documents: []string{b.ID}},
			[]string{bc[0].ID, bc[1].ID}},
		{"adjacent in the order asked, once", ingestd.Expansion{Query: Axis(0), EmbedderID: testEmbedder, Adjacent: append(at(a, 2, 0, 2), at(b, 9)...)},
			[]string{ac[2].ID, ac[0].ID}},
		{"missing document", ingestd.Expansion{Query: Axis(0), EmbedderID: testEmbedder, Documents: []string{"dmissing", c.ID}},
			[]string{cc[0].ID, cc[1].ID}},
		{"nothing asked", ingestd.Expansion{Query: Axis(0), EmbedderID: testEmbedder}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ExpansionChunks(ctx(), tt.x)
			if err != nil {
				t.Fatal(err)
			}
			equalStrings(t, "ExpansionChunks", viewIDs(got), tt.want)
			for _, v := range got {
				if len(v.Embedding) != Dims || v.Fenced == "" || v.Title == "" || v.Installation != "x" {
					t.Fatalf("chunk view lacks fields: %+v", v)
				}
			}
		})
	}
}

// testExpansionChunksAsDefault: a store answers ExpansionChunks as the
// default over its own DocumentChunks (ingestd.ExpansionChunksOf) does,
// over vectors whose inner products are exact in any order of summation.
func testExpansionChunksAsDefault(t *testing.T, s ingestd.Store) {
	var docs []string
	var adjacent []ingestd.ChunkPosition
	for d := range 6 {
		doc := Doc("x", fmt.Sprintf("%d.md", d), "", fmt.Sprint(d))
		var texts []string
		for i := range 2 + d%4 {
			texts = append(texts, fmt.Sprintf("doc %d chunk %d", d, i))
		}
		cs := Chunks(doc, d, texts...)
		for i := range cs {
			// Half of another axis: scores are distinct multiples of 1/2,
			// some equal across chunks.
			cs[i].Embedding[(i*3+d)%Dims] += 0.5
			switch {
			case d == 4 && i == 1:
				cs[i].Embedding = nil
			case d == 5 && i == 0:
				cs[i].EmbedderID = "other/8"
			}
		}
		MustPut(t, s, doc, cs, nil)
		docs = append(docs, doc.ID)
		adjacent = append(adjacent, ingestd.ChunkPosition{DocumentID: doc.ID, Ordinal: d%3 - 1}, ingestd.ChunkPosition{DocumentID: doc.ID, Ordinal: d % 3})
	}
	queries := [][]float32{Axis(0), Axis(3), {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, {1, -1, 1, -1, 1, -1, 1, -1}, {1}, nil}
	for qi, q := range queries {
		for _, x := range []ingestd.Expansion{
			{Query: q, EmbedderID: testEmbedder, Documents: docs},
			{Query: q, EmbedderID: testEmbedder, Adjacent: adjacent, Documents: docs[3:]},
			{Query: q, EmbedderID: "other/8", Adjacent: adjacent[:4], Documents: []string{docs[5], docs[0], docs[5]}},
		} {
			got, err := s.ExpansionChunks(ctx(), x)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ingestd.ExpansionChunksOf(ctx(), s, x)
			if err != nil {
				t.Fatal(err)
			}
			equalStrings(t, fmt.Sprintf("query %d, %d adjacent, %d documents", qi, len(x.Adjacent), len(x.Documents)), viewIDs(got), viewIDs(want))
		}
	}
}

func testLinks(t *testing.T, s ingestd.Store) {
	a := Doc("inst", "a.md", "", "a")
	b := Doc("inst", "b.md", "", "b")
	c := Doc("inst", "c.md", "", "c")
	MustPut(t, s, a, nil, []ingestd.Link{{From: a.ID, To: b.ID, Relation: "xref"}, {From: a.ID, To: "dnotyet", Relation: "link"}})
	MustPut(t, s, b, nil, []ingestd.Link{{From: b.ID, To: c.ID, Relation: "parent"}})
	MustPut(t, s, c, nil, nil)
	sortLinks := func(ls []ingestd.Link) {
		slices.SortFunc(ls, func(x, y ingestd.Link) int {
			return strings.Compare(x.From+"\x00"+x.To+"\x00"+x.Relation, y.From+"\x00"+y.To+"\x00"+y.Relation)
		})
	}
	for _, tc := range []struct {
		name string
		ids  []string
		want []ingestd.Link
	}{
		{"outgoing and incoming", []string{b.ID}, []ingestd.Link{link(a.ID, b.ID, "xref"), link(b.ID, c.ID, "parent")}},
		{"incoming only", []string{c.ID}, []ingestd.Link{link(b.ID, c.ID, "parent")}},
		{"to a document not stored yet", []string{"dnotyet"}, []ingestd.Link{link(a.ID, "dnotyet", "link")}},
		{"each link once", []string{a.ID, b.ID}, []ingestd.Link{link(a.ID, b.ID, "xref"), link(a.ID, "dnotyet", "link"), link(b.ID, c.ID, "parent")}},
		{"none", []string{"dmissing"}, nil},
	} {
		got, err := s.Links(ctx(), tc.ids)
		if err != nil {
			t.Fatal(err)
		}
		sortLinks(got)
		sortLinks(tc.want)
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Fatalf("%s: Links = %v, want %v", tc.name, got, tc.want)
		}
	}
}
