package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/connectors/imap"
)

// TestExtractBlocks: the extract: block of a files and an imap
// installation reaches the connector as written (a duration as "20s"),
// the keys it leaves out at the library's defaults.
func TestExtractBlocks(t *testing.T) {
	dir := t.TempDir()
	raw := "installations:\n" +
		"  - {id: h, kind: files, tier: trusted-internal, files: {root: ./docs, extract: {max_pages: 500, timeout: 20s}}}\n" +
		"  - {id: m, kind: imap, tier: untrusted-external, imap: {addr: 'h:1', username: u, password_env: P, extract: {max_decompressed_bytes: 1048576}}}\n"
	cfg, err := config.Parse(filepath.Join(dir, "ingestd.yaml"), []byte(raw), registry())
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]connectors.Connector{}
	for _, ic := range cfg.Installations {
		c, err := registry().Build(ic.Installation(), connectors.Settings{
			Decode:    func(v any) error { return cfg.DecodeBlock(ic, v) },
			LookupEnv: func(string) (string, bool) { return "secret", true },
			BaseDir:   dir,
		})
		if err != nil {
			t.Fatal(err)
		}
		built[ic.ID] = c
	}
	fx := built["h"].Source.(*files.Source).Config().Extract
	if fx.MaxPages != 500 || fx.Timeout != 20*time.Second || fx.MaxTextBytes != 8<<20 || fx.MaxDecompressedBytes != 256<<20 {
		t.Errorf("files extract = %+v", fx)
	}
	mx := built["m"].Source.(*imap.Source).Config().Extract
	if mx.MaxDecompressedBytes != 1<<20 || mx.MaxPages != 5000 || mx.Timeout != 30*time.Second {
		t.Errorf("imap extract = %+v", mx)
	}
}
