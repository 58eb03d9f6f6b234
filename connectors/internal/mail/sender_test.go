package mail

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
)

// TestSenderFacts reads each fixture of testdata/sender with the boundary
// mx.example.com and checks what it reports. Each attack variant names
// the rule that keeps it unverified.
func TestSenderFacts(t *testing.T) {
	tests := []struct {
		file     string
		verified string // the domain reported verified, "" for none
		derived  string
	}{
		{file: "dmarc-pass.eml", verified: "example.com"},
		{file: "dkim-aligned.eml", verified: "example.com"}, // authserv-id and header.d compared without case
		{file: "quoted-reply.eml", verified: "example.com"}, // quoted history is cut by the chunker, not here
		{file: "forged-from.eml"},                           // the boundary says dmarc=fail: a DKIM pass for another domain does not help
		{file: "foreign-authserv.eml"},                      // only the boundary's authserv-id counts
		{file: "above-boundary.eml"},                        // a pass above the boundary's field, of another authserv-id, is ignored
		{file: "forged-below-boundary.eml"},                 // only the topmost field of the boundary counts
		{file: "dkim-other-domain.eml"},                     // DKIM must align with the From domain
		{file: "dmarc-other-domain.eml"},                    // DMARC's header.from must be the From domain
		{file: "two-from.eml"},
		{file: "dmarc-fail-dkim-pass.eml"},                                                   // the boundary's own DMARC failure wins over a DKIM pass                                                               // no one From address
		{file: "unparseable-boundary.eml"},                                                   // the topmost boundary field unreadable: not the one below
		{file: "attached-message.eml", verified: "example.com", derived: "attached_message"}, // its inner header is never read
		{file: "forwarded-inline.eml", verified: "example.com", derived: "forwarded"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "sender", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(raw, nil)
			if err != nil {
				t.Fatal(err)
			}
			facts := SenderFacts(m, "mx.example.com")
			if got := facts[ingestd.MetaSenderVerifiedDomain]; got != tt.verified {
				t.Errorf("verified domain %q, want %q (facts %v)", got, tt.verified, facts)
			}
			if tt.verified != "" {
				if got := facts[ingestd.MetaSenderVerifiedBy]; got != "mx.example.com" {
					t.Errorf("verified by %q, want mx.example.com", got)
				}
			}
			if got := facts[ingestd.MetaDerivedContent]; got != tt.derived {
				t.Errorf("derived %q, want %q", got, tt.derived)
			}
			// Another installation, another boundary: nothing verified.
			if got := SenderFacts(m, "mx.other.test")[ingestd.MetaSenderVerifiedDomain]; got != "" {
				t.Errorf("verified %q under another authserv-id", got)
			}
			if SenderFacts(m, "") != nil {
				t.Error("facts reported without an authserv-id configured")
			}
		})
	}
}

func TestParseAuthResults(t *testing.T) {
	v := ` mx.example.com 1 (rspamd 3.8);
	 dkim = pass (good signature) header.d="Example.COM." header.s=s1;
	 dmarc=pass (p=reject; sp=none) header.from=example.com ; none`
	if got := servID(v); got != "mx.example.com" {
		t.Errorf("servID = %q", got)
	}
	rs, ok := parseAuthResults(v)
	if !ok || len(rs) != 2 {
		t.Fatalf("parseAuthResults = %+v, %v", rs, ok)
	}
	if rs[0].method != "dkim" || rs[0].result != "pass" || rs[0].props["header.d"] != "example.com" {
		t.Errorf("dkim = %+v", rs[0])
	}
	if rs[1].method != "dmarc" || rs[1].props["header.from"] != "example.com" {
		t.Errorf("dmarc = %+v", rs[1])
	}
	if got := servID(`"mx.example.com"; none`); got != "mx.example.com" {
		t.Errorf("quoted servID = %q", got)
	}
	if got := servID(`(comment; with semicolon) mx.example.com; dkim=pass`); got != "mx.example.com" {
		t.Errorf("servID after a comment = %q", got)
	}
}
