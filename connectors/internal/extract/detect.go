package extract

import (
	"bytes"
	"mime"
	"path"
	"strings"
)

// Media types of the formats.
const (
	MediaTypePDF  = "application/pdf"
	MediaTypeDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	MediaTypeODT  = "application/vnd.oasis.opendocument.text"
)

// HeadBytes is how much of the start of a file Detect wants to see.
const HeadBytes = 1024

// Detect says which format a file is from its name, its declared media
// type and the first bytes of its content (head; HeadBytes or fewer).
//
// The content decides when there is any: a head that is neither a PDF nor
// a zip archive is Unknown whatever the name says, and a PDF named
// "x.docx" is a PDF. A PDF starts with "%PDF-", or has it in its first
// KiB when its name or media type says PDF. A zip archive is an ODT when it says so in its
// "mimetype" entry, a DOCX when its first entries are WordprocessingML's,
// Unknown when they are a spreadsheet's or a presentation's, and otherwise
// what its name or media type says; an Office Open XML package with no
// name or media type is taken for a DOCX (Extract then says if it is
// not). With an empty head, the media type and then the name decide.
func Detect(name, contentType string, head []byte) Format {
	byLabel := labelFormat(name, contentType)
	if len(head) == 0 {
		return byLabel
	}
	if len(head) > HeadBytes {
		head = head[:HeadBytes]
	}
	// A PDF starts with its header; readers accept junk before it within
	// the first KiB, which is believed only of a file labelled a PDF (a
	// text that quotes "%PDF-" stays text).
	if bytes.HasPrefix(head, []byte("%PDF-")) || byLabel == PDF && bytes.Contains(head, []byte("%PDF-")) {
		return PDF
	}
	if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return Unknown
	}
	// ODF puts an uncompressed "mimetype" entry first (ODF 1.2 part 3,
	// 3.3), so its value is in the clear right after the local header.
	if bytes.Contains(head, []byte("mimetype"+MediaTypeODT)) {
		return ODT
	}
	if bytes.Contains(head, []byte("mimetypeapplication/")) {
		return Unknown // another OpenDocument type: a spreadsheet, a drawing
	}
	if bytes.Contains(head, []byte("word/")) {
		return DOCX
	}
	if bytes.Contains(head, []byte("xl/")) || bytes.Contains(head, []byte("ppt/")) {
		return Unknown // a spreadsheet or a presentation
	}
	if byLabel == PDF {
		return Unknown // a zip is not a PDF whatever its name
	}
	if byLabel == Unknown && (bytes.Contains(head, []byte("[Content_Types].xml")) || bytes.Contains(head, []byte("_rels/.rels"))) {
		return DOCX // an Office Open XML package that says nothing else
	}
	return byLabel
}

// labelFormat is the format a name or a media type says, media type first.
func labelFormat(name, contentType string) Format {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		switch strings.ToLower(mt) {
		case MediaTypePDF, "application/x-pdf":
			return PDF
		case MediaTypeDOCX:
			return DOCX
		case MediaTypeODT:
			return ODT
		}
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".pdf":
		return PDF
	case ".docx":
		return DOCX
	case ".odt":
		return ODT
	}
	return Unknown
}
