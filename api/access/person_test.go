package access_test

import (
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
