package main

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
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
	cfg, err := LoadConfig(writeConfig(t, body), registry())
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
	g := cfg.groups()
	if r := g.Reader("user:alice@example.com"); !r.May(ingestd.ReadersOf("group:staff")) {
		t.Errorf("alice's reader %+v: want group:staff through group:hr", r)
	}
	tok := cfg.personToken(apiToken(), cfg.Auth.Tokens[0])
	if tok.User != "user:alice@example.com" || tok.ActForUsers || tok.Groups == nil {
		t.Errorf("alice's token = %+v", tok)
	}
	if tok := cfg.personToken(apiToken(), cfg.Auth.Tokens[1]); tok.User != "" || !tok.ActForUsers {
		t.Errorf("chat's token = %+v", tok)
	}
}

func TestConfigPeopleRefused(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"a token that says nothing", peopleInsts + "auth:\n  tokens:\n    - {name: chat, token_env: T, scopes: [retrieve]}\n",
			"must say whom it reads for"},
		{"user and act_for_users", peopleInsts + "auth:\n  tokens:\n    - {name: chat, token_env: T, scopes: [retrieve], user: a@x, act_for_users: true}\n",
			"exclude each other"},
		{"act_for_users and a signed person", peopleInsts + "auth:\n  tokens:\n    - {name: chat, token_env: T, scopes: [retrieve], act_for_users: true, assertion_key_env: K}\n",
			"exclude each other"},
		{"a user that is a group", peopleInsts + "auth:\n  tokens:\n    - {name: chat, token_env: T, scopes: [retrieve], user: 'group:hr'}\n",
			"not a user"},
		{"a bad principal", strings.Replace(peopleInsts, "[group:staff]", "[staff]", 1), "not user:<name> or group:<name>"},
		{"a bad glob", strings.Replace(peopleInsts, `"hr/*"`, `"hr/["`, 1), "not a path pattern"},
	} {
		_, err := LoadConfig(writeConfig(t, tt.body), registry())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: LoadConfig = %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
	// Without people configured, a token that says nothing is a service.
	if _, err := LoadConfig(writeConfig(t, "auth:\n  tokens:\n    - {name: chat, token_env: T, scopes: [retrieve]}\n"), registry()); err != nil {
		t.Errorf("a service token without people configured: %v", err)
	}
}

func apiToken() api.Token { return api.Token{Name: "t", Token: "x"} }
