package private_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writers are the os functions that make a file or a folder with a mode
// their caller chooses.
var writers = []string{"Create", "WriteFile", "OpenFile", "Mkdir", "MkdirAll", "CreateTemp", "MkdirTemp"}

// exempt are the packages that may call them, and why.
var exempt = map[string]string{
	"internal/private":                      "the one place",
	"firewall/internal/skelgen/cmd/skelgen": "writes Go source into the repository, 0644 like any",
	"store/postgres/pgtest":                 "a lock file every test process on the machine shares",
}

// TestOneWriter: no Go file of the module outside internal/private (tests
// aside) makes a file or folder with a mode of its own choosing.
func TestOneWriter(t *testing.T) {
	for _, f := range findWriters(t, repoRoot(t)) {
		t.Errorf("%s (use internal/private)", f)
	}
}

// TestFindWriters shows the scan can fail.
func TestFindWriters(t *testing.T) {
	root := t.TempDir()
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example\n")
	write("a/a.go", "package a\n\nimport \"os\"\n\nfunc f() { os.WriteFile(\"x\", nil, 0o644) }\n")
	write("b/b.go", "package b\n\nimport fs \"os\"\n\nfunc f() { fs.MkdirAll(\"x\", 0o755) }\n")
	write("c/c.go", "package c\n\nimport \"os\"\n\nfunc f() { os.ReadFile(\"x\") }\n")
	write("d/d_test.go", "package d\n\nimport \"os\"\n\nfunc f() { os.Create(\"x\") }\n")
	write("internal/private/p.go", "package private\n\nimport \"os\"\n\nfunc f() { os.Create(\"x\") }\n")
	got := findWriters(t, root)
	want := []string{"a/a.go:5: os.WriteFile", "b/b.go:5: os.MkdirAll"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %q, want %q", got, want)
	}
}

func findWriters(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		if _, ok := exempt[filepath.ToSlash(filepath.Dir(rel))]; ok {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		osName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"os"` {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName && slices.Contains(writers, sel.Sel.Name) {
				found = append(found, rel+":"+itoa(fset.Position(sel.Pos()).Line)+": os."+sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	return found
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		} else if !errors.Is(err, os.ErrNotExist) {
			tb.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
