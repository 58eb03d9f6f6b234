package config

import (
	"strings"
	"testing"
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
		_, err := Load(writeConfig(t, tt.body), registry())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Load = %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
	// Without people configured, a token that says nothing is a service.
	if _, err := Load(writeConfig(t, "auth:\n  tokens:\n    - {name: chat, token_env: T, scopes: [retrieve]}\n"), registry()); err != nil {
		t.Errorf("a service token without people configured: %v", err)
	}
}
