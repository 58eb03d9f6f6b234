package main

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/internal/terminal"
	"github.com/ingestd/ingestd/internal/terminal/terminaltest"
)

// mustHostileMailbox copies testdata/terminal (a mail whose subject, body
// and RFC 2231-encoded attachment names carry ESC, OSC, CSI, BEL, C1,
// bidi, tag characters and a line feed) beside a configuration that
// reads it as an untrusted files installation of at most two attachments
// a message, and returns the configuration's path.
func mustHostileMailbox(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "terminal"))); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ingestd.yaml")
	body := "installations:\n  - id: support\n    kind: files\n    tier: untrusted-external\n" +
		"    files: {root: ./support, include: [\"**/*.eml\"], max_attachments: 2}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file name is written by whoever can drop a file: one with a line
	// feed and an escape, made here (git keeps no such name portably).
	mail := "From: a@example.net\r\nSubject: plain\r\nMessage-ID: <plain@example.net>\r\n\r\nA plain note about the overdue invoice.\r\n"
	if err := os.WriteFile(filepath.Join(dir, "support", "note\x1b]0;title\a\nFORGED line.eml"), []byte(mail), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestHostileTextNeverReachesTheTerminalRaw: text an outsider wrote — an
// RFC 2231 attachment file name with ESC ] 0 (retitle), ESC [ 2 J
// (clear), OSC 8 (a hidden link), OSC 52 (the clipboard), BEL, a C1 CSI,
// a bidi override, a tag character and a line feed, a subject and a body
// with the same — is shown escaped by every command that shows stored or
// external text, on stdout and stderr: `sync` (its failed: and skipped:
// lines), `ingest`, `search`, `erase --dry-run` (the EXTERNAL ID and
// TITLE columns), `status`, `provenance`. No value forges a line of its
// own (a dropped file's name holds a line feed). `--json` stays JSON that
// decodes to the exact text.
func TestHostileTextNeverReachesTheTerminalRaw(t *testing.T) {
	cfg := mustHostileMailbox(t)
	mailbox := filepath.Join(filepath.Dir(cfg), "support", "0001.eml")
	for _, tt := range []struct {
		args []string
		want []string // escaped forms the output must show
	}{
		{args: []string{"sync", "support"}, want: []string{
			`failed: 0001.eml#attachment/2/statement\u001b[2J\u001b]8;;https:__evil.example\u0007click\u001b]8;;\u0007.pdf: `,
			`skipped: 0001.eml#attachment/3/extra\u001b[31mRED\u009b2J\u200b.txt: `,
			`failed: note\u001b]0;title\u0007\nFORGED line.eml: refused: `,
		}},
		{args: []string{"ingest", mailbox, "--installation", "support"}, want: []string{
			`0001.eml#attachment/1/invoice\u001b]0;pwned\u0007\u001b[1A\u001b[2K\u202etxt.exe\udb40\udc41 FORGED line.txt`,
		}},
		{args: []string{"search", "overdue invoice"}, want: []string{
			`Invoice [U+001B]]0;pwned[U+0007] overdue [U+202E]fdp.exe`, // the pipeline stores a title neutralised
			`invoice today.\u001b[2J\u001b]52;c;`,
		}},
		{args: []string{"search", "overdue invoice", "--fenced"}},
		{args: []string{"erase", "--dry-run", "--installation", "support"}, want: []string{
			`0001.eml#attachment/1/invoice\u001b]0;pwned\u0007\u001b[1A\u001b[2K\u202etxt.exe\udb40\udc41 FORGED line.txt`,
			`Invoice [U+001B]]0;pwned[U+0007] overdue [U+202E]fdp.exe`, // the pipeline stores a title neutralised
		}},
		{args: []string{"status"}},
		{args: []string{"status", "support"}},
		{args: []string{"provenance", "--per-installation"}},
		{args: []string{"erase", "--list"}},
	} {
		name := strings.Join(tt.args, " ")
		code, out, errs := runCmd(t, append(tt.args, "--config", cfg)...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, out, errs)
		}
		for stream, text := range map[string]string{"stdout": out, "stderr": errs} {
			if r, ok := terminaltest.RawControl(text); ok {
				t.Errorf("%s: %s carries U+%04X raw:\n%q", name, stream, r, text)
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "FORGED") {
					t.Errorf("%s: %s has a line a file name forged: %q", name, stream, line)
				}
			}
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout lacks %s:\n%s", name, w, out)
			}
		}
	}

	// The JSON forms are JSON of the exact text, whatever Write escaped.
	code, out, errs := runCmd(t, "sync", "support", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("sync --json: exit %d: %s", code, errs)
	}
	if r, ok := terminaltest.RawControl(out); ok {
		t.Errorf("sync --json carries U+%04X raw", r)
	}
	var sum struct {
		Failures []struct {
			ExternalID string `json:"external_id"`
		} `json:"failures"`
		Skips []struct {
			ExternalID string `json:"external_id"`
		} `json:"skips"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("sync --json is not JSON: %v\n%s", err, out)
	}
	if len(sum.Failures) != 2 || sum.Failures[0].ExternalID != "0001.eml#attachment/2/statement\x1b[2J\x1b]8;;https:__evil.example\aclick\x1b]8;;\a.pdf" ||
		sum.Failures[1].ExternalID != "note\x1b]0;title\a\nFORGED line.eml" {
		t.Errorf("failures %+v", sum.Failures)
	}
	if len(sum.Skips) != 1 || sum.Skips[0].ExternalID != "0001.eml#attachment/3/extra\x1b[31mRED\u009b2J\u200b.txt" {
		t.Errorf("skips %+v", sum.Skips)
	}
	code, out, _ = runCmd(t, "erase", "--dry-run", "--installation", "support", "--json", "--config", cfg)
	var rep struct {
		Documents []struct {
			ExternalID string `json:"external_id"`
		} `json:"documents"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("erase --dry-run --json: exit %d, %v\n%s", code, err, out)
	}
	var ids []string
	for _, d := range rep.Documents {
		ids = append(ids, d.ExternalID)
	}
	if want := "0001.eml#attachment/1/invoice\x1b]0;pwned\a\x1b[1A\x1b[2K\u202etxt.exe\U000E0041 FORGED line.txt"; !strings.Contains(strings.Join(ids, "|"), want) {
		t.Errorf("erase --json ids %q lack %q", ids, want)
	}
}

// TestLogRecordsKeepControlsEscaped: the logger a command gets (text or
// JSON, as log.format says) writes a hostile message, key and value with
// nothing raw: slog's text handler quotes what needs it, its JSON handler
// leaves C1, DEL and format characters raw and the terminal escapes them;
// the JSON record still decodes to the exact value.
func TestLogRecordsKeepControlsEscaped(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		log := newLogger(terminal.New(&buf), config.LogConfig{Format: format}, true)
		log.Warn("sync.item_failed "+hostileValue, "external_id", hostileValue, hostileValue, "v")
		out := buf.String()
		if r, ok := terminaltest.RawControl(out); ok {
			t.Errorf("%s: U+%04X passed: %q", format, r, out)
		}
		if strings.Count(out, "\n") != 1 {
			t.Errorf("%s: a record on more than one line: %q", format, out)
		}
		if format == "json" {
			var rec map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["external_id"] != hostileValue || rec[hostileValue] != "v" {
				t.Errorf("json record %v, %v", rec, err)
			}
		}
	}
}

// TestOutputGoesThroughTheTerminal reads this package's source: only
// main hands the process's streams to run, which wraps them in terminals
// (env's streams are *terminal.Terminal, so every command's output passes Write);
// only the functions named here reach the raw stream, each for output
// that is not text for a person. A new command that needs the raw
// stream is added here, with its reason.
func TestOutputGoesThroughTheTerminal(t *testing.T) {
	rawAllowed := map[string]string{
		"runExport":   "an archive written to stdout is bytes, not text",
		"runMCP":      "stdout carries the MCP protocol's JSON-RPC messages",
		"newProgress": "the progress bar draws with control sequences and shows only the installation id and counts",
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := pkgs["main"].Files
	if len(files) < 10 {
		t.Fatalf("read %d files of package main", len(files))
	}
	for name, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				// env's output streams are terminals.
				ast.Inspect(d, func(n ast.Node) bool {
					ts, ok := n.(*ast.TypeSpec)
					if !ok || ts.Name.Name != "env" {
						return true
					}
					for _, fld := range ts.Type.(*ast.StructType).Fields.List {
						for _, id := range fld.Names {
							if (id.Name == "stdout" || id.Name == "stderr") && types.ExprString(fld.Type) != "*terminal.Terminal" {
								t.Errorf("%s: env.%s is %s, not *terminal.Terminal", name, id.Name, types.ExprString(fld.Type))
							}
						}
					}
					return true
				})
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && id.Name == "os" && (x.Sel.Name == "Stdout" || x.Sel.Name == "Stderr") && fn.Name.Name != "main" {
						t.Errorf("%s: %s uses os.%s; print through env's terminals", fset.Position(x.Pos()), fn.Name.Name, x.Sel.Name)
					}
				case *ast.CallExpr:
					if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Raw" && len(x.Args) == 0 {
						if _, ok := rawAllowed[fn.Name.Name]; !ok && fn.Name.Name != "Raw" {
							t.Errorf("%s: %s writes to the raw stream; only %v may", fset.Position(x.Pos()), fn.Name.Name, slices.Sorted(maps.Keys(rawAllowed)))
						}
					}
				}
				return true
			})
		}
	}
}

// hostileValue holds every class a terminal must not get raw.
const hostileValue = "a\x1b]0;pwned\a\x1b[2J\u009b2J\x7f\r\nFORGED\u202egpj.exe\u2066\u200b\ufeff\U000E0041\u2028z"
