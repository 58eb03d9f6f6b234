package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runCmd runs the command line and returns its exit code, stdout and
// stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelpListsEveryFlag: `ingestd-bench COMMAND --help` (and -h, and
// `ingestd-bench help COMMAND`) prints the synopsis and every flag with
// its meaning and exits 0; the synopsis names every flag, and no flag the
// command lacks.
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
				if !strings.Contains(s.Args, "--"+f) {
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

// TestUsageListsEveryCommand: `ingestd-bench --help` lists every synopsis,
// and `store --help` the store's subcommands.
func TestUsageListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"help"}} {
		code, out, _ := runCmd(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		for _, s := range synopses {
			if !strings.Contains(out, "  "+s.Line()+"\n") {
				t.Errorf("%v: usage lacks %q", args, s.Line())
			}
		}
	}
	code, out, _ := runCmd(t, "store", "--help")
	if code != 0 || strings.Count(out, "ingestd-bench store ") != 4 {
		t.Errorf("store --help: exit %d, want its four subcommands\n%s", code, out)
	}
}

// TestUsageMatchesDocs: the table in docs/BENCHMARKS.md lists exactly
// the commands the usage lists, written the same way.
func TestUsageMatchesDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	cell := regexp.MustCompile("`(ingestd-bench [^`]*)`")
	for _, row := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(row, "| `ingestd-bench ") {
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
	if !slices.Equal(documented, usage) {
		t.Errorf("docs/BENCHMARKS.md lists\n%s\nthe usage\n%s", strings.Join(documented, "\n"), strings.Join(usage, "\n"))
	}
}

// TestUsageErrors: a command-line mistake exits 2 with the command named
// and its synopsis below.
func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "ingestd-bench: unknown command \"frobnicate\"\n"},
		{[]string{"store"}, "ingestd-bench store: want corpus, ingest, serve or retrieve\nUsage:\n  ingestd-bench store corpus"},
		{[]string{"store", "corpus"}, "ingestd-bench store corpus: --dir and a positive --chunks are required\nUsage:\n  ingestd-bench store corpus"},
		{[]string{"store", "serve", "--rounds", "1"}, "ingestd-bench store serve: --dir is required"},
		{[]string{"store", "retrieve", "--bogus"}, "ingestd-bench store retrieve: flag provided but not defined: -bogus\n"},
		{[]string{"archive", "--documents", "0"}, "ingestd-bench archive: --documents, --chunks and --dims must be positive\nUsage:\n  ingestd-bench archive"},
		{[]string{"archive", "extra"}, "ingestd-bench archive: unexpected argument \"extra\"\n"},
	} {
		code, _, errs := runCmd(t, tt.args...)
		if code != 2 || !strings.HasPrefix(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr\n%s\nwant it to start with\n%s", tt.args, code, errs, tt.want)
		}
	}
}

// TestStoreCorpusAndRetrieveInProcess builds a small corpus and measures
// the in-process retrieval call on it (no ingestd binary needed): every
// call is answered and counted.
func TestStoreCorpusAndRetrieveInProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	code, out, errs := runCmd(t, "store", "corpus", "--dir", dir, "--chunks", "400")
	if code != 0 || !strings.Contains(out, "corpus: 100 documents, 400 chunks") {
		t.Fatalf("corpus: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCmd(t, "store", "retrieve", "--dir", dir, "--rounds", "2", "--calls", "20",
		"--duration", "100ms", "--concurrency", "2", "--http=false", "--json")
	if code != 0 {
		t.Fatalf("retrieve: exit %d\n%s%s", code, out, errs)
	}
	var rounds []retrieveRound
	if err := json.Unmarshal([]byte(out), &rounds); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rounds) != 2 {
		t.Fatalf("%d rounds, want 2", len(rounds))
	}
	for _, r := range rounds {
		if r.Calls != 20 || r.P50 <= 0 || r.P99 < r.P50 || r.InProcRate <= 0 || r.HTTP.Requests != 0 {
			t.Errorf("round %+v: want 20 calls measured and no HTTP load", r)
		}
	}
	// A second corpus in the same folder is refused, the first left whole.
	if code, _, errs := runCmd(t, "store", "corpus", "--dir", dir, "--chunks", "400"); code != 1 || !strings.Contains(errs, "already holds a corpus") {
		t.Fatalf("corpus again: exit %d, %q", code, errs)
	}
}

// TestIngestdBinary: without --bin or --serve-bin the store benchmarks
// start the ingestd on $PATH when none is beside this binary, and say
// how to build one when there is none.
func TestIngestdBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(self), "ingestd")); err == nil {
		t.Skip("an ingestd beside the test binary")
	}
	bin := t.TempDir()
	fake := filepath.Join(bin, "ingestd")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if got, err := ingestdBinary(); err != nil || got != fake {
		t.Fatalf("ingestdBinary() = %q, %v; want %q", got, err, fake)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := ingestdBinary(); err == nil || !strings.Contains(err.Error(), "go build -o . ./cmd/ingestd ./cmd/ingestd-bench") {
		t.Fatalf("no ingestd: %v, want how to build one", err)
	}
}
