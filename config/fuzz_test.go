package config

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/provenance"
)

// FuzzConfig feeds arbitrary YAML to parseConfig. It must never panic; a
// configuration it accepts has an id, a registered kind and a valid tier on
// every installation, and every tier_by_ rule names a valid tier; written
// back out (renderConfig) it is accepted again and means the same. An
// accepted installation is then built by its connector (with every secret
// variable set), which must not panic either. Seeds are the example
// configurations, every connector block with every key (fuzzConfigBlocks),
// and edge cases; testdata/fuzz/FuzzConfig holds found regressions.
func FuzzConfig(f *testing.F) {
	examples, err := filepath.Glob("../examples/*/ingestd.yaml")
	if err != nil || len(examples) == 0 {
		f.Fatalf("no example configurations: %v", err)
	}
	for _, p := range examples {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	all := "installations:\n"
	for _, b := range fuzzConfigBlocks {
		f.Add([]byte("installations:\n" + b))
		all += b
	}
	f.Add([]byte(fuzzConfigTop + all))
	for _, s := range []string{
		"installations:\n  - {id: a, kind: files, tier: trusted-internal, files: {root: .}}\n",
		"installations:\n  - {id: a, kind: files, tier: TRUSTED-INTERNAL}\n",
		"installations:\n  - {id: a, kind: webhook, tier: untrusted-external, tier_by_author_association: {OWNER: trusted-internal}, webhook: {secret_env: S}}\n",
		"installations:\n  - {id: a, kind: imap, tier: untrusted-external, interval: 1m, imap: {addr: 'h:1', username: u, password_env: P, tls: none, insecure: true}}\n",
		"installations:\n  - &x {id: a, kind: files, tier: machine-generated}\n  - *x\n",
		"installations:\n  - {id: a, kind: url, tier: trusted-internal, url: {urls: ['https://example.com/']}}\n",
		"installations:\n  - {id: a, kind: github, tier: untrusted-external, github: {repos: [o/r], token_env: T}}\n",
		"listen: 0.0.0.0:1\nauth: {allow_unauthenticated: true}\nfirewall: {mode: shadow}\n",
		"embedder: {kind: openai, base_url: 'http://127.0.0.1:1/v1', model: m, dims: 8}\n",
		"a: &a [*a]\n",
		"installations: !!map {}\n",
	} {
		f.Add([]byte(s))
	}
	reg := registry()
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		cfg, err := Parse(filepath.Join(dir, "ingestd.yaml"), raw, reg)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not a Error: %v", err, err)
			}
			return
		}
		out := renderConfig(t, cfg)
		again, err := Parse(filepath.Join(dir, "again.yaml"), out, reg)
		if err != nil {
			t.Fatalf("an accepted configuration, written back out, is refused: %v\n%s", err, out)
		}
		if out2 := renderConfig(t, again); !bytes.Equal(out, out2) {
			t.Fatalf("an accepted configuration changes meaning when written back out:\n%s\nreads back as\n%s", out, out2)
		}
		for _, ic := range cfg.Installations {
			if ic.ID == "" {
				t.Fatalf("accepted an installation without an id: %+v", ic)
			}
			if _, ok := reg.Kind(ic.Kind); !ok {
				t.Fatalf("installation %q: accepted unknown kind %q", ic.ID, ic.Kind)
			}
			if !provenance.Valid(ingestd.Tier(ic.Tier)) {
				t.Fatalf("installation %q: accepted tier %q", ic.ID, ic.Tier)
			}
			for key, m := range ic.TierByMeta {
				for v, tier := range m {
					if !provenance.Valid(tier) {
						t.Fatalf("installation %q: tier_by_%s: %s: accepted tier %q", ic.ID, key, v, tier)
					}
				}
			}
			_, _ = reg.Build(ic.Installation(), connectors.Settings{
				Decode:    func(v any) error { return cfg.DecodeBlock(ic, v) },
				LookupEnv: func(string) (string, bool) { return "whsec_c2VjcmV0", true },
				BaseDir:   dir,
				DataDir:   filepath.Join(dir, "data"),
				Logger:    slog.New(slog.DiscardHandler),
				Now:       time.Now,
			})
		}
	})
}

// fuzzConfigTop sets every top-level key.
const fuzzConfigTop = `data_dir: ./var
listen: 127.0.0.1:7701
store: {driver: postgres, url_env: PG, max_conns: 4, statement_timeout: 5s, ef_search: 200, text_candidates: 500, hnsw_m: 24, hnsw_ef_construction: 80}
nats: {url: "nats://a:4222,nats://b:4222", creds_env: C, replicas: 3, max_deliver: 5, concurrency: 2, ack_wait: 1m, max_msg_size: 1048576, max_bytes: 1073741824, lease_ttl: 30s}
embedder: {kind: openai, base_url: "http://127.0.0.1:1/v1", model: m, api_key_env: K, dims: 8, batch_size: 16, timeout: 10s}
firewall: {mode: shadow}
auth: {tokens: [{name: a, token_env: T, scopes: [retrieve, admin]}], allow_unauthenticated: false}
tls: {cert: c.pem, key: k.pem}
chunking: {max_tokens: 300, overlap_tokens: -1}
log: {format: json, level: debug}
`

// fuzzConfigBlocks are installations of every connector kind with every
// key of its block (README.md, "Connector kinds").
var fuzzConfigBlocks = []string{
	`  - id: handbook
    kind: files
    tier: trusted-internal
    interval: 10m
    files: {root: ./handbook, include: ["**/*.md", "*.txt", "**/*.pdf"], exclude: [drafts/**], max_file_bytes: 1048576, max_attachments: 20,
            extract: {max_pages: 500, max_text_bytes: 4194304, max_decompressed_bytes: 67108864, timeout: 20s}}
`,
	`  - id: support
    kind: imap
    tier: untrusted-external
    interval: 1m
    imap: {addr: "imap.example.com:993", username: support@example.com, password_env: P, mailboxes: [INBOX, Support],
           exclude_mailboxes: [Trash], tls: implicit, insecure: false, batch_size: 50, since: 720h, max_per_pass: 500,
           max_message_bytes: 26214400, max_attachment_bytes: 10485760, max_attachments: 50, skip_auto_generated: true, idle: true, timeout: 30s,
           extract: {max_pages: 200, timeout: 10s}}
`,
	`  - id: oauth-mail
    kind: imap
    tier: trusted-internal
    imap: {addr: "127.0.0.1:143", username: u, oauth2_token_env: O, tls: none, insecure: true}
`,
	`  - id: public-repo
    kind: github
    tier: untrusted-external
    tier_by_author_association: {OWNER: trusted-internal, MEMBER: trusted-internal, COLLABORATOR: machine-generated}
    github: {repos: [example/app, example/lib], org: example, token_env: GITHUB_TOKEN, base_url: "https://ghe.example.com/api/v3/",
             include: {issues: true, pulls: true, issue_comments: false, review_comments: true, docs: true},
             docs_paths: [README.md, "docs/**"], per_page: 50, full_sync_every: 24h}
`,
	`  - id: app-repo
    kind: github
    tier: trusted-internal
    github: {repos: [o/r], app: {app_id: 1, installation_id: 2, private_key_env: KEY}}
`,
	`  - id: gh-hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: github, secret_env: S, secrets_env: [S1, S2], tolerance: 5m, docs_paths: ["docs/**"], sync_installation: public-repo}
`,
	`  - id: std-hooks
    kind: webhook
    tier: machine-generated
    tier_by_author: {alice: trusted-internal}
    webhook: {flavor: standard, secret_env: S, format: markdown,
              fields: {id: /data/id, title: /data/title, body: /data/body, url: /data/url, author: /data/author, deleted: /data/deleted}}
`,
	`  - id: docs-site
    kind: url
    tier: trusted-internal
    url: {urls: ["https://docs.example.com/"], sitemap: "https://docs.example.com/sitemap.xml",
          crawl: {depth: 2, max_pages: 500, include: [/docs/], exclude: ["/docs/old/**"]}, allow_private_networks: false,
          rate_per_host: 2/s, user_agent: "+https://example.com/bot", timeout: 30s, connect_timeout: 5s, max_bytes: 10485760, tombstone_after: 3,
          extract: {max_pages: 1000, max_decompressed_bytes: 134217728}}
`,
}

// renderConfig writes an accepted configuration back out as YAML: every
// key with a yaml tag, durations as Go durations, each installation's
// common keys and its block (aliases resolved). It fails the test on an
// encoding error.
func renderConfig(tb testing.TB, c *Config) []byte {
	tb.Helper()
	top := map[string]any{}
	v := reflect.ValueOf(*c)
	for i := range v.NumField() {
		ft := v.Type().Field(i)
		if name, _, _ := strings.Cut(ft.Tag.Get("yaml"), ","); name != "" && name != "installations" {
			top[name] = yamlValue(v.Field(i))
		}
	}
	var insts []any
	for _, ic := range c.Installations {
		m := map[string]any{"id": ic.ID, "kind": ic.Kind, "tier": ic.Tier}
		if ic.Interval != 0 {
			m["interval"] = ic.Interval.String()
		}
		for key, rules := range ic.TierByMeta {
			m["tier_by_"+key] = rules
		}
		if ic.block != nil {
			var block any
			if err := ic.block.Decode(&block); err != nil {
				tb.Fatalf("installation %q: its accepted block does not decode: %v", ic.ID, err)
			}
			m[ic.Kind] = block
		}
		insts = append(insts, m)
	}
	if insts != nil {
		top["installations"] = insts
	}
	b, err := yaml.Marshal(top)
	if err != nil {
		tb.Fatalf("render configuration: %v", err)
	}
	return b
}

// yamlValue converts a configuration value to what yaml.Marshal writes as
// the configuration file spells it: structs by their yaml tags, Duration
// as "1m30s".
func yamlValue(v reflect.Value) any {
	if d, ok := v.Interface().(Duration); ok {
		return time.Duration(d).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		m := map[string]any{}
		for i := range v.NumField() {
			ft := v.Type().Field(i)
			if name, _, _ := strings.Cut(ft.Tag.Get("yaml"), ","); ft.IsExported() && name != "" && name != "-" {
				m[name] = yamlValue(v.Field(i))
			}
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = yamlValue(v.Index(i))
		}
		return out
	}
	return v.Interface()
}
