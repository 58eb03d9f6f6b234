package github

import (
	"context"

	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
)

// visibility is the repository's visibility, from its private flag when
// the API gave no visibility field.
func visibility(r *gh.Repository) string {
	if v := r.GetVisibility(); v != "" {
		return v
	}
	if r.GetPrivate() {
		return "private"
	}
	return "public"
}

// readersOf is who may read a repository's items: everyone for a public
// one; for a private or internal one nil, which leaves the readers the
// owner declared for the installation (unmapped when none: no person
// reads them). Mirroring a private repository's collaborators and
// teams is not built yet. state names the choice, for the cursor.
func readersOf(r repoCursor) (readers *ingestd.Readers, state string) {
	if r.Visibility == "public" {
		p := ingestd.Public()
		return &p, "public"
	}
	return nil, "declared"
}

// readersPass puts every item with the repository's readers.
type readersPass struct {
	ingestd.Pass
	readers *ingestd.Readers
}

func (p readersPass) Put(ctx context.Context, it ingestd.Item) error {
	it.Readers = p.readers
	return p.Pass.Put(ctx, it)
}
