package files_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/files"
)

// newPass returns a pass whose Delete fails: the files connector never
// deletes.
func newPass() *connectortest.Pass {
	return connectortest.New(&connectortest.Options{DeleteErr: errors.New("files never deletes")})
}

// fileIDs is the external ids of the items Put that are files, not
// attachments, in order.
func fileIDs(p *connectortest.Pass) []string {
	var ids []string
	for _, it := range p.Puts() {
		if it.ParentExternalID == "" {
			ids = append(ids, it.ExternalID)
		}
	}
	return ids
}

// MustCopyTree copies testdata/<name> into a fresh temp dir and returns it.
func MustCopyTree(tb testing.TB, name string) string {
	tb.Helper()
	dst := tb.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", name))); err != nil {
		tb.Fatal(err)
	}
	return dst
}

// MustSource builds a files source the way cmd does: from a YAML `files:`
// block decoded with unknown keys rejected.
func MustSource(tb testing.TB, id, block string) ingestd.Source {
	tb.Helper()
	src, err := newSource(id, block)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

func newSource(id, block string) (ingestd.Source, error) {
	c, err := newConnector(id, block)
	return c.Source, err
}

func newConnector(id, block string) (connectors.Connector, error) {
	reg := connectors.NewRegistry(files.Kind)
	return reg.Build(ingestd.Installation{ID: id, Kind: "files", Tier: ingestd.TierTrustedInternal},
		connectors.Settings{Decode: yamlDecoder(block)})
}

func yamlDecoder(block string) func(any) error {
	return func(v any) error {
		dec := yaml.NewDecoder(strings.NewReader(block))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
}

// MustSync runs one pass and returns what it reported.
func MustSync(tb testing.TB, src ingestd.Source) *connectortest.Pass {
	tb.Helper()
	rec := newPass()
	if err := src.Sync(context.Background(), rec); err != nil {
		tb.Fatal(err)
	}
	return rec
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func TestSync(t *testing.T) {
	root := MustCopyTree(t, "basic")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "notes.md"), []byte("# git internals"), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "notes", "plain.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	rec := MustSync(t, MustSource(t, "handbook", "root: "+quote(root)))

	if got, want := fileIDs(rec), []string{
		"handbook.md", "mail/support.eml", "notes/front.md", "notes/latin1.htm",
		"notes/page.html", "notes/plain.txt", "vendor/lib/readme.md",
	}; !slices.Equal(got, want) {
		t.Errorf("files = %q, want %q", got, want)
	}
	if got, want := rec.LastTotal(), 10; got != want { // the files above, mail/broken.eml and support.eml's 2 attachments
		t.Errorf("Total = %d, want %d", got, want)
	}
	rec.MustTotalSeen(t)
	if err := rec.Fails()["mail/broken.eml"]; ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("broken.eml failure = %v, want EINVALID", err)
	}
	if len(rec.Fails()) != 1 {
		t.Errorf("fails = %v, want only mail/broken.eml", rec.Fails())
	}
	if !rec.Completed() {
		t.Error("Complete not called")
	}

	for _, tt := range []struct {
		id, title, format, text string
	}{
		{"handbook.md", "Employee Handbook", ingestd.FormatMarkdown, "Welcome to the handbook."},
		{"notes/front.md", "On-call rota", ingestd.FormatMarkdown, "Rotate weekly."},
		{"notes/plain.txt", "plain.txt", ingestd.FormatPlain, "Plain notes.\nSecond line.\n"},
		{"notes/page.html", "Release & Deploy", ingestd.FormatPlain, "Deploy\n\nRun the pipeline.\n\n- build\n- ship"},
		{"notes/latin1.htm", "latin1.htm", ingestd.FormatPlain, "Café crème"},
		{"mail/support.eml", "Printer on fire 🔥", ingestd.FormatMail, "The printer on floor 3 is on fire again."},
	} {
		it := rec.MustPut(t, tt.id)
		if it.Title != tt.title {
			t.Errorf("%s: Title = %q, want %q", tt.id, it.Title, tt.title)
		}
		if it.Format != tt.format {
			t.Errorf("%s: Format = %q, want %q", tt.id, it.Format, tt.format)
		}
		if !strings.Contains(it.Text, tt.text) {
			t.Errorf("%s: Text = %q, want it to contain %q", tt.id, it.Text, tt.text)
		}
		if it.URI != "files://handbook/"+tt.id {
			t.Errorf("%s: URI = %q", tt.id, it.URI)
		}
		if it.Meta["path"] != tt.id {
			t.Errorf("%s: Meta[path] = %q", tt.id, it.Meta["path"])
		}
	}
	if got := rec.MustPut(t, "notes/plain.txt").UpdatedAt; !got.Equal(mtime) {
		t.Errorf("UpdatedAt = %v, want the file's mtime %v", got, mtime)
	}
	if got := rec.MustPut(t, "notes/page.html").Text; strings.Contains(got, "ignored") {
		t.Errorf("script text leaked: %q", got)
	}

	m := rec.MustPut(t, "mail/support.eml")
	if m.ItemKind != "mail" || m.Author != "Erin Example <erin@example.com>" ||
		!m.CreatedAt.Equal(time.Date(2025, 7, 1, 9, 30, 0, 0, time.UTC)) ||
		m.Meta["message_id"] != "printer-1@example.com" || m.Meta["in_reply_to"] != "printer-0@example.com" {
		t.Errorf("mail item = %+v", m)
	}
	csv := rec.MustPut(t, "mail/support.eml#attachment/1/log.csv")
	if csv.ParentExternalID != "mail/support.eml" || csv.ItemKind != "attachment" ||
		csv.Text != "time,event\n09:00,smoke" || csv.URI != "files://handbook/mail/support.eml#attachment/1/log.csv" {
		t.Errorf("csv attachment = %+v", csv)
	}
	fwd := rec.MustPut(t, "mail/support.eml#attachment/3/earlier.eml")
	if fwd.ParentExternalID != "mail/support.eml" || fwd.Format != ingestd.FormatMail ||
		!strings.Contains(fwd.Text, "It started smoking yesterday.") || !strings.Contains(fwd.Text, "Subject: Printer smoking") {
		t.Errorf("forwarded attachment = %+v", fwd)
	}
	for _, id := range rec.PutIDs() {
		if strings.Contains(id, "photo.png") {
			t.Errorf("binary attachment became an item: %s", id)
		}
	}
}

func TestSync_Deterministic(t *testing.T) {
	root := MustCopyTree(t, "basic")
	src := MustSource(t, "h", "root: "+quote(root))
	a, b := MustSync(t, src).Puts(), MustSync(t, src).Puts()
	if len(a) != len(b) {
		t.Fatalf("%d items then %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ExternalID != y.ExternalID || x.Text != y.Text || x.Title != y.Title || x.URI != y.URI {
			t.Errorf("item %d differs between passes: %q vs %q", i, x.ExternalID, y.ExternalID)
		}
	}
}

func TestSync_IncludeExclude(t *testing.T) {
	root := MustCopyTree(t, "basic")
	for _, tt := range []struct {
		name  string
		block string
		want  []string
	}{
		{
			name:  "exclude a directory",
			block: `exclude: ["vendor/**", "mail/**"]`,
			want:  []string{"handbook.md", "notes/front.md", "notes/latin1.htm", "notes/page.html", "notes/plain.txt"},
		},
		{
			name:  "markdown only, notes excluded",
			block: "include: [\"**/*.md\"]\nexclude: [\"notes/*\"]",
			want:  []string{"handbook.md", "vendor/lib/readme.md"},
		},
		{
			name:  "root level only",
			block: `include: ["*.md"]`,
			want:  []string{"handbook.md"},
		},
		{
			name:  "brace alternatives",
			block: `include: ["notes/*.{txt,htm}"]`,
			want:  []string{"notes/latin1.htm", "notes/plain.txt"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)+"\n"+tt.block))
			if got := fileIDs(rec); !slices.Equal(got, tt.want) {
				t.Errorf("files = %q, want %q", got, tt.want)
			}
			if !rec.Completed() {
				t.Error("Complete not called")
			}
		})
	}
}

func TestSync_BinaryIncluded(t *testing.T) {
	root := MustCopyTree(t, "basic")
	rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)+"\ninclude: [\"notes/*.png\"]"))
	if err := rec.Fails()["notes/image.png"]; ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("image.png failure = %v, want EINVALID (binary)", err)
	}
}

func TestSync_TooBig(t *testing.T) {
	root := MustCopyTree(t, "basic")
	rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)+"\nmax_file_bytes: 120"))
	// handbook.md is 157 bytes; so are two others over 120.
	if got := rec.Skips(); len(got) == 0 || got[0] != (connectortest.Skip{ExternalID: "handbook.md", Reason: "over max_file_bytes"}) || rec.SkipCount("over max_file_bytes") != len(got) {
		t.Errorf("skips = %+v, want handbook.md first, each over max_file_bytes", got)
	}
	if !slices.Contains(fileIDs(rec), "notes/plain.txt") {
		t.Errorf("pass stopped at the big file: %q", fileIDs(rec))
	}
	if !rec.Completed() {
		t.Error("Complete not called")
	}
}

func TestSync_Unreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions do not stop reads")
	}
	root := MustCopyTree(t, "basic")
	if err := os.Chmod(filepath.Join(root, "handbook.md"), 0); err != nil {
		t.Fatal(err)
	}
	rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)))
	if err := rec.Fails()["handbook.md"]; !errors.Is(err, fs.ErrPermission) {
		t.Errorf("handbook.md failure = %v, want permission denied", err)
	}
	if !slices.Contains(fileIDs(rec), "notes/plain.txt") || !rec.Completed() {
		t.Errorf("pass did not go on: files %q, complete %v", fileIDs(rec), rec.Completed())
	}

	// An unreadable directory means the listing is partial: no Complete,
	// or its files would be tombstoned.
	notes := filepath.Join(root, "notes")
	if err := os.Chmod(notes, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(notes, 0o755) })
	rec = MustSync(t, MustSource(t, "h", "root: "+quote(root)))
	if rec.Completed() {
		t.Error("Complete called after a directory could not be read")
	}
}

func TestSync_RootErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, root, wantErr string
	}{
		{name: "missing", root: filepath.Join(dir, "nope"), wantErr: ingestd.ENOTFOUND},
		{name: "not a directory", root: file, wantErr: ingestd.EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newPass()
			err := MustSource(t, "h", "root: "+quote(tt.root)).Sync(context.Background(), rec)
			if got := ingestd.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("error %v, want code %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.root) {
				t.Errorf("error %q does not name the root", err)
			}
			if rec.Completed() || len(rec.Totals()) != 0 {
				t.Error("a failed walk reported Total or Complete")
			}
		})
	}
}

func TestSync_Stops(t *testing.T) {
	root := MustCopyTree(t, "basic")
	src := MustSource(t, "h", "root: "+quote(root))

	putErr := errors.New("store down")
	rec := newPass()
	rec.SetPutErr(putErr)
	if err := src.Sync(context.Background(), rec); !errors.Is(err, putErr) {
		t.Errorf("Sync = %v, want the Put error", err)
	}
	if rec.Completed() {
		t.Error("Complete called after Put failed")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec = newPass()
	if err := src.Sync(ctx, rec); !errors.Is(err, context.Canceled) {
		t.Errorf("Sync = %v, want context.Canceled", err)
	}
	if rec.Completed() {
		t.Error("Complete called after cancel")
	}
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		name    string
		block   string
		wantErr string
		wantMsg string
	}{
		{name: "defaults", block: "root: ./x"},
		{name: "no root", block: "include: [\"*.md\"]", wantErr: ingestd.EINVALID, wantMsg: "files.root"},
		{name: "empty block", block: "", wantErr: ingestd.EINVALID, wantMsg: "files.root"},
		{name: "bad include glob", block: "root: x\ninclude: [\"[\"]", wantErr: ingestd.EINVALID, wantMsg: "files.include[0]"},
		{name: "bad exclude glob", block: "root: x\nexclude: [\"ok\", \"{a\"]", wantErr: ingestd.EINVALID, wantMsg: "files.exclude[1]"},
		{name: "negative max", block: "root: x\nmax_file_bytes: -1", wantErr: ingestd.EINVALID, wantMsg: "files.max_file_bytes"},
		{name: "unknown key", block: "root: x\nroots: y", wantErr: ingestd.EINTERNAL, wantMsg: "roots"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newConnector("h", tt.block)
			if tt.block == "" {
				c, err = files.New(ingestd.Installation{ID: "h"}, connectors.Settings{})
			}
			if got := ingestd.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("error %v, want code %q", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("error %q does not name %q", err, tt.wantMsg)
				}
				return
			}
			cfg := c.Source.(*files.Source).Config()
			if cfg.Root != "x" || !slices.Equal(cfg.Include, files.DefaultInclude) || cfg.MaxFileBytes != files.DefaultMaxFileBytes {
				t.Errorf("defaults not applied: %+v", cfg)
			}
			// A path names the server's files: the command line may give
			// one, an API client may not.
			if c.Reader == nil || c.RemoteRefs || c.Watcher != nil || c.Intake != nil {
				t.Errorf("abilities = %+v, want a Reader of local references only", c)
			}
		})
	}
}

func TestKind_AllowsEveryTier(t *testing.T) {
	reg := connectors.NewRegistry(files.Kind)
	for _, tier := range []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, ingestd.TierMachineGenerated} {
		if err := reg.Check(ingestd.Installation{ID: "x", Kind: "files", Tier: tier}); err != nil {
			t.Errorf("tier %s: %v", tier, err)
		}
	}
}

func TestReadItems(t *testing.T) {
	root := filepath.Join("testdata", "basic")
	for _, tt := range []struct {
		name    string
		rel     string
		max     int64
		wantIDs []string
		wantErr string
	}{
		{name: "markdown", rel: "handbook.md", wantIDs: []string{"handbook.md"}},
		{name: "os separators", rel: filepath.Join("notes", "plain.txt"), wantIDs: []string{"notes/plain.txt"}},
		{name: "mail with attachments", rel: "mail/support.eml", wantIDs: []string{
			"mail/support.eml", "mail/support.eml#attachment/1/log.csv", "mail/support.eml#attachment/3/earlier.eml"}},
		{name: "not a message", rel: "mail/broken.eml", wantErr: ingestd.EINVALID},
		{name: "escapes root", rel: "../files_test.go", wantErr: ingestd.EINVALID},
		{name: "absolute", rel: "/etc/passwd", wantErr: ingestd.EINVALID},
		{name: "empty", rel: "", wantErr: ingestd.EINVALID},
		{name: "too big", rel: "handbook.md", max: 10, wantErr: ingestd.ETOOLARGE},
		{name: "missing", rel: "nope.md", wantErr: ingestd.ENOTFOUND},
	} {
		t.Run(tt.name, func(t *testing.T) {
			items, err := files.ReadItems("h", root, tt.rel, tt.max)
			if got := ingestd.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("error %v, want code %q", err, tt.wantErr)
			}
			var ids []string
			for _, it := range items {
				ids = append(ids, it.ExternalID)
			}
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("ids = %q, want %q", ids, tt.wantIDs)
			}
		})
	}
}

func TestURI(t *testing.T) {
	if got, want := files.URI("hand book", "dir/a b#1.md"), "files://hand%20book/dir/a%20b%231.md"; got != want {
		t.Errorf("URI = %q, want %q", got, want)
	}
}
