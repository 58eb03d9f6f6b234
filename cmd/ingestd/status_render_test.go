package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/terminal"
)

// TestStatusShowsUnmapped: `ingestd status` says how many of an
// installation's documents no person may read, beside its count, and
// says nothing where none is unmapped.
func TestStatusShowsUnmapped(t *testing.T) {
	var out strings.Builder
	now := time.Now()
	err := renderStatus(terminal.New(&out), []ingestd.InstallationStatus{
		{ID: "support", Kind: "imap", Tier: "untrusted-external", Documents: 12, Unmapped: 3, Health: ingestd.Health{Status: ingestd.HealthPending}},
		{ID: "handbook", Kind: "files", Tier: "trusted-internal", Documents: 5, Health: ingestd.Health{Status: ingestd.HealthPending}},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "12 (3 unmapped)") || strings.Contains(lines[2], "unmapped") {
		t.Errorf("status:\n%s\nwant support's 12 (3 unmapped) and handbook's plain count", out.String())
	}
}
