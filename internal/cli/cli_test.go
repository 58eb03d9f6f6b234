package cli

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestParseFlags: flags stand before or after the arguments, "--" ends
// them, -h is a help request and a bad flag a usage mistake of the
// flag set's command.
func TestParseFlags(t *testing.T) {
	fs := flag.NewFlagSet("sync", flag.ContinueOnError)
	cfg := fs.String("config", "ingestd.yaml", "the configuration `file`")
	pos, err := ParseFlags(fs, []string{"support", "--config", "f.yaml", "--", "--not-a-flag"})
	if err != nil || *cfg != "f.yaml" || !slices.Equal(pos, []string{"support", "--not-a-flag"}) {
		t.Fatalf("pos %q, config %q, err %v", pos, *cfg, err)
	}
	var hr *HelpRequest
	if _, err := ParseFlags(fs, []string{"-h"}); !errors.As(err, &hr) {
		t.Fatalf("-h: %v, want a help request", err)
	}
	help := hr.Text([]Synopsis{{Name: "sync", Args: "INSTALLATION", What: "run one pass"}})
	if !strings.HasPrefix(help, "Usage: ingestd sync INSTALLATION\n\nRun one pass.\n") || !strings.Contains(help, "--config file") {
		t.Errorf("help:\n%s", help)
	}
	var ue *UsageError
	if _, err := ParseFlags(fs, []string{"--frob"}); !errors.As(err, &ue) || ue.Cmd != "sync" {
		t.Fatalf("--frob: %v, want a usage error of sync", err)
	}
}

func TestGroupUsageAndSplitList(t *testing.T) {
	syn := []Synopsis{{Name: "dlq list", Args: "[--json]"}, {Name: "dlq replay", Args: "ID|--all"}, {Name: "dlqx"}}
	if got := GroupUsage(syn, "dlq"); got != "  ingestd dlq list [--json]\n  ingestd dlq replay ID|--all\n" {
		t.Errorf("GroupUsage = %q", got)
	}
	if got := SplitList(" a, ,b,"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("SplitList = %q", got)
	}
}

// TestSynopsisLine: a synopsis names its program, ingestd unless it says
// another (ingestd-bench), and its group's usage lists it.
func TestSynopsisLine(t *testing.T) {
	syn := []Synopsis{{Name: "sync", Args: "INSTALLATION"}, {Prog: "ingestd-bench", Name: "store serve", Args: "--dir DIR"}}
	if got := syn[0].Line(); got != "ingestd sync INSTALLATION" {
		t.Errorf("line %q", got)
	}
	if got := GroupUsage(syn, "store"); got != "  ingestd-bench store serve --dir DIR\n" {
		t.Errorf("group usage %q", got)
	}
}
