package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// sharedTestdata holds real attack texts and payloads (see testdata/NOTICE.md).
const sharedTestdata = "testdata"

// hostile is one attack document: a name for reports, where it came from
// (a row of the table in docs/SECURITY.md), a subject line and a body.
type hostile struct {
	Name    string // unique, safe for a file name
	Origin  string // "attack_strings", "bipia_email", "escape"
	Subject string
	Body    string
}

// MustHostileCorpus loads every attack string, every injected BIPIA email,
// the firewall package's escape cases and this package's own escape cases.
// It fails the test when a source is missing: a corpus that silently shrank
// would prove nothing.
func MustHostileCorpus(tb testing.TB) []hostile {
	tb.Helper()
	var out []hostile

	inj := filepath.Join(sharedTestdata, "injections")
	for _, row := range mustJSONL[struct {
		ID, Text, Category string
	}](tb, filepath.Join(inj, "attack_strings.jsonl")) {
		out = append(out, hostile{Name: "attack-" + slug(row.ID), Origin: "attack_strings", Subject: row.Category, Body: row.Text})
	}
	for _, row := range mustJSONL[struct {
		ID      string `json:"id"`
		Attack  string `json:"attack_str"`
		Context string `json:"context"`
	}](tb, filepath.Join(inj, "bipia", "injected_emails_sample.jsonl")) {
		subj, body := bipiaMail(row.Context)
		out = append(out, hostile{Name: "bipia-" + slug(row.ID), Origin: "bipia_email", Subject: subj, Body: body})
	}
	for _, dir := range []string{"../firewall/testdata/escape", "testdata/escape"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name(), "input.txt"))
			if err != nil {
				tb.Fatal(err)
			}
			body := string(b)
			// The subject carries the attack too: titles reach the fence's
			// origin attribute.
			subj, _, _ := strings.Cut(body, "\n")
			out = append(out, hostile{Name: "escape-" + e.Name(), Origin: "escape", Subject: subj, Body: body})
		}
	}
	if len(out) < 150 {
		tb.Fatalf("hostile corpus has %d documents; testdata is incomplete", len(out))
	}
	return out
}

func mustJSONL[T any](tb testing.TB, path string) []T {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(out) == 0 {
		tb.Fatalf("%s is empty", path)
	}
	return out
}

// bipiaMail splits a BIPIA email context ("SUBJECT: …|EMAIL_FROM: …|
// RECEIVED DATE: …|CONTENT: …", the attack before or after it) into a
// subject and a body. Whatever precedes SUBJECT (a start-placed attack)
// stays in the body.
func bipiaMail(ctx string) (subject, body string) {
	i := strings.Index(ctx, "SUBJECT: ")
	if i < 0 {
		return "", ctx
	}
	pre := ctx[:i]
	rest := ctx[i+len("SUBJECT: "):]
	subject, rest, _ = strings.Cut(rest, "|")
	if _, content, ok := strings.Cut(rest, "CONTENT: "); ok {
		rest = content
	}
	return subject, pre + rest
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// queryWords builds a retrieval query from a document's own words: its
// first words that hold a letter or digit, at most n of them.
func queryWords(s string, n int) string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	var out []string
	seen := map[string]bool{}
	for _, f := range fields {
		if len(out) == n {
			break
		}
		if k := strings.ToLower(f); !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// rawMail renders h as an RFC 5322 message with the Message-ID
// <name@e2e.test>: the subject RFC 2047-encoded, the body base64 so any
// byte survives transport.
func rawMail(h hostile, date time.Time) []byte {
	subj := strings.ToValidUTF8(h.Subject, "\uFFFD")
	subj = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, subj)
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: Stranger <stranger@outside.example>\r\n")
	fmt.Fprintf(&b, "To: support@example.com\r\n")
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.BEncoding.Encode("utf-8", subj))
	fmt.Fprintf(&b, "Date: %s\r\n", date.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@e2e.test>\r\n", h.Name)
	fmt.Fprintf(&b, "MIME-Version: 1.0\r\n")
	fmt.Fprintf(&b, "Content-Type: text/plain; charset=utf-8\r\n")
	fmt.Fprintf(&b, "Content-Transfer-Encoding: base64\r\n\r\n")
	enc := base64.StdEncoding.EncodeToString([]byte(h.Body))
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	return b.Bytes()
}

// tally counts what a hostile run tried and found, for the report.
type tally struct {
	byOrigin    map[string]int
	stored      int
	refused     map[string]string // name → why the connector or pipeline refused it (never stored)
	chunks      int
	escapes     int
	toolsWithUT int
	retrieved   int
}

func newTally() *tally { return &tally{byOrigin: map[string]int{}, refused: map[string]string{}} }

func (t *tally) String() string {
	var origins []string
	for o, n := range t.byOrigin {
		origins = append(origins, fmt.Sprintf("%s=%d", o, n))
	}
	sort.Strings(origins)
	return fmt.Sprintf("tried %s; stored %d (%d chunks); refused at intake %d; retrieved %d; fence escapes %d; verdicts allowing tools with untrusted text %d",
		strings.Join(origins, " "), t.stored, t.chunks, len(t.refused), t.retrieved, t.escapes, t.toolsWithUT)
}
