package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

// TestConfigReaderIndexes: store.reader_indexes names principals on the
// postgres store, each once, and is refused at its own line otherwise.
func TestConfigReaderIndexes(t *testing.T) {
	const pg = "store:\n  driver: postgres\n  url_env: PG\n  reader_indexes: [group:staff, everyone, alice@example.com]\n"
	c, err := Load(writeConfig(t, pg), registry())
	if err != nil {
		t.Fatal(err)
	}
	want := []ingestd.Principal{"group:staff", ingestd.Everyone, "user:alice@example.com"}
	if !slices.Equal(c.Store.ReaderIndex, want) {
		t.Fatalf("reader indexes %v, want %v", c.Store.ReaderIndex, want)
	}
	for _, tt := range []struct{ name, body, want string }{
		{"on sqlite", "store:\n  driver: sqlite\n  reader_indexes: [group:staff]\n", "ingestd.yaml:3: store: reader_indexes is for driver postgres"},
		{"a bad principal", strings.Replace(pg, "group:staff", "team:staff", 1), "ingestd.yaml:4: store: reader_indexes:"},
		{"named twice", strings.Replace(pg, "everyone", "group:staff", 1), "ingestd.yaml:4: store: reader_indexes names group:staff twice"},
	} {
		_, err := Load(writeConfig(t, tt.body), registry())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Load = %v, want %q", tt.name, err, tt.want)
		}
	}
}
