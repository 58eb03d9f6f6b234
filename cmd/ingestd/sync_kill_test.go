package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/ingestd/ingestd/benchmarks/storebench"
)

// TestSyncSurvivesSIGKILL kills a real `ingestd sync` process (SIGKILL:
// no deferred function runs) once its progress has reported part of the
// files stored, then checks the file it left: every document the progress
// reported is there, and every document there is whole — the chunks, the
// vectors and the content hash a complete sync writes for it, nothing
// more, nothing less. A second sync then finishes the pass.
func TestSyncSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	const n = 3000
	if _, err := storebench.WriteMarkdown(files, n, 7); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ingestd")
	buildBinary(t, bin)
	config := func(name string) (cfg, db string) {
		cfg = filepath.Join(dir, name+".yaml")
		data := filepath.Join(dir, name)
		if err := os.WriteFile(cfg, []byte(storebench.IngestConfig(files, data)), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg, filepath.Join(data, "ingestd.db")
	}

	// The reference: a pass that runs to its end.
	refCfg, refDB := config("reference")
	if out, err := exec.Command(bin, "sync", "docs", "--config", refCfg).CombinedOutput(); err != nil {
		t.Fatalf("reference sync: %v\n%s", err, out)
	}
	want := documents(t, refDB)
	if len(want) != n {
		t.Fatalf("reference holds %d documents, want %d", len(want), n)
	}

	cfg, db := config("killed")
	cmd := exec.Command(bin, "sync", "docs", "--config", cfg)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Progress lines ("docs: 900/3000") count items stored.
	progress := regexp.MustCompile(`^docs: (\d+)/\d+$`)
	reported := 0
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := progress.FindStringSubmatch(sc.Text()); m != nil {
			reported, _ = strconv.Atoi(m[1])
			if reported >= n/4 {
				break
			}
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() { // drain, so the child never blocks on a full pipe
		}
	}()
	_ = cmd.Wait()
	if reported < n/4 || reported >= n {
		t.Fatalf("killed after %d reported of %d: want a pass killed part-way", reported, n)
	}

	got := documents(t, db)
	t.Logf("killed after %d of %d documents were reported stored; %d in the file", reported, n, len(got))
	if len(got) < reported {
		t.Fatalf("%d documents in the file, %d were reported stored", len(got), reported)
	}
	for id, d := range got {
		if w, ok := want[id]; !ok || d != w {
			t.Fatalf("document %s in the killed file:\n%s\nafter a complete pass:\n%s", id, d, w)
		}
	}

	// The next pass finishes the work.
	if out, err := exec.Command(bin, "sync", "docs", "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("second sync: %v\n%s", err, out)
	}
	got = documents(t, db)
	if len(got) != n {
		t.Fatalf("after the second pass: %d documents, want %d", len(got), n)
	}
	for id, d := range got {
		if d != want[id] {
			t.Fatalf("document %s after the second pass:\n%s\nafter one complete pass:\n%s", id, d, want[id])
		}
	}
}

// documents describes every document of a store's file: its content hash
// and, in order, each chunk's id, text length and vector length.
func documents(t *testing.T, path string) map[string]string {
	t.Helper()
	h, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rows, err := h.QueryContext(context.Background(), `SELECT d.id, d.content_hash, d.status, c.id, length(c.text), length(c.fenced), length(c.embedding)
		FROM documents d LEFT JOIN chunks c ON c.document_id = d.id ORDER BY d.id, c.ordinal`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, hash, status string
		var chunk sql.NullString
		var text, fenced, emb sql.NullInt64
		if err := rows.Scan(&id, &hash, &status, &chunk, &text, &fenced, &emb); err != nil {
			t.Fatal(err)
		}
		if _, ok := out[id]; !ok {
			out[id] = fmt.Sprintf("%s %s", hash, status)
		}
		out[id] += fmt.Sprintf("\n  chunk %s: text %d, fenced %d, vector %d bytes", chunk.String, text.Int64, fenced.Int64, emb.Int64)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
