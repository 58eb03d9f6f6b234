package ingestd_test

import (
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
)

func TestParsePrincipal(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "user:alice@example.com", want: "user:alice@example.com"},
		{in: " group:hr ", want: "group:hr"},
		{in: "alice@example.com", want: "user:alice@example.com"},
		{in: "*", want: "*"},
		{in: "hr", wantErr: true},
		{in: "role:admin", wantErr: true},
		{in: "user:", wantErr: true},
		{in: "user:a b", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ingestd.ParsePrincipal(tt.in)
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("ParsePrincipal(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && ingestd.ErrorCode(err) != ingestd.EINVALID {
			t.Errorf("ParsePrincipal(%q): code %q, want EINVALID", tt.in, ingestd.ErrorCode(err))
		}
	}
}

func TestReadersIntersect(t *testing.T) {
	a, b, hr := ingestd.Principal("user:a@x"), ingestd.Principal("user:b@x"), ingestd.Principal("group:hr")
	tests := []struct {
		name       string
		own, paren ingestd.Readers
		want       ingestd.Readers
	}{
		{"both listed", ingestd.ReadersOf(a, hr), ingestd.ReadersOf(hr, b), ingestd.ReadersOf(hr)},
		{"public child", ingestd.Public(), ingestd.ReadersOf(a), ingestd.ReadersOf(a)},
		{"public parent", ingestd.ReadersOf(b), ingestd.Public(), ingestd.ReadersOf(b)},
		{"unmapped parent", ingestd.Public(), ingestd.Readers{}, ingestd.Readers{}},
		{"unmapped child", ingestd.Readers{}, ingestd.Public(), ingestd.Readers{}},
		{"disjoint", ingestd.ReadersOf(a), ingestd.ReadersOf(b), ingestd.ReadersOf()},
	}
	for _, tt := range tests {
		if got := tt.own.Intersect(tt.paren); !got.Equal(tt.want) || got.Mapped != tt.want.Mapped {
			t.Errorf("%s: %+v ∩ %+v = %+v, want %+v", tt.name, tt.own, tt.paren, got, tt.want)
		}
	}
}

func TestReaderMay(t *testing.T) {
	groups := ingestd.Groups{"group:hr": {"user:a@x"}, "group:staff": {"group:hr", "user:b@x"}}
	r := groups.Reader("user:a@x")
	if want := []ingestd.Principal{"*", "group:hr", "group:staff", "user:a@x"}; !slices.Equal(r.Principals, want) {
		t.Fatalf("principals of a = %q, want %q (nested groups)", r.Principals, want)
	}
	tests := []struct {
		name    string
		reader  *ingestd.Reader
		readers ingestd.Readers
		want    bool
	}{
		{"service view reads unmapped", nil, ingestd.Readers{}, true},
		{"a person never reads unmapped", r, ingestd.Readers{}, false},
		{"public", r, ingestd.Public(), true},
		{"by nested group", r, ingestd.ReadersOf("group:staff"), true},
		{"someone else's", r, ingestd.ReadersOf("user:b@x"), false},
		{"mapped to no one", r, ingestd.ReadersOf(), false},
	}
	for _, tt := range tests {
		if got := tt.reader.May(tt.readers); got != tt.want {
			t.Errorf("%s: May = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReadersEncode(t *testing.T) {
	for _, r := range []ingestd.Readers{{}, ingestd.ReadersOf(), ingestd.Public(), ingestd.ReadersOf("user:b@x", "group:hr", "user:b@x")} {
		s, ok := r.Encode()
		if got := ingestd.DecodeReaders(s, ok); !got.Equal(r) {
			t.Errorf("round trip of %+v = %+v (encoded %q, %v)", r, got, s, ok)
		}
	}
}
