package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

const imapInst = `installations:
  - id: support
    kind: imap
    tier: untrusted-external
    imap: {addr: "127.0.0.1:993", username: support, password_env: P}
`

// TestConfigVerifiedSenders: the block reaches the installation's
// declaration, normalised; a bad one is refused at its line.
func TestConfigVerifiedSenders(t *testing.T) {
	p := writeConfig(t, imapInst+"    verified_senders: {authserv_id: MX.Example.com, domains: [Example.com., eu.example.com], tier: trusted-internal}\n")
	cfg, err := Load(p, registry())
	if err != nil {
		t.Fatal(err)
	}
	vs := cfg.Installations[0].Installation().VerifiedSenders
	if vs == nil || vs.AuthservID != "mx.example.com" || !slices.Equal(vs.Domains, []string{"example.com", "eu.example.com"}) || vs.Tier != ingestd.TierTrustedInternal {
		t.Fatalf("VerifiedSenders = %+v", vs)
	}
	for _, tt := range []struct{ name, block, want string }{
		{"no authserv_id", "{domains: [example.com], tier: trusted-internal}", "authserv_id"},
		{"no domains", "{authserv_id: mx.example.com, tier: trusted-internal}", "domains"},
		{"bad tier", "{authserv_id: mx.example.com, domains: [example.com], tier: internal}", "not one of"},
		{"an address, not a domain", "{authserv_id: mx.example.com, domains: [ann@example.com], tier: trusted-internal}", "not a domain"},
		{"unknown key", "{authserv_id: mx.example.com, domains: [example.com], tier: trusted-internal, dkim_only: true}", "dkim_only"},
	} {
		p := writeConfig(t, imapInst+"    verified_senders: "+tt.block+"\n")
		_, err := Load(p, registry())
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), ":6:") {
			t.Errorf("%s: Load = %v, want an error at line 6 naming %q", tt.name, err, tt.want)
		}
	}
	// A kind that reports no sender facts may not declare it.
	p = writeConfig(t, "installations:\n  - id: repo\n    kind: github\n    tier: untrusted-external\n    github: {repos: [a/b]}\n    verified_senders: {authserv_id: mx.example.com, domains: [example.com], tier: trusted-internal}\n")
	if _, err := Load(p, registry()); err == nil || !strings.Contains(err.Error(), "does not report verified senders") {
		t.Errorf("github with verified_senders: %v", err)
	}
}
