package storebench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/ingestd/ingestd/internal/private"
)

// WriteMarkdown writes n Markdown files of about 2 KB into dir, named
// doc-NNNNN.md: a title and four sections under their own headings, each
// about 75 words of sentences drawn like the synthetic corpus's text (so
// the default chunker cuts each file into about four chunks). It returns
// the bytes written.
func WriteMarkdown(dir string, n int, seed uint64) (int, error) {
	if err := private.MkdirAll(dir); err != nil {
		return 0, err
	}
	syn := NewSynthetic(seed)
	total := 0
	for i := range n {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		zipf := rand.NewZipf(r, 1.07, 2, uint64(len(syn.vocab)-1))
		words := func(k int) []string {
			w := make([]string, k)
			for j := range w {
				w[j] = syn.vocab[zipf.Uint64()]
			}
			return w
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# %s %d\n\n", strings.Join(words(3), " "), i)
		for range 4 {
			fmt.Fprintf(&b, "## %s\n\n", strings.Join(words(2+r.IntN(3)), " "))
			for p := range 2 {
				ws := words(30 + r.IntN(15))
				for j := 0; j < len(ws); j++ {
					if j == 0 || r.IntN(10) == 0 {
						ws[j] = strings.ToUpper(ws[j][:1]) + ws[j][1:]
						if j > 0 {
							ws[j-1] += "."
						}
					}
				}
				b.WriteString(strings.Join(ws, " "))
				b.WriteString(".\n\n")
				_ = p
			}
		}
		name := filepath.Join(dir, fmt.Sprintf("doc-%05d.md", i))
		if err := private.WriteFile(name, []byte(b.String())); err != nil {
			return total, err
		}
		total += b.Len()
	}
	return total, nil
}

// IngestConfig is a configuration with one files installation, "docs"
// (trusted-internal, no interval), over root, keeping its data in dataDir.
func IngestConfig(root, dataDir string) string {
	return fmt.Sprintf("data_dir: %s\nlog: {level: warn}\ninstallations:\n  - id: docs\n    kind: files\n    tier: trusted-internal\n    files: {root: %s}\n",
		yamlString(dataDir), yamlString(root))
}

func yamlString(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// Row is one chunk as the raw insert writes it.
type Row struct {
	Text      string
	Embedding []byte
}

// ReadRows reads every chunk's text and stored vector from a database
// the store wrote, in seq order.
func ReadRows(ctx context.Context, db string) ([]Row, error) {
	h, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer h.Close()
	rows, err := h.QueryContext(ctx, "SELECT text, embedding FROM chunks ORDER BY seq")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.Text, &r.Embedding); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RawInsert is the ingest baseline: it writes rows into a new SQLite file
// at path as plainly as SQLite allows — one table (seq INTEGER PRIMARY
// KEY, text TEXT, embedding BLOB: the stored 384-d float32 vector), batch
// rows a transaction, one prepared statement each, WAL and
// synchronous=NORMAL like the store — and with fts a full-text table over
// the text too: FTS5 when the driver was built with it (-tags
// sqlite_fts5), else FTS4. It returns the time the inserts took, the CPU
// time the process spent meanwhile and the full-text module used ("" for
// none).
func RawInsert(ctx context.Context, path string, rows []Row, batch int, fts bool) (time.Duration, time.Duration, string, error) {
	cpu0 := ProcessCPU()
	d, module, err := rawInsert(ctx, path, rows, batch, fts)
	return d, ProcessCPU() - cpu0, module, err
}

func rawInsert(ctx context.Context, path string, rows []Row, batch int, fts bool) (time.Duration, string, error) {
	h, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		return 0, "", err
	}
	defer h.Close()
	h.SetMaxOpenConns(1)
	if _, err := h.ExecContext(ctx, "CREATE TABLE raw (seq INTEGER PRIMARY KEY, text TEXT NOT NULL, embedding BLOB)"); err != nil {
		return 0, "", err
	}
	module := ""
	if fts {
		module = "fts5"
		if _, err := h.ExecContext(ctx, "CREATE VIRTUAL TABLE raw_fts USING fts5 (text)"); err != nil {
			module = "fts4"
			if _, err := h.ExecContext(ctx, "CREATE VIRTUAL TABLE raw_fts USING fts4 (text)"); err != nil {
				return 0, "", err
			}
		}
	}
	start := time.Now()
	for lo := 0; lo < len(rows); lo += batch {
		tx, err := h.BeginTx(ctx, nil)
		if err != nil {
			return 0, "", err
		}
		ins, err := tx.PrepareContext(ctx, "INSERT INTO raw (seq, text, embedding) VALUES (?, ?, ?)")
		if err != nil {
			tx.Rollback()
			return 0, "", err
		}
		var insFTS *sql.Stmt
		if fts {
			if insFTS, err = tx.PrepareContext(ctx, "INSERT INTO raw_fts (rowid, text) VALUES (?, ?)"); err != nil {
				tx.Rollback()
				return 0, "", err
			}
		}
		for i := lo; i < min(lo+batch, len(rows)); i++ {
			if _, err := ins.ExecContext(ctx, i+1, rows[i].Text, rows[i].Embedding); err != nil {
				tx.Rollback()
				return 0, "", err
			}
			if fts {
				if _, err := insFTS.ExecContext(ctx, i+1, rows[i].Text); err != nil {
					tx.Rollback()
					return 0, "", err
				}
			}
		}
		if err := tx.Commit(); err != nil {
			return 0, "", err
		}
	}
	return time.Since(start), module, nil
}
