package config

import (
	"strconv"
	"strings"
	"testing"
)

// TestConfigKeyGivenTwiceIsRefused: a key given twice anywhere in the
// file is refused before anything is decoded, naming file:line of both
// occurrences, whatever the block, the depth, the style (block or flow),
// the quoting, an alias or a merge key. "Last one wins" would let a
// trusted tier further down an installation silently override the
// untrusted one above it.
func TestConfigKeyGivenTwiceIsRefused(t *testing.T) {
	const files = "    files: {root: ./docs}\n"
	for _, tt := range []struct {
		name   string
		body   string
		first  int // the line of the first occurrence
		second int // the line of the one refused
		key    string
	}{
		{name: "installation tier, block style", key: "tier", first: 4, second: 6,
			body: "installations:\n  - id: support\n    kind: files\n    tier: untrusted-external\n" + files + "    tier: trusted-internal\n"},
		{name: "installation tier, flow style", key: "tier", first: 2, second: 2,
			body: "installations:\n  - {id: support, kind: files, tier: untrusted-external, files: {root: ./docs}, tier: trusted-internal}\n"},
		{name: "differently quoted", key: "tier", first: 4, second: 5,
			body: "installations:\n  - id: support\n    kind: files\n    tier: untrusted-external\n    \"tier\": trusted-internal\n" + files},
		{name: "single-quoted and escaped", key: "tier", first: 4, second: 5,
			body: "installations:\n  - id: support\n    kind: files\n    'tier': untrusted-external\n    \"ti\\x65r\": trusted-internal\n" + files},
		{name: "explicit key syntax", key: "tier", first: 4, second: 5,
			body: "installations:\n  - id: support\n    kind: files\n    tier: untrusted-external\n    ? tier\n    : trusted-internal\n" + files},
		{name: "tagged key", key: "tier", first: 4, second: 5,
			body: "installations:\n  - id: support\n    kind: files\n    tier: untrusted-external\n    !!str tier: trusted-internal\n" + files},
		{name: "key through an alias", key: "tier", first: 4, second: 5,
			body: "installations:\n  - id: support\n    kind: files\n    &k tier: untrusted-external\n    *k : trusted-internal\n" + files},
		{name: "second top-level installations", key: "installations", first: 1, second: 4,
			body: "installations:\n  - {id: support, kind: files, tier: untrusted-external, files: {root: ./docs}}\nfirewall: {mode: enforce}\ninstallations:\n  - {id: support, kind: files, tier: trusted-internal, files: {root: ./docs}}\n"},
		{name: "top-level scalar", key: "listen", first: 1, second: 2,
			body: "listen: 127.0.0.1:7700\nlisten: 0.0.0.0:7700\n"},
		{name: "nested under tls", key: "cert", first: 3, second: 4,
			body: "data_dir: ./data\ntls:\n  cert: a.pem\n  cert: b.pem\n  key: k.pem\n"},
		{name: "nested under firewall, flow", key: "mode", first: 1, second: 1,
			body: "firewall: {mode: enforce, mode: off}\n"},
		{name: "in the imap block", key: "tls", first: 6, second: 7,
			body: "installations:\n  - id: support\n    kind: imap\n    tier: untrusted-external\n    imap:\n      tls: implicit\n      tls: none\n      addr: 127.0.0.1:1\n      username: u\n      password_env: P\n"},
		{name: "deep in the imap block", key: "max_bytes", first: 7, second: 8,
			body: "installations:\n  - id: support\n    kind: imap\n    tier: untrusted-external\n    imap:\n      extract:\n        max_bytes: 1\n        max_bytes: 2\n"},
		{name: "in a tier_by map", key: "OWNER", first: 5, second: 5,
			body: "installations:\n  - id: repo\n    kind: github\n    tier: untrusted-external\n    tier_by_author_association: {OWNER: trusted-internal, OWNER: untrusted-external}\n    github: {repos: [a/b]}\n"},
		{name: "in an auth token", key: "scopes", first: 3, second: 3,
			body: "auth:\n  tokens:\n    - {name: a, token_env: T, scopes: [retrieve], scopes: [admin]}\n"},
		{name: "in the anchored block an alias reuses", key: "root", first: 5, second: 5,
			body: "installations:\n  - id: a\n    kind: files\n    tier: trusted-internal\n    files: &f {root: ./docs, root: ./other}\n  - id: b\n    kind: files\n    tier: trusted-internal\n    files: *f\n"},
		{name: "merge key overridden after it", key: "tier", first: 1, second: 5,
			body: "common: &c {kind: files, tier: untrusted-external}\ninstallations:\n  - id: support\n    <<: *c\n    tier: trusted-internal\n" + files},
		{name: "merge key overridden before it", key: "tier", first: 4, second: 1,
			body: "common: &c {kind: files, tier: untrusted-external}\ninstallations:\n  - id: support\n    tier: trusted-internal\n    <<: *c\n" + files},
		{name: "two merged mappings with one key", key: "tier", first: 1, second: 2,
			body: "a: &a {tier: untrusted-external}\nb: &b {tier: trusted-internal}\ninstallations:\n  - id: support\n    kind: files\n    <<: [*a, *b]\n" + files},
		{name: "merge key in a merged mapping", key: "tier", first: 5, second: 1,
			body: "a: &a {tier: untrusted-external}\nb: &b {<<: *a, kind: files}\ninstallations:\n  - id: support\n    tier: trusted-internal\n    <<: *b\n" + files},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("ingestd.yaml", []byte(tt.body), registry())
			if err == nil {
				t.Fatal("loaded")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "ingestd.yaml:") {
				t.Errorf("error %q does not start with file:line", msg)
			}
			for _, want := range []string{
				"key \"" + tt.key + "\" is given twice",
				"first at ingestd.yaml:" + strconv.Itoa(tt.first),
				"again at ingestd.yaml:" + strconv.Itoa(tt.second),
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q\nlacks %q", msg, want)
				}
			}
		})
	}
}

// TestConfigMergeKeyWithoutOverride: a merge key that no other key of its
// mapping overrides is plain YAML and loads, also for an installation
// (decoded by hand) and through the strict blocks.
func TestConfigMergeKeyWithoutOverride(t *testing.T) {
	body := "installations:\n" +
		"  - id: handbook\n    kind: files\n    tier: &t trusted-internal\n    files: &f {root: ./docs}\n" +
		"  - &s {id: support, kind: files, tier: untrusted-external, files: {root: ./docs}}\n" +
		"  - <<: *s\n    id: support2\n" +
		"firewall: {<<: {mode: shadow}}\n"
	_, err := Parse("ingestd.yaml", []byte(body), registry())
	if err == nil || !strings.Contains(err.Error(), `key "id" is given twice`) {
		t.Fatalf("an id overriding a merged id: %v", err)
	}
	body = "installations:\n" +
		"  - id: handbook\n    kind: files\n    tier: trusted-internal\n    files: &f {root: ./docs}\n" +
		"  - <<: {kind: files, tier: untrusted-external}\n    id: support\n    files: *f\n" +
		"firewall: {<<: {mode: shadow}}\n"
	c, err := Parse("ingestd.yaml", []byte(body), registry())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(c.Installations), 2; got != want {
		t.Fatalf("%d installations, want %d", got, want)
	}
	if got, want := c.Installations[1].Tier, "untrusted-external"; got != want {
		t.Errorf("merged tier %q, want %q", got, want)
	}
	if got, want := c.Firewall.Mode, "shadow"; got != want {
		t.Errorf("merged firewall mode %q, want %q", got, want)
	}
	var fc struct {
		Root string `yaml:"root"`
	}
	if err := c.DecodeBlock(c.Installations[1], &fc); err != nil || fc.Root != "./docs" {
		t.Errorf("aliased block: root %q, %v", fc.Root, err)
	}
}

// TestConfigRefusesWhatItCannotRead: the other ways to say one thing
// twice or out of sight are refused too: a key in another case (keys are
// case-sensitive: Tier is no key of an installation), a second YAML
// document, a key that is not a name, an alias that loops, and an alias
// bomb.
func TestConfigRefusesWhatItCannotRead(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
	}{
		{name: "key in another case", want: `ingestd.yaml:5: installation "support": unknown key "Tier"`,
			body: "installations:\n  - id: support\n    kind: files\n    tier: untrusted-external\n    Tier: trusted-internal\n    files: {root: ./docs}\n"},
		{name: "strict block key in another case", want: `ingestd.yaml:1: firewall: unknown key "Mode"`,
			body: "firewall: {mode: enforce, Mode: off}\n"},
		{name: "second document", want: "ingestd.yaml:2: a second YAML document",
			body: "firewall: {mode: enforce}\n---\ninstallations:\n  - {id: support, kind: files, tier: trusted-internal, files: {root: ./docs}}\n"},
		{name: "key that is not a name", want: "ingestd.yaml:2: a key must be a name",
			body: "installations:\n  - {[id]: support, kind: files, tier: trusted-internal}\n"},
		{name: "merge of a scalar", want: "ingestd.yaml:2: the merge key \"<<\" takes a mapping",
			body: "installations:\n  - {<<: trusted-internal, id: support, kind: files, tier: trusted-internal}\n"},
		{name: "alias bomb", want: "aliases expand it to more than",
			body: "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nlisten_hosts: *g\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("ingestd.yaml", []byte(tt.body), registry())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant %q", err, tt.want)
			}
		})
	}
}
