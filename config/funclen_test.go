package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest function body the package keeps: each walk
// of the configuration is a list of short steps.
const maxFuncLines = 60

// TestFunctionsAreShort: no function of the package has a body over
// maxFuncLines lines.
func TestFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			checked++
			lines := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
			if lines > maxFuncLines {
				t.Errorf("%s: %s has %d lines; keep a function of package config within %d (split it into steps)",
					fset.Position(fd.Pos()), fd.Name.Name, lines, maxFuncLines)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no function was checked")
	}
}
