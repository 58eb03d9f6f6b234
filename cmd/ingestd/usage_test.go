package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHelpListsEveryFlag: `ingestd COMMAND --help` (and -h, and `ingestd
// help COMMAND`) prints the command's synopsis and every flag with its
// meaning on stdout and exits 0; the synopsis names every flag but
// --config, and no flag the command lacks.
func TestHelpListsEveryFlag(t *testing.T) {
	flagLine := regexp.MustCompile(`^  --([a-z-]+)(?: \S+)?\s{2,}(\S.*)$`)
	for _, s := range synopses {
		t.Run(s.Name, func(t *testing.T) {
			name := strings.Fields(s.Name)
			var outs []string
			for _, args := range [][]string{
				append(slices.Clone(name), "--help"),
				append(slices.Clone(name), "-h"),
				append([]string{"help"}, name...),
			} {
				code, out, errs := runCmd(t, args...)
				if code != 0 || errs != "" {
					t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
				}
				outs = append(outs, out)
			}
			if outs[1] != outs[0] || outs[2] != outs[0] {
				t.Errorf("--help, -h and help differ:\n%s\n---\n%s\n---\n%s", outs[0], outs[1], outs[2])
			}
			out := outs[0]
			if !strings.HasPrefix(out, "Usage: "+s.Line()+"\n") {
				t.Fatalf("help does not start with the synopsis %q:\n%s", s.Line(), out)
			}
			var flags []string
			for _, line := range strings.Split(out, "\n") {
				if m := flagLine.FindStringSubmatch(line); m != nil {
					flags = append(flags, m[1])
				} else if strings.HasPrefix(line, "  --") {
					t.Errorf("flag line without a meaning: %q", line)
				}
			}
			for _, f := range flags {
				if f != "config" && !strings.Contains(s.Args, "--"+f) {
					t.Errorf("flag --%s is not in the synopsis %q", f, s.Line())
				}
			}
			for _, m := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(s.Args, -1) {
				if !slices.Contains(flags, m[1]) {
					t.Errorf("the synopsis names --%s, which the command does not take:\n%s", m[1], out)
				}
			}
		})
	}
}

// TestUsageListsEveryCommand: `ingestd --help` lists every synopsis, and
// a group's --help (dlq, bench) lists its subcommands.
func TestUsageListsEveryCommand(t *testing.T) {
	code, out, _ := runCmd(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range synopses {
		if !strings.Contains(out, "  "+s.Line()+"\n") {
			t.Errorf("usage lacks %q", s.Line())
		}
	}
	for _, group := range []string{"dlq", "bench"} {
		code, out, _ := runCmd(t, group, "--help")
		if code != 0 || !strings.Contains(out, "ingestd "+group+" ") {
			t.Errorf("%s --help: exit %d\n%s", group, code, out)
		}
	}
}

// TestUsageMatchesREADME: the README's Commands table lists exactly the
// commands the usage lists, written the same way.
func TestUsageMatchesREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Commands\n")
	if !ok {
		t.Fatal("README has no Commands section")
	}
	table, _, _ = strings.Cut(table, "\n\n## ")
	var documented []string
	cell := regexp.MustCompile("`(ingestd [^`]*)`")
	for _, row := range strings.Split(table, "\n") {
		if !strings.HasPrefix(row, "| `ingestd ") {
			continue
		}
		first := strings.Split(strings.ReplaceAll(row, `\|`, "\x00"), "|")[1]
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			documented = append(documented, strings.ReplaceAll(m[1], "\x00", "|"))
		}
	}
	var usage []string
	for _, s := range synopses {
		usage = append(usage, s.Line())
	}
	for _, d := range documented {
		if !slices.Contains(usage, d) {
			t.Errorf("README lists %q, which the usage does not", d)
		}
	}
	for _, u := range usage {
		if !slices.Contains(documented, u) {
			t.Errorf("the usage lists %q, which README's Commands table does not", u)
		}
	}
}

// TestUsageErrorsNameTheCommandOnce: a command-line mistake exits 2 with
// the command named once and its synopsis below.
func TestUsageErrorsNameTheCommandOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sync"}, "ingestd sync: want one installation id\nUsage:\n  ingestd sync INSTALLATION"},
		{[]string{"sync", "--bogus"}, "ingestd sync: flag provided but not defined: -bogus\nUsage:\n  ingestd sync INSTALLATION"},
		{[]string{"dlq"}, "ingestd dlq: want list or replay\nUsage:\n  ingestd dlq list [--json]\n  ingestd dlq replay ID|--all\n"},
		{[]string{"dlq", "replay"}, "ingestd dlq replay: want one dead letter id or --all\n"},
		{[]string{"dlq", "replay", "3", "--all"}, "ingestd dlq replay: want one dead letter id or --all\n"},
		{[]string{"dlq", "replay", "3", "4"}, "ingestd dlq replay: want one dead letter id or --all\n"},
		{[]string{"dlq", "list", "3"}, "ingestd dlq list: unexpected argument \"3\"\n"},
		{[]string{"bench", "retrieve", "--concurrency", "0"}, "ingestd bench retrieve: --concurrency must be 1..1024\n"},
	} {
		code, _, errs := runCmd(t, tt.args...)
		if code != 2 || !strings.HasPrefix(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr\n%s\nwant it to start with\n%s", tt.args, code, errs, tt.want)
		}
	}
}
