package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// doc is one file of the corpus.
type doc struct {
	name string
	text string
}

// corpus is real text read at run time from the Go distribution, never
// copied into the repo: its markdown (doc/ and src/**/*.md) and an English
// book in plain text (src/testdata/Isaac.Newton-Opticks.txt).
type corpus struct {
	markdown []doc
	plain    []doc
}

func (c corpus) bytes(docs []doc) int64 {
	var n int64
	for _, d := range docs {
		n += int64(len(d.text))
	}
	return n
}

// goroot finds the Go distribution: runtime.GOROOT, else `go env GOROOT`.
func goroot() string {
	//lint:ignore SA1019 the benchmark wants the toolchain's own tree
	if r := runtime.GOROOT(); r != "" {
		return r
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// MustCorpus loads the corpus, skipping tb when the Go distribution's text
// is not on this machine.
func MustCorpus(tb testing.TB) corpus {
	tb.Helper()
	root := goroot()
	if root == "" {
		tb.Skip("no GOROOT: the corpus is the Go distribution's text")
	}
	var c corpus
	for _, dir := range []string{"doc", "src"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
				c.markdown = append(c.markdown, doc{strings.TrimPrefix(path, root), string(b)})
			}
			return nil
		})
	}
	if b, err := os.ReadFile(filepath.Join(root, "src", "testdata", "Isaac.Newton-Opticks.txt")); err == nil {
		c.plain = append(c.plain, doc{"src/testdata/Isaac.Newton-Opticks.txt", string(b)})
	}
	if len(c.markdown) == 0 || len(c.plain) == 0 {
		tb.Skipf("no markdown or plain text under %s", root)
	}
	sort.Slice(c.markdown, func(i, j int) bool { return c.markdown[i].name < c.markdown[j].name })
	return c
}
