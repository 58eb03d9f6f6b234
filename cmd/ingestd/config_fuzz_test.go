package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/provenance"
)

// FuzzConfig feeds arbitrary YAML to parseConfig. It must never panic; a
// configuration it accepts has an id, a registered kind and a valid tier on
// every installation, and every tier_by_ rule names a valid tier. An
// accepted installation is then built by its connector (with every secret
// variable set), which must not panic either. Seeds are the example
// configurations, testdata/fuzz/FuzzConfig holds found regressions.
func FuzzConfig(f *testing.F) {
	for _, p := range []string{"../../examples/quickstart/ingestd.yaml", "../../examples/compose/ingestd.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
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
		cfg, err := parseConfig(filepath.Join(dir, "ingestd.yaml"), raw, reg)
		if err != nil {
			if _, ok := err.(*configError); !ok {
				t.Fatalf("error %T is not a configError: %v", err, err)
			}
			return
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
				Decode:    func(v any) error { return cfg.decodeBlock(ic, v) },
				LookupEnv: func(string) (string, bool) { return "whsec_c2VjcmV0", true },
				BaseDir:   dir,
				DataDir:   filepath.Join(dir, "data"),
				Logger:    slog.New(slog.DiscardHandler),
				Now:       time.Now,
			})
		}
	})
}
