package ingestd_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ingestd/ingestd"

// room is one row of the rooms table in docs/DESIGN.md: the packages it
// names, the module packages they may import, and the third-party import
// path prefixes they never import.
type room struct {
	names []string // a package, "x/..." (any depth under x) or "x/*" (right under x)
	may   []string // the same forms, or "*" for anything
	never []string // import path prefixes; "*" for every third-party path
	line  int      // in docs/DESIGN.md
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// readRooms parses the rooms table: the first table after "## The rooms".
func readRooms(t *testing.T) []room {
	t.Helper()
	b, err := os.ReadFile("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	at := slices.Index(lines, "## The rooms")
	if at < 0 {
		t.Fatal(`docs/DESIGN.md has no "## The rooms" section`)
	}
	var rooms []room
	inTable := false
	for i := at + 1; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if !inTable || strings.HasPrefix(l, "|---") {
			inTable = true // the header and the rule under it
			continue
		}
		if len(cells) != 4 {
			t.Fatalf("docs/DESIGN.md:%d: a rooms row has 4 cells, this one %d", i+1, len(cells))
		}
		r := room{line: i + 1}
		for _, m := range backquoted.FindAllStringSubmatch(cells[0], -1) {
			r.names = append(r.names, root(m[1]))
		}
		for _, m := range backquoted.FindAllStringSubmatch(cells[2], -1) {
			r.may = append(r.may, root(m[1]))
		}
		for _, m := range backquoted.FindAllStringSubmatch(cells[3], -1) {
			r.never = append(r.never, m[1])
		}
		if len(r.names) == 0 {
			t.Fatalf("docs/DESIGN.md:%d: a rooms row names no package", r.line)
		}
		rooms = append(rooms, r)
	}
	if len(rooms) == 0 {
		t.Fatal("docs/DESIGN.md: the rooms section has no table")
	}
	return rooms
}

// root maps the table's name of the root package to its relative path.
func root(name string) string {
	if name == "ingestd" {
		return ""
	}
	return name
}

// matches reports whether pattern names pkg, and how specifically: 3 for
// the package itself, else 1 plus the pattern's length (a longer
// pattern is the more specific), 0 for no match.
func matches(pattern, pkg string) int {
	switch {
	case pattern == pkg:
		return 1 << 20
	case pattern == "*":
		return 1
	case strings.HasSuffix(pattern, "/..."):
		base := strings.TrimSuffix(pattern, "/...")
		if pkg == base || strings.HasPrefix(pkg, base+"/") {
			return 2 + len(pattern)
		}
	case strings.HasSuffix(pattern, "/*"):
		base := strings.TrimSuffix(pattern, "*")
		if rest, ok := strings.CutPrefix(pkg, base); ok && rest != "" && !strings.Contains(rest, "/") {
			return 2 + len(pattern)
		}
	}
	return 0
}

// TestRooms: every package of the module is in one room of the table in
// docs/DESIGN.md and imports only what its room may, so the layout the
// table describes is the layout there is; no row names a room without a
// package; and the Go client, transitively, pulls in nothing of the
// server (no metrics, no firewall, no store, no queue).
func TestRooms(t *testing.T) {
	rooms := readRooms(t)
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		imports[rel(f[0])] = f[1:]
	}
	used := make([]bool, len(rooms))
	for pkg, imps := range imports {
		best, at := 0, -1
		for i, r := range rooms {
			for _, n := range r.names {
				if m := matches(n, pkg); m > best {
					best, at = m, i
				}
			}
		}
		if at < 0 {
			t.Errorf("%s is in no room: add it to the rooms table in docs/DESIGN.md", show(pkg))
			continue
		}
		used[at] = true
		r := rooms[at]
		for _, imp := range imps {
			switch {
			case imp == module || strings.HasPrefix(imp, module+"/"):
				if !slices.ContainsFunc(r.may, func(p string) bool { return matches(p, rel(imp)) > 0 }) {
					t.Errorf("%s imports %s: its room (docs/DESIGN.md:%d) may import only %q", show(pkg), imp, r.line, r.may)
				}
			case !strings.Contains(strings.SplitN(imp, "/", 2)[0], "."): // the standard library
			default:
				for _, never := range r.never {
					if never == "*" || strings.HasPrefix(imp, never) {
						t.Errorf("%s imports %s, which its room (docs/DESIGN.md:%d) never does", show(pkg), imp, r.line)
					}
				}
			}
		}
	}
	for i, r := range rooms {
		if !used[i] {
			t.Errorf("docs/DESIGN.md:%d names %q, but no package is in that room", r.line, r.names)
		}
	}

	deps, err := exec.Command("go", "list", "-deps", module+"/client").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(deps)) {
		if dep == module+"/retrieval" || strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasPrefix(dep, "github.com/nats-io/") ||
			slices.ContainsFunc([]string{"firewall/...", "provenance", "store/...", "pipeline", "jobs/..."}, func(p string) bool { return matches(p, rel(dep)) > 0 }) {
			t.Errorf("client depends on %s", dep)
		}
	}
}

// TestRoomMatching: the table's patterns name what they say.
func TestRoomMatching(t *testing.T) {
	for _, tt := range []struct {
		pattern, pkg string
		match        bool
	}{
		{"connectors/*", "connectors/imap", true},
		{"connectors/*", "connectors", false},
		{"connectors/*", "connectors/internal/mail", false},
		{"connectors/internal/...", "connectors/internal/mail", true},
		{"connectors/internal/...", "connectors/internalx", false},
		{"gen/...", "gen/ingestd/v1/ingestdv1connect", true},
		{"", "", true},
		{"", "api", false},
		{"*", "anything/at/all", true},
		{"api", "api/access", false},
	} {
		if got := matches(tt.pattern, tt.pkg) > 0; got != tt.match {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.pattern, tt.pkg, got, tt.match)
		}
	}
	if matches("connectors/connectortest", "connectors/connectortest") <= matches("connectors/*", "connectors/connectortest") {
		t.Error("a row naming a package must win over a pattern")
	}
	if matches("connectors/internal/...", "connectors/internal/mail") <= matches("connectors/*", "connectors/internal") {
		t.Error("a longer pattern must win over a shorter one")
	}
}

func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

func show(pkg string) string {
	if pkg == "" {
		return "the root package"
	}
	return pkg
}
