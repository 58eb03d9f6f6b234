package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest function body cmd/ingestd keeps: a command
// is a flag parse, a call into the daemon and a render, each short.
const maxFuncLines = 60

// longFuncs are the functions allowed over maxFuncLines, by file and
// name ("bench.go runBench"): none is. The list only shrinks.
var longFuncs = map[string]bool{}

// TestFunctionsAreShort: no function of the package but those listed in
// longFuncs has a body over maxFuncLines lines.
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
			if lines > maxFuncLines && !longFuncs[name+" "+fd.Name.Name] {
				t.Errorf("%s: %s has %d lines; keep a function of cmd/ingestd within %d (move the work into package daemon, or split it)",
					fset.Position(fd.Pos()), fd.Name.Name, lines, maxFuncLines)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no function was checked")
	}
}
