package ingestd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// shortRooms are the packages whose functions stay within maxFuncLines:
// cmd/ingestd, where a command is a flag parse, a call into the daemon
// and a render, and config, where each walk of the configuration is a
// list of short steps.
var shortRooms = []string{"cmd/ingestd", "config"}

const maxFuncLines = 60

// TestFunctionsAreShort: no function of a package in shortRooms has a
// body over maxFuncLines lines; there is no allow-list.
func TestFunctionsAreShort(t *testing.T) {
	for _, dir := range shortRooms {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
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
				if lines := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1; lines > maxFuncLines {
					t.Errorf("%s: %s has %d lines; keep a function of %s within %d (move the work where it belongs, or split it)",
						fset.Position(fd.Pos()), fd.Name.Name, lines, dir, maxFuncLines)
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no function was checked", dir)
		}
	}
}
