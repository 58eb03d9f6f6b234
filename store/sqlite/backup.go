package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/private"
)

// FileInfo is what Inspect found in a database file.
type FileInfo struct {
	// SchemaVersion is the newest migration the file has had.
	SchemaVersion int
	// Documents counts its documents, tombstoned ones included.
	Documents int
	// TombstoneKeys lists the erasure key ids its tombstones were made
	// with (none when it has no tombstones).
	TombstoneKeys []string
}

// openFile opens the database at path read-only, without migrating it and
// without the store's write connection. Returns ENOTFOUND when there is no
// file.
func openFile(path string) (*sql.DB, error) {
	registerDriver()
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ingestd.Errorf(ingestd.ENOTFOUND, "no database at %s", path)
		}
		return nil, err
	}
	db, err := sql.Open(driverName, "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// Inspect checks the database file at path without changing it (SQLite's
// quick_check, then its schema: checkSchema) and reports its schema
// version and what it holds. Returns EINVALID for a file that is not a
// sound ingestd store, holds a schema this build did not make (at its
// version; an older file's is checked whole once it migrates, see
// Restore) or was written by a newer schema than this build knows,
// ENOTFOUND for no file.
func Inspect(ctx context.Context, path string) (FileInfo, error) {
	db, err := openFile(path)
	if err != nil {
		return FileInfo{}, err
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil {
		return FileInfo{}, ingestd.Errorf(ingestd.EINVALID, "%s is not a readable SQLite database: %v", path, err)
	}
	if check != "ok" {
		return FileInfo{}, ingestd.Errorf(ingestd.EINVALID, "%s is damaged: quick_check says %s", path, check)
	}
	if err := checkSchema(ctx, db, path, false); err != nil {
		return FileInfo{}, err
	}
	var info FileInfo
	var version sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT max(version) FROM schema_version").Scan(&version); err != nil || !version.Valid {
		return FileInfo{}, ingestd.Errorf(ingestd.EINVALID, "%s is not an ingestd store (no schema version)", path)
	}
	info.SchemaVersion = int(version.Int64)
	if info.SchemaVersion > SchemaVersion() {
		return info, ingestd.Errorf(ingestd.EINVALID, "%s has schema version %d; this build knows up to %d: run a newer ingestd", path, info.SchemaVersion, SchemaVersion())
	}
	if info.SchemaVersion == SchemaVersion() {
		if err := checkSchema(ctx, db, path, true); err != nil {
			return info, err
		}
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM documents").Scan(&info.Documents); err != nil {
		return info, fmt.Errorf("count documents of %s: %w", path, err)
	}
	var erasures int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'erasures'").Scan(&erasures); err != nil {
		return info, fmt.Errorf("read schema of %s: %w", path, err)
	}
	if erasures > 0 {
		rows, err := db.QueryContext(ctx, "SELECT DISTINCT key_id FROM erasures ORDER BY key_id")
		if err != nil {
			return info, fmt.Errorf("read tombstones of %s: %w", path, err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return info, err
			}
			info.TombstoneKeys = append(info.TombstoneKeys, id)
		}
		if err := rows.Err(); err != nil {
			return info, err
		}
	}
	return info, nil
}

// Backup writes a consistent copy of the database at path to out with
// VACUUM INTO, then checks it (Inspect). VACUUM INTO is one read
// transaction: writers in this and other processes go on meanwhile, and
// the copy holds what was committed when it began, compacted. It takes
// no lock of ingestd's, so it runs beside a serve that holds the data_dir
// lock. The copy is written beside out and renamed into place once it is
// whole and synced, so out is never a partial file. Returns ECONFLICT
// when out exists, ENOTFOUND when path holds no database.
func Backup(ctx context.Context, path, out string) (FileInfo, error) {
	if _, err := os.Lstat(out); err == nil {
		return FileInfo{}, ingestd.Errorf(ingestd.ECONFLICT, "%s exists: a backup never overwrites a file", out)
	}
	db, err := openFile(path)
	if err != nil {
		return FileInfo{}, err
	}
	defer db.Close()
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".partial")
	_ = os.Remove(tmp) // left by a backup that was stopped
	// VACUUM INTO writes into an empty file as it finds it: made here,
	// it is its owner's alone (SQLite would make it 0644).
	if err := private.Touch(tmp); err != nil {
		return FileInfo{}, fmt.Errorf("back up %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		os.Remove(tmp)
		return FileInfo{}, unavailable("back up %s", path, err)
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return FileInfo{}, fmt.Errorf("back up %s: %w", path, err)
	}
	info, err := Inspect(ctx, tmp)
	if err != nil {
		os.Remove(tmp)
		return info, fmt.Errorf("check the backup of %s: %w", path, err)
	}
	if err := private.PlaceNew(tmp, out); err != nil { // refuses an out that appeared meanwhile
		os.Remove(tmp)
		if errors.Is(err, os.ErrExist) {
			return info, ingestd.Errorf(ingestd.ECONFLICT, "%s exists: a backup never overwrites a file", out)
		}
		return info, fmt.Errorf("back up %s: %w", path, err)
	}
	return info, syncDir(filepath.Dir(out))
}

// RestoreOptions are what Restore needs to take a backup's chunks: a
// backup is a file from outside, and no fenced text in it is trusted.
type RestoreOptions struct {
	// Refence sets each chunk's Fenced from its Text with the one fence,
	// for the document (pipeline.Refence, naming the tier in force);
	// required.
	Refence func(doc *ingestd.Document, chunks []ingestd.Chunk)
	// FenceCheck is the one fence's check, asked of what Refence made;
	// required.
	FenceCheck ingestd.FenceCheck
}

// Restore puts the backup file src in place as the database at path:
// checked first (Inspect), copied beside path, opened there as a Store
// would open it (migrated to this build's version, its schema checked
// whole), every chunk fenced again from its text (o.Refence, each result
// checked by o.FenceCheck), synced, and renamed over path, after the old
// database's write-ahead log and shared-memory files are removed (a log
// left beside the restored file would be replayed into it). A backup
// refused at any step leaves path as it was. No process may have path
// open: the caller makes sure (ingestd restore refuses while serve holds
// the data_dir lock). Returns what Inspect found in src; EINVALID without
// o.Refence or o.FenceCheck.
func Restore(ctx context.Context, src, path string, o RestoreOptions) (FileInfo, error) {
	if o.Refence == nil || o.FenceCheck == nil {
		return FileInfo{}, ingestd.Errorf(ingestd.EINVALID, "restore %s: the fence and its check are required: no fenced text of a backup is taken as it is", src)
	}
	info, err := Inspect(ctx, src)
	if err != nil {
		return info, err
	}
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return info, err
	}
	tmp := path + ".restoring"
	removeTmp := func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			os.Remove(tmp + suffix)
		}
	}
	if err := copyFile(src, tmp); err != nil {
		removeTmp()
		return info, fmt.Errorf("restore %s: %w", src, err)
	}
	s, err := Open(ctx, tmp, &Options{FenceCheck: o.FenceCheck})
	if err == nil {
		err = s.refence(ctx, o.Refence)
		if cerr := s.Close(context.Background()); err == nil {
			err = cerr
		}
	}
	if err != nil {
		removeTmp()
		return info, fmt.Errorf("restore %s: %w", src, err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			os.Remove(tmp)
			return info, fmt.Errorf("restore %s: %w", src, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return info, fmt.Errorf("restore %s: %w", src, err)
	}
	return info, syncDir(filepath.Dir(path))
}

// refenceBatch is how many documents refence fences in one transaction.
const refenceBatch = 256

// refence sets every chunk's fenced text from its text with fence,
// checking each result with the store's FenceCheck, a batch of documents
// per transaction. Returns EINVALID naming a chunk whose result fails.
func (s *Store) refence(ctx context.Context, fence func(*ingestd.Document, []ingestd.Chunk)) error {
	after := ""
	for {
		var docs []*ingestd.Document
		rows, err := s.read.QueryContext(ctx, "SELECT "+documentColumns+" FROM documents WHERE id > ? ORDER BY id LIMIT ?", after, refenceBatch)
		if err != nil {
			return unavailable("read documents of %s", s.path, err)
		}
		for rows.Next() {
			d, err := scanDocument(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("read documents of %s: %w", s.path, err)
			}
			docs = append(docs, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read documents of %s: %w", s.path, err)
		}
		if len(docs) == 0 {
			return nil
		}
		after = docs[len(docs)-1].ID
		err = s.writeTx(ctx, func(tx *sql.Tx) error {
			for _, d := range docs {
				var chunks []ingestd.Chunk
				rows, err := tx.QueryContext(ctx, "SELECT id, text FROM chunks WHERE document_id = ? ORDER BY ordinal, seq", d.ID)
				if err != nil {
					return err
				}
				for rows.Next() {
					c := ingestd.Chunk{DocumentID: d.ID}
					if err := rows.Scan(&c.ID, &c.Text); err != nil {
						rows.Close()
						return err
					}
					chunks = append(chunks, c)
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
				fence(d, chunks)
				for _, c := range chunks {
					if err := s.fenceCheck(c.Fenced); err != nil {
						return ingestd.Errorf(ingestd.EINVALID, "document %s: chunk %s: fenced again, it is not one fence (%s)", d.ID, c.ID, ingestd.ErrorMessage(err))
					}
					if _, err := tx.ExecContext(ctx, "UPDATE chunks SET fenced = ? WHERE id = ?", c.Fenced, c.ID); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("fence the chunks of %s again: %w", s.path, err)
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := private.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	if _, err := out.ReadFrom(in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncFile(path string) error {
	f, err := private.OpenFile(path, os.O_RDWR)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not every file system syncs a directory
	return nil
}
