package main

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/config"
)

const peopleInsts = `installations:
  - id: handbook
    kind: files
    tier: trusted-internal
    files: {root: docs}
    readers: [group:staff]
    readers_by_path:
      - {glob: "hr/*", readers: [group:hr]}
  - id: web
    kind: url
    tier: untrusted-external
    url: {urls: ['https://example.com/']}
  - id: drop
    kind: webhook
    tier: machine-generated
    webhook: {secret_env: S}
groups:
  hr: [user:alice@example.com]
  staff: [group:hr, bob@example.com]
`

// TestConfigPeople: readers and readers_by_path reach the installation,
// a url installation is public unless it declares readers, another
// without readers is unmapped, groups and tokens reach the API's tokens.
func TestConfigPeople(t *testing.T) {
	body := peopleInsts + `auth:
  tokens:
    - {name: alice, token_env: T1, scopes: [retrieve], user: alice@example.com}
    - {name: chat, token_env: T2, scopes: [retrieve], act_for_users: true}
    - {name: ops, token_env: T3, scopes: [retrieve], service: true}
`
	cfg, err := config.Load(writeConfig(t, body), registry())
	if err != nil {
		t.Fatal(err)
	}
	hb, web, drop := cfg.Installations[0].Installation(), cfg.Installations[1].Installation(), cfg.Installations[2].Installation()
	if !hb.Readers.Equal(ingestd.ReadersOf("group:staff")) || len(hb.ReadersByPath) != 1 || hb.ReadersByPath[0].Glob != "hr/*" ||
		!hb.ReadersByPath[0].Readers.Equal(ingestd.ReadersOf("group:hr")) {
		t.Errorf("handbook readers = %+v by path %+v", hb.Readers, hb.ReadersByPath)
	}
	if !web.Readers.IsPublic() {
		t.Errorf("url readers = %+v, want public", web.Readers)
	}
	if drop.Readers.Mapped {
		t.Errorf("webhook without readers = %+v, want unmapped", drop.Readers)
	}
	g := cfg.Membership()
	if r := g.Reader("user:alice@example.com"); !r.May(ingestd.ReadersOf("group:staff")) {
		t.Errorf("alice's reader %+v: want group:staff through group:hr", r)
	}
	tok := personToken(cfg, apiToken(), cfg.Auth.Tokens[0])
	if tok.User != "user:alice@example.com" || tok.ActForUsers || tok.Groups == nil {
		t.Errorf("alice's token = %+v", tok)
	}
	if tok := personToken(cfg, apiToken(), cfg.Auth.Tokens[1]); tok.User != "" || !tok.ActForUsers {
		t.Errorf("chat's token = %+v", tok)
	}
}

func apiToken() api.Token { return api.Token{Name: "t", Token: "x"} }
