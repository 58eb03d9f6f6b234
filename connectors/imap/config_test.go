package imap_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
)

func TestKind_Registers(t *testing.T) {
	r := connectors.NewRegistry(imapconn.Kind)
	for _, tier := range []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal} {
		if err := r.Check(ingestd.Installation{ID: "x", Kind: "imap", Tier: tier}); err != nil {
			t.Errorf("tier %s: %v", tier, err)
		}
	}
}

func TestNewSource_Config(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "SET" {
			return "pw", true
		}
		return "", false
	}
	base := imapconn.Config{Addr: "imap.example.com:993", Username: "u", PasswordEnv: "SET"}
	for _, tt := range []struct {
		name    string
		change  func(*imapconn.Config)
		wantErr string // a fragment of the EINVALID message; "" for success
	}{
		{name: "defaults", change: func(*imapconn.Config) {}},
		{name: "missing variable is named", change: func(c *imapconn.Config) { c.PasswordEnv = "UNSET_IMAP_PW" }, wantErr: "UNSET_IMAP_PW"},
		{name: "missing token variable is named", change: func(c *imapconn.Config) { c.PasswordEnv, c.OAuth2TokenEnv = "", "NO_TOKEN" }, wantErr: "oauth2_token_env: environment variable NO_TOKEN"},
		{name: "no secret", change: func(c *imapconn.Config) { c.PasswordEnv = "" }, wantErr: "password_env or oauth2_token_env"},
		{name: "both secrets", change: func(c *imapconn.Config) { c.OAuth2TokenEnv = "SET" }, wantErr: "only one"},
		{name: "tls none needs insecure", change: func(c *imapconn.Config) { c.TLS = "none" }, wantErr: "insecure: true"},
		{name: "tls none with insecure", change: func(c *imapconn.Config) { c.TLS, c.Insecure = "none", true }},
		{name: "unknown tls", change: func(c *imapconn.Config) { c.TLS = "ssl" }, wantErr: "not one of implicit"},
		{name: "no addr", change: func(c *imapconn.Config) { c.Addr = "" }, wantErr: "addr is required"},
		{name: "negative batch", change: func(c *imapconn.Config) { c.BatchSize = -1 }, wantErr: "batch_size"},
		{name: "negative max_attachments", change: func(c *imapconn.Config) { c.MaxAttachments = -1 }, wantErr: "max_attachments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.change(&cfg)
			s, err := imapconn.NewSource("x", cfg, &imapconn.Options{LookupEnv: env})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewSource: %v", err)
				}
				got := s.Config()
				if got.BatchSize != imapconn.DefaultBatchSize || len(got.Mailboxes) != 1 || got.Mailboxes[0] != "INBOX" || got.Timeout != imapconn.DefaultTimeout || got.MaxAttachments != 100 {
					t.Errorf("defaults not applied: %+v", got)
				}
				return
			}
			if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewSource = %v, want EINVALID containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMessageExternalID(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"<Abc.Def@Example.COM>", "<Abc.Def@example.com>"},
		{" abc@x ", "<abc@x>"},
		{"<a b@x>", "<ab@x>"},
		{"", ""},
		{"<>", ""},
	} {
		if got := imapconn.MessageExternalID(tt.in); got != tt.want {
			t.Errorf("MessageExternalID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
