package fwbench

import (
	"context"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/ingestd/ingestd"
)

// shared is the embedded corpus ingested once for the tests that only ask
// questions; TestMain closes it.
var shared struct {
	once sync.Once
	b    *Bench
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.b != nil {
		shared.b.Close()
	}
	os.Exit(code)
}

// MustShared returns the embedded corpus, ingested once per test binary.
func MustShared(tb testing.TB) *Bench {
	tb.Helper()
	shared.once.Do(func() { shared.b, shared.err = Open(context.Background(), Options{}) })
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.b
}

// MustCorpusFS copies the embedded corpus into memory and applies the
// edits: file name → old string → new string (each old string must occur).
func MustCorpusFS(tb testing.TB, edits map[string][2]string) fstest.MapFS {
	tb.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(Embedded(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Embedded(), p)
		if err != nil {
			return err
		}
		m[p] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	for name, e := range edits {
		f, ok := m[name]
		if !ok || !strings.Contains(string(f.Data), e[0]) {
			tb.Fatalf("edit of %s: %q not found", name, e[0])
		}
		f.Data = []byte(strings.Replace(string(f.Data), e[0], e[1], 1))
	}
	return m
}

// TestFirewallBenchmark ingests the whole corpus through the real path,
// asks every question in every mode and checks what must always hold:
// the corpus loaded whole (Open refuses otherwise), every needed document
// is stored, and every goal — injection reach 0 in every mode, and issue
// 17's bounds for a mode named "recommended" once it exists — is met.
func TestFirewallBenchmark(t *testing.T) {
	ctx := context.Background()
	b := MustShared(t)
	c := b.Corpus

	if got, want := len(c.Installations), 6; got != want {
		t.Errorf("installations = %d, want %d", got, want)
	}
	total := 0
	for _, in := range c.Installations {
		if b.Stored[in.ID] == 0 {
			t.Errorf("installation %s stored no document", in.ID)
		}
		total += b.Stored[in.ID]
	}
	if total < 200 {
		t.Errorf("%d documents stored, want at least 200", total)
	}
	for _, q := range c.Questions {
		for _, need := range q.Needs {
			alts, err := c.Alternatives(need)
			if err != nil {
				t.Fatalf("%s: %v", q.ID, err)
			}
			for _, d := range alts {
				doc, err := b.store.Document(ctx, d.ID)
				if err != nil {
					t.Fatalf("%s needs %s: %v", q.ID, d.Ref, err)
				}
				if doc.Status == ingestd.StatusDeleted {
					t.Errorf("%s needs %s, which is deleted", q.ID, d.Ref)
				}
			}
		}
	}

	r, err := b.Measure(ctx, Modes, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(r.Modes), len(Modes); got != want {
		t.Fatalf("measured %d modes, want %d", got, want)
	}
	for _, f := range r.Modes {
		if got, want := len(f.Turns), len(c.Questions); got != want {
			t.Errorf("mode %s: %d turns, want %d", f.Mode, got, want)
		}
	}
	reach := 0
	for _, g := range r.Goals {
		if g.Metric == MetricInjectionReach {
			reach++
		}
		if !g.Met {
			t.Errorf("goal missed: mode %s, %s %s: got %g (%s)", g.Measured, g.Metric, bound(g.Goal), g.Value, g.Because)
		}
	}
	if reach != len(Modes) {
		t.Errorf("injection reach checked in %d modes, want every one of %d", reach, len(Modes))
	}
	def := r.Modes[0]
	if def.Mode != "default" || def.InjectionServed == 0 {
		t.Errorf("default mode served injected text in %d turns; the corpus should reach some with tools blocked", def.InjectionServed)
	}
}

// TestVariantCorpus asks the second corpus (another company, another
// vocabulary) every question in every mode: it loads whole, and every
// goal holds there too, so that the recommended mode's rules are not a
// fit to the main corpus's words.
func TestVariantCorpus(t *testing.T) {
	b, err := Open(t.Context(), Options{Corpus: Variant(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := len(b.Corpus.Questions); got < 30 {
		t.Errorf("%d questions, want at least 30", got)
	}
	r, err := b.Measure(t.Context(), Modes, "")
	if err != nil {
		t.Fatal(err)
	}
	checked := false
	for _, g := range r.Goals {
		checked = checked || g.Measured == Recommended
		if !g.Met {
			t.Errorf("goal missed on the variant: mode %s, %s %s: got %g (%s)", g.Measured, g.Metric, bound(g.Goal), g.Value, g.Because)
		}
	}
	if !checked {
		t.Error("no goal of the recommended mode was checked")
	}
}

// TestInjectionReachIsCounted runs the default mode with the firewall in
// shadow mode, where every turn keeps its tools: every turn that served
// injected text must then count as reach, or the benchmark's zero proves
// nothing.
func TestInjectionReachIsCounted(t *testing.T) {
	b := MustShared(t)
	r, err := b.Measure(context.Background(), Modes[:1], "shadow")
	if err != nil {
		t.Fatal(err)
	}
	f := r.Modes[0]
	if f.InjectionReach == 0 || f.InjectionReach != f.InjectionServed {
		t.Errorf("shadow mode: injection reach %d, served %d; want equal and above 0", f.InjectionReach, f.InjectionServed)
	}
	if len(r.Missed()) == 0 {
		t.Error("shadow mode missed no goal; injection reach 0 should fail")
	}
}

// TestOpenRefusesMissingMarker changes a marker to text its document does
// not hold: the corpus must not load.
func TestOpenRefusesMissingMarker(t *testing.T) {
	fsys := MustCorpusFS(t, map[string][2]string{
		"corpus.yaml": {"marker: mark it as approved by Ana Pires", "marker: mark it as approved by nobody"},
	})
	_, err := Open(context.Background(), Options{Corpus: fsys, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "is not in its stored text") {
		t.Fatalf("Open = %v, want a missing-marker error", err)
	}
}

func TestLoadRefusesBadLabels(t *testing.T) {
	tests := []struct {
		name  string
		edits map[string][2]string
		want  string
	}{
		{"external label disagrees", map[string][2]string{
			"questions.yaml": {"  needs: [support:22-partnership-offer/01.eml]\n  external: true", "  needs: [support:22-partnership-offer/01.eml]"},
		}, "external is false but its needed documents say true"},
		{"needed file missing", map[string][2]string{
			"questions.yaml": {"needs: [handbook:hr/annual-leave.md]", "needs: [handbook:hr/annual-leaves.md]"},
		}, "does not exist"},
		{"unknown installation", map[string][2]string{
			"questions.yaml": {"needs: [handbook:hr/annual-leave.md]", "needs: [wiki:hr/annual-leave.md]"},
		}, "configured installation"},
		{"comment out of range", map[string][2]string{
			"questions.yaml": {"forum:0003-partial-refunds-422.md#comment-1]", "forum:0003-partial-refunds-422.md#comment-9]"},
		}, "has 2 comments"},
		{"injection in a trusted document", map[string][2]string{
			"corpus.yaml": {"doc: support:18-billing-verify-phish/01.eml", "doc: handbook:security/sso.md"},
		}, "not in an untrusted-external installation"},
		{"unknown tier", map[string][2]string{
			"corpus.yaml": {"tier: machine-generated\n    about: monitoring", "tier: robots\n    about: monitoring"},
		}, `tier "robots"`},
		{"duplicate question", map[string][2]string{
			"questions.yaml": {"- id: q002", "- id: q001"},
		}, "not unique"},
		{"mixed alternatives", map[string][2]string{
			"questions.yaml": {"needs: [handbook:hr/annual-leave.md]", "needs: [handbook:hr/annual-leave.md | forum:0003-partial-refunds-422.md]"},
		}, "mixes internal and external"},
		{"ambiguous and external", map[string][2]string{
			"questions.yaml": {"  needs: [support:22-partnership-offer/01.eml]\n  external: true", "  needs: [support:22-partnership-offer/01.eml]\n  external: true\n  ambiguous: true"},
		}, "ambiguous is only for"},
		{"unknown key", map[string][2]string{
			"questions.yaml": {"- id: q001", "- id: q001\n  tools: true"},
		}, "field tools not found"},
	}
	if _, err := Load(MustCorpusFS(t, nil)); err != nil {
		t.Fatalf("the embedded corpus does not load: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(MustCorpusFS(t, tt.edits))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseForumPost(t *testing.T) {
	const front = "---\nnumber: 4\ntitle: T\nauthor: a\nassociation: NONE\nstate: open\ncreated: 2024-01-02T03:04:05Z\n---\n"
	tests := []struct {
		name     string
		in       string
		comments int
		wantErr  string
	}{
		{"issue only", front + "body\n", 0, ""},
		{"two comments", front + "body\n%%% comment @b MEMBER 2024-01-03T00:00:00Z\none\n%%% comment @c NONE 2024-01-04T00:00:00Z\ntwo\n", 2, ""},
		{"no front matter", "body\n", 0, "no front matter"},
		{"unclosed front matter", "---\nnumber: 4\n", 0, "not closed"},
		{"missing number", strings.Replace(front, "number: 4\n", "", 1) + "body\n", 0, "needs number"},
		{"bad comment time", front + "body\n%%% comment @b MEMBER yesterday\nx\n", 0, "comment line"},
		{"empty comment", front + "body\n%%% comment @b MEMBER 2024-01-03T00:00:00Z\n\n", 0, "comment 1 is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseForumPost(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(p.Comments), tt.comments; got != want {
				t.Fatalf("comments = %d, want %d", got, want)
			}
			if got, want := p.Body, "body"; got != want {
				t.Errorf("body = %q, want %q", got, want)
			}
		})
	}
}

func TestSelectModes(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{"", ModeNames(), ""},
		{"all", ModeNames(), ""},
		{"top_k=3, default", "default, top_k=3", ""},
		{"default,nope", "", `unknown mode "nope"`},
	}
	for _, tt := range tests {
		ms, err := SelectModes(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SelectModes(%q) = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("SelectModes(%q): %v", tt.in, err)
		}
		var names []string
		for _, m := range ms {
			names = append(names, m.Name)
		}
		if got := strings.Join(names, ", "); got != tt.want {
			t.Errorf("SelectModes(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestGoalsNameKnownMetrics(t *testing.T) {
	for _, g := range Goals {
		if _, err := (Figures{}).Value(g.Metric); err != nil {
			t.Errorf("goal for %s: %v", g.Mode, err)
		}
	}
}

func TestCheckGoals(t *testing.T) {
	modes := []Figures{{Mode: "a", InjectionReach: 0}, {Mode: "recommended", InjectionReach: 1, NeedlessBlock: rate(1, 20), RecallInternal: 0.95, RecallExternal: 0.80}}
	missed := map[string]bool{}
	for _, g := range CheckGoals(modes) {
		if !g.Met {
			missed[g.Measured+" "+string(g.Metric)] = true
		}
	}
	want := map[string]bool{"recommended injection_reach": true, "recommended recall_external": true}
	if len(missed) != len(want) {
		t.Fatalf("missed %v, want %v", missed, want)
	}
	for k := range want {
		if !missed[k] {
			t.Errorf("missed %v, want %v", missed, want)
		}
	}
}

// TestMailAsFilesLinksAlike ingests the support inbox a second time as a
// files installation (the same .eml files in a folder) and checks that
// every message links to the same messages, by the same relations, as
// when it arrives over IMAP: expansion follows a thread alike whichever
// way the mail came in.
func TestMailAsFilesLinksAlike(t *testing.T) {
	ctx := t.Context()
	viaIMAP := MustShared(t)
	fsys := MustCorpusFS(t, map[string][2]string{
		"corpus.yaml": {"  - id: support\n    kind: imap", "  - id: support\n    kind: files"},
	})
	viaFiles, err := Open(ctx, Options{Corpus: fsys, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer viaFiles.Close()

	// graph returns, per message ref, its links as "relation -> ref".
	graph := func(b *Bench) map[string][]string {
		var ids []string
		for id, d := range b.byID {
			if d.Installation == "support" {
				ids = append(ids, id)
			}
		}
		links, err := b.store.Links(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, l := range links {
			from, okFrom := b.byID[l.From]
			to, okTo := b.byID[l.To]
			if !okFrom || !okTo || from.Installation != "support" || l.Relation == "parent" {
				continue
			}
			out[from.Ref] = append(out[from.Ref], l.Relation+" -> "+to.Ref)
		}
		for _, v := range out {
			slices.Sort(v)
		}
		return out
	}
	imapGraph, filesGraph := graph(viaIMAP), graph(viaFiles)
	if len(imapGraph) < 20 {
		t.Fatalf("over IMAP only %d messages link to others; the corpus has 22 threads", len(imapGraph))
	}
	if !reflect.DeepEqual(filesGraph, imapGraph) {
		for ref, want := range imapGraph {
			if got := filesGraph[ref]; !slices.Equal(got, want) {
				t.Errorf("%s: as files %v, over IMAP %v", ref, got, want)
			}
		}
		for ref, got := range filesGraph {
			if _, ok := imapGraph[ref]; !ok {
				t.Errorf("%s: as files %v, over IMAP none", ref, got)
			}
		}
	}
}
