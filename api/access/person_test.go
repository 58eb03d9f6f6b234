package access_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
)

func TestPrincipalReader(t *testing.T) {
	bound := &access.Principal{Name: "alice", User: "user:alice@x"}
	actFor := &access.Principal{Name: "chat", ActForUsers: true}
	service := &access.Principal{Name: "ops"}
	tests := []struct {
		name     string
		p        *access.Principal
		named    string
		wantUser ingestd.Principal // "" for the service view
		wantCode string
	}{
		{"bound", bound, "", "user:alice@x", ""},
		{"bound naming itself", bound, "alice@x", "user:alice@x", ""},
		{"bound naming another", bound, "user:bob@x", "", ingestd.EFORBIDDEN},
		{"acting for someone", actFor, "bob@x", "user:bob@x", ""},
		{"acting for no one", actFor, "", "", ingestd.EINVALID},
		{"acting for a group", actFor, "group:hr", "", ingestd.EINVALID},
		{"service", service, "", "", ""},
		{"service narrowed to a person", service, "user:bob@x", "user:bob@x", ""},
		{"operator", access.Operator(), "", "", ""},
	}
	for _, tt := range tests {
		r, err := tt.p.Reader(tt.named)
		if got := ingestd.ErrorCode(err); got != tt.wantCode {
			t.Errorf("%s: error %v, want code %q", tt.name, err, tt.wantCode)
			continue
		}
		switch {
		case err != nil:
		case tt.wantUser == "" && r != nil:
			t.Errorf("%s: reader %+v, want the service view", tt.name, r)
		case tt.wantUser != "" && (r == nil || r.User != tt.wantUser):
			t.Errorf("%s: reader %+v, want %s", tt.name, r, tt.wantUser)
		}
	}
}

// servedDocs serves the documents it holds, ENOTFOUND otherwise.
type servedDocs map[string]*ingestd.ServedDocument

func (d servedDocs) Document(ctx context.Context, id string) (*ingestd.ServedDocument, error) {
	if doc, ok := d[id]; ok {
		return doc, nil
	}
	return nil, ingestd.Errorf(ingestd.ENOTFOUND, "document %q not found", id)
}

// TestDocumentsHideFromPersons: a document its person may not read (an
// unmapped one included) reads exactly as a missing one; a token acting
// for people reads none; a service token reads every one.
func TestDocumentsHideFromPersons(t *testing.T) {
	docs := access.NewDocuments(servedDocs{
		"bobs":     {ID: "bobs", Installation: "mail", Readers: ingestd.ReadersOf("user:bob@x")},
		"unmapped": {ID: "unmapped", Installation: "mail"},
		"public":   {ID: "public", Installation: "mail", Readers: ingestd.Public()},
	})
	alice := &access.Principal{Name: "alice", Scopes: []string{access.ScopeRetrieve}, User: "user:alice@x"}
	actFor := &access.Principal{Name: "chat", Scopes: []string{access.ScopeRetrieve}, ActForUsers: true}
	service := &access.Principal{Name: "ops", Scopes: []string{access.ScopeRetrieve}}
	_, missing := docs.Document(access.NewContext(context.Background(), alice), "nope")
	for _, tt := range []struct {
		p      *access.Principal
		id     string
		served bool
	}{
		{alice, "bobs", false}, {alice, "unmapped", false}, {alice, "public", true},
		{actFor, "public", false},
		{service, "bobs", true}, {service, "unmapped", true},
	} {
		doc, err := docs.Document(access.NewContext(context.Background(), tt.p), tt.id)
		if tt.served {
			if err != nil || doc == nil {
				t.Errorf("%s reading %s: %v, want it served", tt.p.Name, tt.id, err)
			}
			continue
		}
		want := strings.Replace(missing.Error(), "nope", tt.id, 1)
		if err == nil || err.Error() != want || ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
			t.Errorf("%s reading %s: %v, want %q as for a missing id", tt.p.Name, tt.id, err, want)
		}
	}
}
