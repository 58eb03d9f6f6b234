package access_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
)

func TestNarrow(t *testing.T) {
	handbook := &access.Principal{Name: "desk", Scopes: []string{access.ScopeRetrieve}, Installations: []string{"handbook", "wiki"}}
	tests := []struct {
		name      string
		p         *access.Principal
		requested []string
		want      []string
		wantCode  string
	}{
		{name: "unlimited keeps the request", p: access.Operator(), requested: []string{"support"}, want: []string{"support"}},
		{name: "unlimited keeps none", p: access.Operator(), requested: nil, want: nil},
		{name: "none named is narrowed to the limit", p: handbook, requested: nil, want: []string{"handbook", "wiki"}},
		{name: "blank names count as none", p: handbook, requested: []string{" ", ""}, want: []string{"handbook", "wiki"}},
		{name: "within the limit", p: handbook, requested: []string{"wiki"}, want: []string{"wiki"}},
		{name: "outside is refused, not narrowed", p: handbook, requested: []string{"wiki", "support"}, wantCode: ingestd.EFORBIDDEN},
		{name: "an empty limit sees nothing", p: &access.Principal{Installations: []string{}}, requested: nil, wantCode: ingestd.EFORBIDDEN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.Narrow(tt.requested)
			if code := ingestd.ErrorCode(err); err != nil && code != tt.wantCode || err == nil && tt.wantCode != "" {
				t.Fatalf("Narrow(%q) error %v, want code %q", tt.requested, err, tt.wantCode)
			}
			if err == nil && !slices.Equal(got, tt.want) {
				t.Errorf("Narrow(%q) = %q, want %q", tt.requested, got, tt.want)
			}
		})
	}
}

func TestRequire(t *testing.T) {
	ctx := context.Background()
	if _, err := access.Require(ctx, access.ScopeRetrieve); ingestd.ErrorCode(err) != ingestd.EUNAUTHORIZED {
		t.Errorf("no principal: %v, want unauthorized (fail closed)", err)
	}
	ops := access.NewContext(ctx, &access.Principal{Name: "ops", Scopes: []string{access.ScopeAdmin}, Installations: []string{"handbook"}})
	if _, err := access.Require(ops, access.ScopeRetrieve); ingestd.ErrorCode(err) != ingestd.EFORBIDDEN {
		t.Errorf("missing scope: %v, want forbidden", err)
	}
	if _, err := access.RequireInstallation(ops, access.ScopeAdmin, "support"); ingestd.ErrorCode(err) != ingestd.EFORBIDDEN {
		t.Errorf("sync outside the limit: %v, want forbidden", err)
	}
	if _, err := access.RequireInstallation(ops, access.ScopeAdmin, "handbook"); err != nil {
		t.Errorf("sync within the limit: %v", err)
	}
}
