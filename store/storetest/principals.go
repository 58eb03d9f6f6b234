// The cases of a document's readers (ingestd.Readers): stored with the
// document, kept current without touching its chunks, and applied inside
// every read a person's request makes — both searches, the expansion's
// chunks, the counts — so that an unmapped document is read by no
// person and a hidden one is simply absent.

package storetest

import (
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
)

func principalTests() []struct {
	name string
	fn   func(t *testing.T, s ingestd.Store)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s ingestd.Store)
	}{
		{"Readers/RoundTrip", testReadersRoundTrip},
		{"Readers/ChangeKeepsChunks", testReadersChange},
		{"Readers/Filters/Text", func(t *testing.T, s ingestd.Store) { testReaderFilters(t, s, searchText) }},
		{"Readers/Filters/Vector", func(t *testing.T, s ingestd.Store) { testReaderFilters(t, s, searchVector) }},
		{"Readers/Rejected", testReaderRejected},
		{"Readers/ExpansionChunks", testReaderExpansion},
		{"Readers/CountDocumentsFor", testReaderCounts},
	}
}

var (
	alice = ingestd.Principal("user:alice@example.com")
	bob   = ingestd.Principal("user:bob@example.com")
	hr    = ingestd.Principal("group:hr")
)

// readerFixtures writes one document per readers state, each containing
// "shared" along axis 0, and returns their ids by name: public, alice
// (alice only), hr (the group), nobody (mapped, no one) and unmapped.
func readerFixtures(t *testing.T, s ingestd.Store, status ingestd.Status) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, f := range []struct {
		name    string
		readers ingestd.Readers
	}{
		{"public", ingestd.Public()},
		{"alice", ingestd.ReadersOf(alice)},
		{"hr", ingestd.ReadersOf(hr, bob)},
		{"nobody", ingestd.ReadersOf()},
		{"unmapped", ingestd.Readers{}},
	} {
		d := Doc("acl", f.name+".md", ingestd.TierTrustedInternal, f.name)
		d.Readers, d.Status = f.readers, status
		MustPut(t, s, d, Chunks(d, 0, "shared words of "+f.name, "more of "+f.name), nil)
		ids[f.name] = d.ID
	}
	return ids
}

func testReadersRoundTrip(t *testing.T, s ingestd.Store) {
	ids := readerFixtures(t, s, ingestd.StatusActive)
	want := map[string]ingestd.Readers{
		"public": ingestd.Public(), "alice": ingestd.ReadersOf(alice), "hr": ingestd.ReadersOf(bob, hr),
		"nobody": ingestd.ReadersOf(), "unmapped": {},
	}
	var all []string
	for name, id := range ids {
		all = append(all, id)
		d, err := s.Document(ctx(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Readers.Equal(want[name]) || d.Readers.State() != want[name].State() {
			t.Errorf("Document(%s).Readers = %+v, want %+v", name, d.Readers, want[name])
		}
	}
	facts, err := s.TierFacts(ctx(), all, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		if got := facts[id].Readers; !got.Equal(want[name]) {
			t.Errorf("TierFacts(%s).Readers = %+v, want %+v", name, got, want[name])
		}
	}
	// The same readers again is no change.
	d := Doc("acl", "alice.md", ingestd.TierTrustedInternal, "alice")
	d.Readers = ingestd.ReadersOf(alice)
	if MustPut(t, s, d, Chunks(d, 0, "shared words of alice", "more of alice"), nil) {
		t.Error("putting the same document with the same readers reported a change")
	}
}

// testReadersChange: a revocation is a change of the document, seen by
// the next search, that keeps its chunks (ids and vectors) as they are.
func testReadersChange(t *testing.T, s ingestd.Store) {
	d := Doc("acl", "shared.md", ingestd.TierTrustedInternal, "shared")
	d.Readers = ingestd.ReadersOf(alice, bob)
	chunks := Chunks(d, 0, "shared words", "more words")
	MustPut(t, s, d, chunks, nil)
	asBob := ingestd.Filter{Reader: ingestd.NewReader(bob)}
	equalStrings(t, "bob before", docIDs(searchText(t, s, asBob)), []string{d.ID})
	equalStrings(t, "bob before (vector)", docIDs(searchVector(t, s, asBob)), []string{d.ID})

	d.Readers = ingestd.ReadersOf(alice)
	// The chunks are not sent again: same content, only its readers change.
	if !MustPut(t, s, d, nil, nil) {
		t.Fatal("a change of readers reported no change")
	}
	equalStrings(t, "bob after", docIDs(searchText(t, s, asBob)), nil)
	equalStrings(t, "bob after (vector)", docIDs(searchVector(t, s, asBob)), nil)
	asAlice := ingestd.Filter{Reader: ingestd.NewReader(alice)}
	equalStrings(t, "alice after", docIDs(searchVector(t, s, asAlice)), []string{d.ID})
	got, err := s.DocumentChunks(ctx(), []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "chunks kept", viewIDs(got), chunkIDList(chunks))
	if len(got) == 0 || !slices.Equal(got[0].Embedding, chunks[0].Embedding) {
		t.Error("the vectors changed with the readers")
	}
	stored, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !stored.Readers.Equal(ingestd.ReadersOf(alice)) {
		t.Errorf("stored readers = %+v, want alice", stored.Readers)
	}
	// Back to unmapped: no person reads it, the service view still does.
	d.Readers = ingestd.Readers{}
	MustPut(t, s, d, nil, nil)
	equalStrings(t, "alice unmapped", docIDs(searchText(t, s, asAlice)), nil)
	equalStrings(t, "service unmapped", docIDs(searchText(t, s, ingestd.Filter{})), []string{d.ID})
}

func testReaderFilters(t *testing.T, s ingestd.Store, search searchFunc) {
	ids := readerFixtures(t, s, ingestd.StatusActive)
	pick := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, ids[n])
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name   string
		reader *ingestd.Reader
		want   []string
	}{
		{"service view", nil, pick("public", "alice", "hr", "nobody", "unmapped")},
		{"alice", ingestd.NewReader(alice), pick("public", "alice")},
		{"alice in hr", ingestd.Groups{hr: {alice}}.Reader(alice), pick("public", "alice", "hr")},
		{"bob", ingestd.NewReader(bob), pick("public", "hr")},
		{"a stranger", ingestd.NewReader("user:carol@example.com"), pick("public")},
		{"a reader with no principal", &ingestd.Reader{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			equalStrings(t, "documents", docIDs(search(t, s, ingestd.Filter{Reader: tt.reader})), tt.want)
			// With another narrowing too.
			f := ingestd.Filter{Reader: tt.reader, Installations: []string{"acl"}, Tiers: []ingestd.Tier{ingestd.TierTrustedInternal}}
			equalStrings(t, "narrowed", docIDs(search(t, s, f)), tt.want)
		})
	}
}

// testReaderRejected: the rejected block's search is filtered alike.
func testReaderRejected(t *testing.T, s ingestd.Store) {
	ids := readerFixtures(t, s, ingestd.StatusRejected)
	f := ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusRejected}, Reader: ingestd.NewReader(alice)}
	want := sorted(ids["public"], ids["alice"])
	equalStrings(t, "rejected (text)", docIDs(searchText(t, s, f)), want)
	equalStrings(t, "rejected (vector)", docIDs(searchVector(t, s, f)), want)
}

func testReaderExpansion(t *testing.T, s ingestd.Store) {
	ids := readerFixtures(t, s, ingestd.StatusActive)
	var docs []string
	var adjacent []ingestd.ChunkPosition
	for _, n := range []string{"public", "alice", "hr", "nobody", "unmapped"} {
		docs = append(docs, ids[n])
		adjacent = append(adjacent, ingestd.ChunkPosition{DocumentID: ids[n], Ordinal: 1})
	}
	x := ingestd.Expansion{Query: Axis(0), EmbedderID: testEmbedder, Documents: docs, Adjacent: adjacent}
	service, err := s.ExpansionChunks(ctx(), x)
	if err != nil {
		t.Fatal(err)
	}
	x.Reader = ingestd.NewReader(alice)
	got, err := s.ExpansionChunks(ctx(), x)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, v := range service {
		if v.DocumentID == ids["public"] || v.DocumentID == ids["alice"] {
			want = append(want, v.ID)
		}
	}
	if len(service) != 2*5 || len(want) != 2*2 {
		t.Fatalf("service view read %d chunks (%d of alice's), want 10 (4)", len(service), len(want))
	}
	equalStrings(t, "alice's expansion", viewIDs(got), want)
}

func testReaderCounts(t *testing.T, s ingestd.Store) {
	readerFixtures(t, s, ingestd.StatusActive)
	count := func(r *ingestd.Reader) map[string]int {
		t.Helper()
		cs, err := s.CountDocumentsFor(ctx(), nil, r)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, c := range cs {
			out[c.ReadersState] += c.Count
		}
		return out
	}
	if got, want := count(nil), map[string]int{"public": 1, "restricted": 3, "unmapped": 1}; !mapsEqual(got, want) {
		t.Errorf("service view counts = %v, want %v", got, want)
	}
	if got, want := count(ingestd.NewReader(alice)), map[string]int{"public": 1, "restricted": 1}; !mapsEqual(got, want) {
		t.Errorf("alice's counts = %v, want %v", got, want)
	}
	if got, want := count(ingestd.NewReader("user:carol@example.com")), map[string]int{"public": 1}; !mapsEqual(got, want) {
		t.Errorf("a stranger's counts = %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
