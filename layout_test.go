package ingestd_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ingestd/ingestd"

// rooms says which of the module's packages each room may import
// directly (docs/DESIGN.md, "The rooms"); the first entry that matches a
// package applies. A package not listed may import anything; a listed
// one the standard library, the module's packages in may (a trailing "/"
// means everything under the folder; as a room, the packages right under
// it) and any third-party package but those under never.
var rooms = []struct {
	pkg   string   // a package, or a folder ending in "/"
	may   []string // module packages it may import
	never []string // third-party import path prefixes it must not import
}{
	{"", nil, []string{""}}, // the root: the standard library only
	{"provenance", []string{""}, nil},
	{"chunker", []string{""}, nil},
	{"firewall", []string{"", "provenance"}, nil},
	{"embedder", []string{"", "internal/clock", "internal/lexnorm"}, nil},
	{"internal/lexnorm", nil, []string{""}}, // the standard library only
	{"internal/private", nil, []string{""}}, // the standard library only
	{"jobs", []string{"", "internal/clock", "internal/private"}, nil},
	{"health", []string{""}, nil},
	{"pipeline", []string{"", "chunker", "firewall", "provenance", "internal/clock"}, nil},
	{"erasure", []string{"", "embedder", "pipeline"}, nil},
	{"archive", []string{""}, nil},
	{"connectors", []string{"", "provenance"}, nil},
	// The conformance cases run each ability through the code that uses it:
	// a webhook flavour through the real intake.
	{"connectors/connectortest", []string{"", "pipeline", "connectors", "connectors/webhook"}, nil},
	{"connectors/", []string{"", "connectors", "connectors/", "provenance", "internal/clock", "internal/private"}, nil},
	{"store/sqlite", []string{"", "store/sqlite/", "internal/clock", "internal/private"}, nil},
	{"store/postgres", []string{"", "internal/clock"}, nil},
	{"store/storetest", []string{""}, nil},
	{"retrieval", []string{"", "firewall", "provenance", "internal/clock"}, []string{"github.com/prometheus/"}},
	{"retrieval/metrics", []string{""}, nil},
	{"retrieval/access", []string{""}, nil},
	{"retrieval/mcpserver", []string{""}, []string{"github.com/prometheus/"}},
	{"retrieval/api", []string{"", "gen/", "retrieval/internal/wire", "retrieval/access", "retrieval/mcpserver", "jobs", "provenance"}, nil},
	{"retrieval/internal/wire", []string{"", "gen/"}, []string{"github.com/prometheus/"}},
	{"retrieval/client", []string{"", "gen/", "retrieval/internal/wire"}, []string{"github.com/prometheus/"}},
}

// TestRooms: every package imports only what its room may, so the
// layout in docs/DESIGN.md holds; and the Go client, transitively, pulls
// in nothing of the server (no metrics, no firewall, no store).
func TestRooms(t *testing.T) {
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
	for pkg, imps := range imports {
		i := slices.IndexFunc(rooms, func(r struct {
			pkg   string
			may   []string
			never []string
		}) bool {
			return r.pkg == pkg || strings.HasSuffix(r.pkg, "/") && strings.HasPrefix(pkg, r.pkg) && !strings.Contains(pkg[len(r.pkg):], "/")
		})
		if i < 0 {
			continue
		}
		room := rooms[i]
		for _, imp := range imps {
			switch {
			case imp == module || strings.HasPrefix(imp, module+"/"):
				if !allowed(room.may, rel(imp)) {
					t.Errorf("%s imports %s: its room may import only %q", show(pkg), imp, room.may)
				}
			case !strings.Contains(strings.SplitN(imp, "/", 2)[0], "."): // the standard library
			default:
				for _, never := range room.never {
					if strings.HasPrefix(imp, never) {
						t.Errorf("%s imports %s", show(pkg), imp)
					}
				}
			}
		}
	}

	deps, err := exec.Command("go", "list", "-deps", module+"/retrieval/client").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(deps)) {
		if dep == module+"/retrieval" || strings.HasPrefix(dep, "github.com/prometheus/") ||
			allowed([]string{"firewall", "firewall/", "provenance", "store/", "pipeline"}, rel(dep)) {
			t.Errorf("retrieval/client depends on %s", dep)
		}
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

func allowed(may []string, imp string) bool {
	for _, m := range may {
		if m == imp || strings.HasSuffix(m, "/") && strings.HasPrefix(imp, m) {
			return true
		}
	}
	return false
}
