package main

import (
	"strings"
	"testing"
)

// TestHelpNamesTheConfigVariable: the top-level help and every command's
// --config flag say that $INGESTD_CONFIG is read when --config is not
// given.
func TestHelpNamesTheConfigVariable(t *testing.T) {
	if _, out, _ := runCmd(t, "--help"); !strings.Contains(out, "$INGESTD_CONFIG") {
		t.Errorf("ingestd --help does not name $INGESTD_CONFIG:\n%s", out)
	}
	for _, cmd := range []string{"serve", "sync", "search", "check", "mcp"} {
		_, out, _ := runCmd(t, cmd, "--help")
		for line := range strings.Lines(out) {
			if strings.Contains(line, "--config") && strings.Contains(line, "configuration") && !strings.Contains(line, "$INGESTD_CONFIG") {
				t.Errorf("ingestd %s --help: %q does not name $INGESTD_CONFIG", cmd, strings.TrimSpace(line))
			}
		}
	}
}
