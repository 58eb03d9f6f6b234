package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/web"
	"github.com/ingestd/ingestd/connectors/webhook"
)

// registry is the registry of every kind the daemon is built with (the
// command's list), so a block decodes here as the daemon decodes it.
func registry() *connectors.Registry {
	return connectors.NewRegistry(files.Kind, github.Kind, imap.Kind, web.Kind, webhook.Kind)
}

// writeConfig writes body as ingestd.yaml in a new folder beside an
// empty docs folder and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ingestd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
