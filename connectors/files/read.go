package files

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	htmlcharset "golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/extract"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// ReadItems reads one file as the items a sync of a files installation
// would Put for it, for `ingestd ingest FILE`. rel is the file's path
// relative to root (slash- or OS-separated); it becomes the external id.
// The file is read through the root as Sync reads it (see tree): a name
// that leads outside the root ("..", absolute, a symlink that leaves the
// root or is absolute), anything but a regular file and a name that is not
// UTF-8 or holds a control character are a *RefusedError (EINVALID)
// naming the rule. maxFileBytes <= 0 means DefaultMaxFileBytes; a larger
// file is ETOOLARGE. An .eml that is not a message is EINVALID, as is a
// file with NUL bytes in it (binary); a missing file is ENOTFOUND.
func ReadItems(installation, root, rel string, maxFileBytes int64) ([]ingestd.Item, error) {
	clean := filepath.ToSlash(rel)
	if rel != "" && !filepath.IsAbs(rel) {
		clean = path.Clean(clean)
	}
	if err := checkName(clean); err != nil {
		return nil, err
	}
	if maxFileBytes <= 0 {
		maxFileBytes = DefaultMaxFileBytes
	}
	s, err := NewSource(installation, Config{Root: root, MaxFileBytes: maxFileBytes}, nil)
	if err != nil {
		return nil, err
	}
	return s.ReadItems(clean)
}

// URI is the stable address of a file of an installation:
// files://<installation>/<rel>, percent-escaped. It names the installation
// rather than the machine path so it is the same on every node and does
// not leak the host's directory layout.
func URI(installation, rel string) string {
	return (&url.URL{Scheme: "files", Host: installation, Path: "/" + rel}).String()
}

// readOptions are the caps a file is read under.
type readOptions struct {
	maxFileBytes   int64
	maxAttachments int
	extract        extract.Config
	threads        threads // an .eml's thread, by Message-ID (see mailItems)
	authservID     string  // the boundary whose verification an .eml reports (mail.SenderFacts)
}

// readItems reads the file rel through t as its items; att holds what
// became of an .eml's attachments: the ids past maxAttachments and the
// documents that could not be read. o.threads links an .eml to the
// messages of its thread.
func readItems(ctx context.Context, t *tree, installation, rel string, o readOptions) (items []ingestd.Item, att mail.Attachments, err error) {
	data, fi, err := t.read(rel, o.maxFileBytes)
	if err != nil {
		return nil, mail.Attachments{}, err
	}
	return itemsFor(ctx, installation, rel, data, fi.ModTime(), o)
}

// itemsFor turns one file's bytes into its items: the file itself, and for
// an .eml its readable attachments as children and its links to the files
// of its thread (see mailItems). A PDF,
// DOCX or ODT file is read under o.extract into sections; one that cannot
// be read is an error naming why (an encrypted one: extract.ErrEncrypted),
// for pass.Fail: a file is its own document, with no parent to carry a
// defect.
func itemsFor(ctx context.Context, installation, rel string, data []byte, mtime time.Time, o readOptions) (items []ingestd.Item, att mail.Attachments, err error) {
	base := path.Base(rel)
	it := ingestd.Item{
		ExternalID: rel,
		ItemKind:   "file",
		URI:        URI(installation, rel),
		Title:      base,
		UpdatedAt:  mtime,
		Meta:       map[string]string{"path": rel, "size": strconv.Itoa(len(data))},
	}
	switch ext := strings.ToLower(path.Ext(rel)); ext {
	case ".eml":
		return mailItems(ctx, it, data, o)
	case ".pdf", ".docx", ".odt":
		f := extract.Detect(rel, "", data)
		if f == extract.Unknown {
			return nil, att, ingestd.Errorf(ingestd.EINVALID, "not a %s document (its first bytes say otherwise)", strings.ToUpper(ext[1:]))
		}
		doc, err := o.extract.Read(ctx, data, f, o.maxFileBytes)
		if err != nil {
			return nil, att, err
		}
		if doc.Title != "" {
			it.Title = doc.Title
		}
		it.Author = doc.Author
		it.Format, it.Sections = ingestd.FormatMarkdown, doc.ItemSections()
		doc.Describe(it.Meta)
		return []ingestd.Item{it}, att, nil
	case ".html", ".htm", ".xhtml":
		enc, name, _ := htmlcharset.DetermineEncoding(data, "text/html")
		utf, err := enc.NewDecoder().Bytes(data)
		if err != nil {
			return nil, att, fmt.Errorf("decode %s: %w", name, err)
		}
		title, text, err := mail.HTMLToText(bytes.NewReader(utf))
		if err != nil {
			return nil, att, err
		}
		if title != "" {
			it.Title = title
		}
		it.Text, it.Format = text, ingestd.FormatPlain
		it.Meta["source_format"] = "html"
		return []ingestd.Item{it}, att, nil
	case ".md", ".markdown", ".mdown", ".mkd":
		text, err := decodeText(data, it.Meta)
		if err != nil {
			return nil, att, err
		}
		if t := markdownTitle(text); t != "" {
			it.Title = t
		}
		it.Text, it.Format = text, ingestd.FormatMarkdown
		return []ingestd.Item{it}, att, nil
	default:
		text, err := decodeText(data, it.Meta)
		if err != nil {
			return nil, att, err
		}
		it.Text, it.Format = text, ingestd.FormatPlain
		return []ingestd.Item{it}, att, nil
	}
}

// decodeText returns data as UTF-8 text with "\n" line ends and no BOM.
// Bytes that are not UTF-8 are read as windows-1252 and noted in
// meta["defects"]; NUL bytes mean a binary file, EINVALID.
func decodeText(data []byte, meta map[string]string) (string, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return "", ingestd.Errorf(ingestd.EINVALID, "binary content (NUL bytes); not ingested as text")
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var s string
	if utf8.Valid(data) {
		s = string(data)
	} else {
		b, err := charmap.Windows1252.NewDecoder().Bytes(data)
		if err != nil {
			return "", fmt.Errorf("decode windows-1252: %w", err)
		}
		s = string(b)
		meta["defects"] = "not UTF-8; read as windows-1252"
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return s, nil
}

// markdownTitle returns a document's title: a `title:` in YAML front
// matter, else the first level-1 heading ("# Title" or a line underlined
// with "="), skipping fenced code. "" when there is none.
func markdownTitle(text string) string {
	lines := strings.Split(text, "\n")
	start := 0
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for i := 1; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if l == "---" || l == "..." {
				start = i + 1
				break
			}
			if v, ok := strings.CutPrefix(l, "title:"); ok {
				if t := strings.Trim(strings.TrimSpace(v), `"'`); t != "" {
					return t
				}
			}
		}
	}
	fence := ""
	for i := start; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if fence != "" {
			if strings.HasPrefix(l, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~") {
			fence = l[:3]
			continue
		}
		if t, ok := strings.CutPrefix(l, "# "); ok {
			if t = strings.TrimSpace(strings.TrimRight(t, "#")); t != "" {
				return t
			}
		}
		if l != "" && i+1 < len(lines) && isSetextH1(lines[i+1]) {
			return l
		}
	}
	return ""
}

func isSetextH1(l string) bool {
	l = strings.TrimSpace(l)
	return l != "" && strings.Trim(l, "=") == ""
}

// mailItems parses an .eml: the message is the file's item (ItemKind
// "mail"), and each text-like attachment with text and each PDF, DOCX or
// ODT attachment read is a child item (ItemKind "attachment") with
// external id "<rel>#attachment/<n>/<name>", n counting all the message's
// attachments from 1 so a binary attachment keeps its neighbours' ids
// stable, at most o.maxAttachments of them (see mail.AttachmentItems);
// att.Over are the ids of the rest and att.Failed the documents that
// could not be read. Message defects, and the attachments that could not
// be read, go to Meta["defects"].
//
// The file's identity is its path, not its Message-ID: two files holding
// messages with one Message-ID are two documents whatever they hold, and
// no file can take another's place. The message links to the files of its
// thread that o.threads knows: "reply" to the one its In-Reply-To names,
// "thread" to those of its References, as the imap connector links them.
func mailItems(ctx context.Context, it ingestd.Item, data []byte, o readOptions) ([]ingestd.Item, mail.Attachments, error) {
	m, err := mail.Parse(data, &mail.Options{MaxMessageBytes: int64(len(data))})
	if err != nil {
		return nil, mail.Attachments{}, err
	}
	it.ItemKind = "mail"
	if m.Subject != "" {
		it.Title = m.Subject
	}
	it.Author, it.CreatedAt = m.From, m.Date
	it.Text, it.Format = m.Text, ingestd.FormatMail
	setNonEmpty(it.Meta, "message_id", m.MessageID)
	setNonEmpty(it.Meta, "in_reply_to", m.InReplyTo)
	setNonEmpty(it.Meta, "references", strings.Join(m.References, " "))
	setNonEmpty(it.Meta, "defects", strings.Join(m.Defects, "; "))
	it.Links = o.threads.links(it.ExternalID, m.InReplyTo, m.References)
	att, err := mail.AttachmentItems(ctx, it, m, mail.AttachmentOptions{
		Max: o.maxAttachments, Meta: map[string]string{"path": it.Meta["path"]}, Extract: o.extract})
	if err != nil {
		return nil, mail.Attachments{}, err
	}
	mail.AddDefect(it.Meta, att.Defect)
	for k, v := range mail.SenderFacts(m, o.authservID) {
		it.Meta[k] = v // the message's own item only: never its children
	}
	return append([]ingestd.Item{it}, att.Children...), att, nil
}

func setNonEmpty(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
