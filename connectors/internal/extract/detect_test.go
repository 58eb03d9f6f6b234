package extract

import (
	"testing"
)

func TestDetect(t *testing.T) {
	pdf := MustRead(t, "testdata/fixtures/handbook.pdf")[:HeadBytes]
	docx := MustRead(t, "testdata/fixtures/handbook.docx")[:HeadBytes]
	odt := MustRead(t, "testdata/fixtures/handbook.odt")[:HeadBytes]
	tests := []struct {
		name, file, ctype string
		head              []byte
		want              Format
	}{
		{"pdf by content", "", "", pdf, PDF},
		{"pdf whatever its name", "report.docx", MediaTypeDOCX, pdf, PDF},
		{"pdf after leading junk, named a pdf", "scan.pdf", "", append([]byte("junk\r\n"), pdf...), PDF},
		{"text that quotes a pdf header", "notes.txt", "text/plain", []byte("the file began with %PDF-1.4 and then"), Unknown},
		{"docx by content", "", "", docx, DOCX},
		{"odt by content", "", "", odt, ODT},
		{"odt whatever its name", "x.docx", "", odt, ODT},
		{"docx written by Word (content types first)", "a.docx", "", []byte("PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00[Content_Types].xml"), DOCX},
		{"ods is not odt", "sheet.odt", "", []byte("PK\x03\x04\x14\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00mimetypeapplication/vnd.oasis.opendocument.spreadsheet"), Unknown},
		{"zip named pdf", "x.pdf", "", []byte("PK\x03\x04rest"), Unknown},
		{"plain text named pdf", "notes.pdf", MediaTypePDF, []byte("hello"), Unknown},
		{"media type alone", "", "application/pdf; name=x", nil, PDF},
		{"media type of docx alone", "", MediaTypeDOCX, nil, DOCX},
		{"name alone", `C:\Users\x\Rechnung.PDF`, "", nil, PDF},
		{"odt name alone", "brief.odt", "application/octet-stream", nil, ODT},
		{"nothing", "a.txt", "text/plain", nil, Unknown},
		{"empty", "", "", nil, Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Detect(tt.file, tt.ctype, tt.head); got != tt.want {
				t.Errorf("Detect(%q, %q, %.20q) = %q, want %q", tt.file, tt.ctype, tt.head, got, tt.want)
			}
		})
	}
}
