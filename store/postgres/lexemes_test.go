package postgres

import (
	"regexp"
	"slices"
	"testing"

	"github.com/ingestd/ingestd/internal/lexnorm"
)

// The word groups of migration 0007 are lexnorm's: Postgres matches a query
// word to the others of its group as the SQLite text index and the lexical
// embedder fold them. A change to lexnorm's tables needs a migration that
// refills lexeme_alternatives.
func TestLexemeAlternativesAreLexnormGroups(t *testing.T) {
	b, err := migrationFiles.ReadFile("migrations/0007_lexeme_alternatives.sql")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, m := range regexp.MustCompile(`\((\d+), '([^']*)'\)`).FindAllStringSubmatch(string(b), -1) {
		if len(got) == 0 || m[1] != got[len(got)-1][0] {
			got = append(got, []string{m[1]})
		}
		got[len(got)-1] = append(got[len(got)-1], m[2])
	}
	want := lexnorm.Groups()
	if len(got) != len(want) {
		t.Fatalf("migration has %d groups, lexnorm %d", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i][1:], want[i]) {
			t.Errorf("group %s: migration %v, lexnorm %v", got[i][0], got[i][1:], want[i])
		}
	}
}
