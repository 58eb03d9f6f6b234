// Package files is the connector for a local folder: it walks a root
// directory and emits one item per matching file (Markdown, plain text,
// HTML converted to text, PDF, DOCX and ODT read into sections with
// their pages or headings, and .eml messages with their readable
// attachments as child items, linked to the other messages of their
// thread as the imap connector links mail).
//
// It only reads: it never writes, moves or deletes anything under the root,
// never reads anything outside the root or anything but a regular file
// (every file is opened through one os.Root, see tree), and never resolves
// a relative root itself (cmd resolves it against the config file's
// directory).
package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/internal/extract"
	"github.com/ingestd/ingestd/connectors/internal/mail"
	"github.com/ingestd/ingestd/provenance"
)

// Kind registers the files connector.
var Kind = connectors.Kind{
	Name:            "files",
	VerifiesSenders: true,
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
	// MaxAttachments is how many attachments of one .eml are read; the
	// rest are reported with pass.Skip ("over max_attachments") and
	// counted in the message's Meta["defects"]. Default
	// mail.DefaultMaxAttachments.
	MaxAttachments int `yaml:"max_attachments"`
	// Extract bounds the reading of PDF, DOCX and ODT files and .eml
	// attachments: pages, text, decompressed bytes and time per document
	// (the input is at most MaxFileBytes). A file that cannot be read
	// within them is reported with pass.Fail, naming why.
	Extract extract.Config `yaml:"extract"`
}

// DefaultInclude is the include list when the config gives none: every
// kind of file the connector reads. PDF, DOCX and ODT are in it, so a
// folder that holds them is read whole; an include list that names only
// some kinds leaves them out.
var DefaultInclude = []string{"**/*.md", "**/*.txt", "**/*.html", "**/*.htm", "**/*.eml", "**/*.pdf", "**/*.docx", "**/*.odt"}

// DefaultMaxFileBytes is the size cap when the config gives none.
const DefaultMaxFileBytes = 20 << 20

// Source is one files installation.
type Source struct {
	installation string
	cfg          Config
	log          *slog.Logger
	// listed, when set, runs between a pass's listing and its reads.
	// Tests use it to change the tree under a pass; production never sets
	// it.
	listed func()
	// authservID is the boundary MTA's authserv-id of the installation's
	// verified_senders: its .eml files' items report what that field
	// verified (mail.SenderFacts). "" without one.
	authservID string
}

var (
	_ ingestd.Source        = (*Source)(nil)
	_ connectors.ItemReader = (*Source)(nil)
)

// New builds a files installation from its settings: a Source that is
// also its ItemReader (a path, for `ingestd ingest PATH`; never from an
// API client, since a path names the server's own files). Errors are
// EINVALID and name the offending key.
func New(inst ingestd.Installation, s connectors.Settings) (connectors.Connector, error) {
	var cfg Config
	if s.Decode != nil {
		if err := s.Decode(&cfg); err != nil {
			return connectors.Connector{}, fmt.Errorf("decode files settings: %w", err)
		}
	}
	if cfg.Root != "" && !filepath.IsAbs(cfg.Root) && s.BaseDir != "" {
		cfg.Root = filepath.Join(s.BaseDir, cfg.Root)
	}
	src, err := NewSource(inst.ID, cfg, s.Logger)
	if err != nil {
		return connectors.Connector{}, err
	}
	if vs := inst.VerifiedSenders; vs != nil {
		src.authservID = vs.AuthservID
	}
	return connectors.Connector{Source: src, Reader: src}, nil
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
	var err error
	if cfg.Extract, err = cfg.Extract.Check("files.extract"); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Source{installation: installation, cfg: cfg, log: logger}, nil
}

// Config returns the source's configuration with defaults applied.
func (s *Source) Config() Config { return s.cfg }

// Sync walks the root and Puts every matching file, in lexical order.
// Hidden files and directories (".git", ".DS_Store") are skipped, and
// symlinks are never descended. Every listed file is read through the
// root (see tree): a symlink that leads outside the root or is absolute, a
// FIFO, socket, device or directory, a name that is not UTF-8 or holds a
// control character, are refused (a *RefusedError naming the rule) and
// reported with pass.Fail, as is a file that cannot be read or parsed; one
// over MaxFileBytes is reported with pass.Skip, and so is each .eml
// attachment over MaxAttachments; the pass goes on. pass.Total is raised
// by each .eml's attachments, so it is exact by the end. When the whole
// tree was listed, Sync calls pass.Complete so files removed since the
// last pass are tombstoned; when a directory could not be read it does not
// (its files would be tombstoned for nothing) and logs why.
//
// Every file is read on every pass; the pipeline skips unchanged content by
// hash. Before the reads, the header of every listed .eml is read to index
// Message-IDs, so that each message links to the files of its thread
// (see mailItems). A cursor of mtimes could skip reading, but a file skipped is
// neither Put nor Failed, and Complete would then tombstone it.
//
// It returns an error when the root is missing (ENOTFOUND) or not a
// directory (EINVALID), when ctx ends, or when pass.Put fails.
func (s *Source) Sync(ctx context.Context, pass ingestd.Pass) error {
	t, err := openTree(s.cfg.Root)
	if err != nil {
		return err
	}
	defer t.Close()
	files, complete, err := s.list(ctx, t)
	if err != nil {
		return err
	}
	if s.listed != nil {
		s.listed()
	}
	total := len(files)
	pass.Total(total)
	idx := indexThreads(t, files)
	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		items, att, err := readItems(ctx, t, s.installation, rel, s.readOptions(idx))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ingestd.ErrorCode(err) == ingestd.ETOOLARGE && !extract.IsLimit(err, "") && !isTimeout(err) {
			s.log.Warn("files: file over max_file_bytes skipped", "path", rel, "err", err)
			pass.Skip(rel, "over max_file_bytes")
			continue
		}
		if err != nil {
			pass.Fail(rel, err)
			continue
		}
		if n := len(items) - 1 + len(att.Over) + len(att.Failed); n > 0 { // an .eml's attachments
			total += n
			pass.Total(total)
		}
		for _, it := range items {
			if err := pass.Put(ctx, it); err != nil {
				return fmt.Errorf("put %s: %w", it.ExternalID, err)
			}
		}
		for _, id := range att.Over {
			pass.Skip(id, "over max_attachments")
		}
		for _, f := range att.Failed {
			pass.Fail(f.ExternalID, f.Err)
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
// source's root) as the items Sync would Put for it, through the root
// like Sync (see ReadItems). An .eml is linked to its thread as Sync links
// it, which reads the headers of the tree's other .eml files.
func (s *Source) ReadItems(rel string) ([]ingestd.Item, error) {
	return s.readRel(context.Background(), rel)
}

func (s *Source) readRel(ctx context.Context, rel string) ([]ingestd.Item, error) {
	t, err := openTree(s.cfg.Root)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	var idx threads
	if isEML(rel) {
		files, _, err := s.list(ctx, t)
		if err != nil {
			return nil, err
		}
		idx = indexThreads(t, files)
	}
	items, _, err := readItems(ctx, t, s.installation, rel, s.readOptions(idx))
	return items, err
}

// readOptions are the caps of the source's configuration and idx, the
// thread index of its .eml files.
func (s *Source) readOptions(idx threads) readOptions {
	return readOptions{maxFileBytes: s.cfg.MaxFileBytes, maxAttachments: s.cfg.MaxAttachments, extract: s.cfg.Extract, threads: idx,
		authservID: s.authservID}
}

// isTimeout reports whether err is a document not read in time.
func isTimeout(err error) bool {
	var te *extract.TimeoutError
	return errors.As(err, &te)
}

// ReadPath reads the file named by p as written on a command line
// (absolute, or relative to the working directory) as the items Sync would
// Put for it, for `ingestd ingest PATH`. p must name a regular file inside
// the root: it is made relative to the root as written, or else to the
// root's real folder through the real folder p is in (so a root that is a
// symlink can be named either way); its last element is left for the root
// to judge. A path outside the root is a *RefusedError (rule
// outside-root); the rest is as ReadItems.
func (s *Source) ReadPath(p string) ([]ingestd.Item, error) {
	return s.readPath(context.Background(), p)
}

func (s *Source) readPath(ctx context.Context, p string) ([]ingestd.Item, error) {
	rel, err := s.relPath(p)
	if err != nil {
		return nil, err
	}
	return s.readRel(ctx, rel)
}

// ReadOne is the files kind's connectors.ItemReader: ref is a path as
// ReadPath takes it. It returns ctx's error when ctx has ended.
func (s *Source) ReadOne(ctx context.Context, ref string) ([]ingestd.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.readPath(ctx, ref)
}

func (s *Source) relPath(p string) (string, error) {
	root, err := filepath.Abs(s.cfg.Root)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if rel, ok := inside(root, abs); ok {
		return rel, nil
	}
	realRoot, err1 := filepath.EvalSymlinks(root)
	realDir, err2 := filepath.EvalSymlinks(filepath.Dir(abs))
	if err1 == nil && err2 == nil {
		if rel, ok := inside(realRoot, filepath.Join(realDir, filepath.Base(abs))); ok {
			return rel, nil
		}
	}
	return "", &RefusedError{Path: p, Rule: "outside-root", Reason: fmt.Sprintf("%s is outside the root %s of installation %q", p, s.cfg.Root, s.installation)}
}

// inside returns p relative to root, slash-separated, when p lies in it.
func inside(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// list walks the tree and returns the slash paths, relative to the root,
// of the entries that match and are not directories, in lexical order,
// and whether every directory could be read. Regular files and symlinks
// are listed whatever they lead to; reading them decides.
func (s *Source) list(ctx context.Context, t *tree) ([]string, bool, error) {
	var out []string
	log := s.log.With("installation", s.installation)
	skipDir := func(rel, name string) bool {
		return strings.HasPrefix(name, ".") || s.excludedDir(rel) // .git
	}
	complete, err := t.walk(ctx, log, skipDir, func(rel string, d fs.DirEntry) error {
		if strings.HasPrefix(d.Name(), ".") { // .DS_Store, editor lock files
			return nil
		}
		if s.matches(rel) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, complete, nil
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
