// Package files is the connector for a local folder: it walks a root
// directory and emits one item per matching file (Markdown, plain text,
// HTML converted to text, and .eml messages with their text attachments as
// child items).
//
// It only reads: it never writes, moves or deletes anything under the root,
// never follows a symlink out of the root, and never resolves a relative
// root itself (cmd resolves it against the config file's directory).
package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/internal/mail"
	"github.com/ingestd/ingestd/provenance"
)

// Kind registers the files connector.
var Kind = connectors.Kind{
	Name: "files",
	Policy: provenance.AnyTier("a local folder holds whatever its owner copied into it — " +
		"an internal handbook or an export of a public inbox — so only the owner can say"),
	New: New,
}

// Config is the `files:` block of an installation.
type Config struct {
	// Root is the folder to walk. Required. A relative root is relative
	// to Settings.BaseDir (the configuration file's directory).
	Root string `yaml:"root"`
	// Include lists doublestar globs, slash-separated and relative to
	// Root, of the files to ingest. Default DefaultInclude.
	Include []string `yaml:"include"`
	// Exclude lists globs of files to leave out even when included. A
	// pattern ending in "/**" also stops the walk from entering the
	// directory it names.
	Exclude []string `yaml:"exclude"`
	// MaxFileBytes is the largest file read; a larger one is reported
	// with pass.Skip ("over max_file_bytes"). Default DefaultMaxFileBytes.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxAttachments is the most child documents one .eml makes; the
	// rest are reported with pass.Skip ("over max_attachments") and
	// counted in the message's Meta["defects"]. Default
	// mail.DefaultMaxAttachments.
	MaxAttachments int `yaml:"max_attachments"`
}

// DefaultInclude is the include list when the config gives none.
var DefaultInclude = []string{"**/*.md", "**/*.txt", "**/*.html", "**/*.htm", "**/*.eml"}

// DefaultMaxFileBytes is the size cap when the config gives none.
const DefaultMaxFileBytes = 20 << 20

// Source is one files installation.
type Source struct {
	installation string
	cfg          Config
	log          *slog.Logger
}

var _ ingestd.Source = (*Source)(nil)

// New builds the source of a files installation from its settings.
// Errors are EINVALID and name the offending key.
func New(inst ingestd.Installation, s connectors.Settings) (ingestd.Source, error) {
	var cfg Config
	if s.Decode != nil {
		if err := s.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("decode files settings: %w", err)
		}
	}
	if cfg.Root != "" && !filepath.IsAbs(cfg.Root) && s.BaseDir != "" {
		cfg.Root = filepath.Join(s.BaseDir, cfg.Root)
	}
	return NewSource(inst.ID, cfg, s.Logger)
}

// NewSource validates cfg, applies its defaults and returns the source. A
// nil logger discards.
func NewSource(installation string, cfg Config, logger *slog.Logger) (*Source, error) {
	if strings.TrimSpace(cfg.Root) == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "files.root is required")
	}
	cfg.Root = filepath.Clean(cfg.Root)
	if len(cfg.Include) == 0 {
		cfg.Include = append([]string(nil), DefaultInclude...)
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"include", cfg.Include}, {"exclude", cfg.Exclude}} {
		for i, p := range l.list {
			if !doublestar.ValidatePattern(p) {
				return nil, ingestd.Errorf(ingestd.EINVALID, "files.%s[%d]: invalid glob %q", l.key, i, p)
			}
		}
	}
	switch {
	case cfg.MaxFileBytes < 0:
		return nil, ingestd.Errorf(ingestd.EINVALID, "files.max_file_bytes must not be negative")
	case cfg.MaxFileBytes == 0:
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	switch {
	case cfg.MaxAttachments < 0:
		return nil, ingestd.Errorf(ingestd.EINVALID, "files.max_attachments must not be negative")
	case cfg.MaxAttachments == 0:
		cfg.MaxAttachments = mail.DefaultMaxAttachments
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Source{installation: installation, cfg: cfg, log: logger}, nil
}

// Config returns the source's configuration with defaults applied.
func (s *Source) Config() Config { return s.cfg }

// Sync walks the root and Puts every matching file, in lexical order.
// Hidden files and directories (".git", ".DS_Store") are skipped, and so
// are symlinks to directories or to anything outside the root. A file that cannot be
// read or parsed is reported with pass.Fail, one over MaxFileBytes with
// pass.Skip, and the pass goes on; so is each .eml attachment over
// MaxAttachments. pass.Total is raised by each .eml's attachments, so it
// is exact by the end. When the whole tree was listed, Sync calls
// pass.Complete so files removed since the last pass are tombstoned; when a
// directory could not be read it does not (its files would be tombstoned
// for nothing) and logs why.
//
// Every file is read on every pass; the pipeline skips unchanged content by
// hash. A cursor of mtimes could skip reading, but a file skipped is
// neither Put nor Failed, and Complete would then tombstone it.
//
// It returns an error when the root is missing (ENOTFOUND) or not a
// directory (EINVALID), when ctx ends, or when pass.Put fails.
func (s *Source) Sync(ctx context.Context, pass ingestd.Pass) error {
	files, complete, err := s.list(ctx)
	if err != nil {
		return err
	}
	total := len(files)
	pass.Total(total)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		items, over, err := readItems(s.installation, f.rel, f.path, s.cfg.MaxFileBytes, s.cfg.MaxAttachments)
		if ingestd.ErrorCode(err) == ingestd.ETOOLARGE {
			s.log.Warn("files: file over max_file_bytes skipped", "installation", s.installation, "path", f.rel, "err", err)
			pass.Skip(f.rel, "over max_file_bytes")
			continue
		}
		if err != nil {
			pass.Fail(f.rel, err)
			continue
		}
		if n := len(items) - 1 + len(over); n > 0 { // an .eml's attachments
			total += n
			pass.Total(total)
		}
		for _, it := range items {
			if err := pass.Put(ctx, it); err != nil {
				return fmt.Errorf("put %s: %w", it.ExternalID, err)
			}
		}
		for _, id := range over {
			pass.Skip(id, "over max_attachments")
		}
	}
	if !complete {
		s.log.Warn("files: some directories could not be read; removed files are not tombstoned this pass",
			"installation", s.installation, "root", s.cfg.Root)
		return nil
	}
	pass.Complete()
	return nil
}

// ReadItems reads the file at rel (slash-separated, relative to the
// source's root) as the items Sync would Put for it.
func (s *Source) ReadItems(rel string) ([]ingestd.Item, error) {
	return ReadItems(s.installation, s.cfg.Root, rel, s.cfg.MaxFileBytes)
}

// file is one listed file: its slash path relative to the root (its
// external id) and the path to open.
type file struct{ rel, path string }

// list walks the root and returns the matching regular files in lexical
// order, and whether every directory could be read.
func (s *Source) list(ctx context.Context) ([]file, bool, error) {
	root := s.cfg.Root
	info, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, ingestd.Errorf(ingestd.ENOTFOUND, "files root %q does not exist", root)
	case err != nil:
		return nil, false, fmt.Errorf("files root %q: %w", root, err)
	case !info.IsDir():
		return nil, false, ingestd.Errorf(ingestd.EINVALID, "files root %q is not a directory", root)
	}
	// Walk the real root so a root that is itself a symlink is entered,
	// and symlinks inside can be checked against it.
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, false, fmt.Errorf("files root %q: %w", root, err)
	}
	var out []file
	complete := true
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == real {
				return err
			}
			s.log.Warn("files: cannot read", "installation", s.installation, "path", p, "err", err)
			complete = false
			return nil
		}
		if p == real {
			return nil
		}
		rel, err := filepath.Rel(real, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") { // .git, .DS_Store, editor lock files
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case d.IsDir():
			if s.excludedDir(rel) {
				return fs.SkipDir
			}
			return nil
		case t&fs.ModeSymlink != 0:
			if !s.symlinkedFileInside(real, p) {
				return nil
			}
		case !t.IsRegular():
			return nil
		}
		if s.matches(rel) {
			out = append(out, file{rel: rel, path: p})
		}
		return nil
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, false, cerr
		}
		return nil, false, fmt.Errorf("walk files root %q: %w", root, err)
	}
	return out, complete, nil
}

// symlinkedFileInside reports whether the symlink at p leads to a regular
// file inside the real root. Symlinked directories are never followed (no
// cycles, no second path to the same file).
func (s *Source) symlinkedFileInside(real, p string) bool {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		s.log.Warn("files: broken symlink skipped", "installation", s.installation, "path", p, "err", err)
		return false
	}
	rel, err := filepath.Rel(real, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		s.log.Warn("files: symlink out of the root skipped", "installation", s.installation, "path", p)
		return false
	}
	fi, err := os.Stat(target)
	return err == nil && fi.Mode().IsRegular()
}

// matches reports whether rel is included and not excluded. Patterns were
// validated in NewSource, so Match cannot fail.
func (s *Source) matches(rel string) bool {
	in := false
	for _, p := range s.cfg.Include {
		if ok, _ := doublestar.Match(p, rel); ok {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	for _, p := range s.cfg.Exclude {
		if ok, _ := doublestar.Match(p, rel); ok {
			return false
		}
	}
	return true
}

// excludedDir reports whether an exclude pattern "X/**" covers the
// directory rel, so nothing under it can match.
func (s *Source) excludedDir(rel string) bool {
	for _, p := range s.cfg.Exclude {
		dir, ok := strings.CutSuffix(p, "/**")
		if !ok {
			continue
		}
		if m, _ := doublestar.Match(dir, rel); m {
			return true
		}
	}
	return false
}
