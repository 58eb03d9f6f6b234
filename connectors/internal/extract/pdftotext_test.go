package extract

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestAgainstPdftotext compares the text of every fixture PDF, page by
// page, with poppler's pdftotext -layout: the same characters (at least
// 99 % in common, in any order) and mostly the same words in the same
// order (at least 95 % of the longer word sequence in a common
// subsequence). Layout markup (headings' "#", list markers, table bars) is
// not compared, nor the order of right-to-left words: the text layer holds
// them in visual order, which pdftotext reorders and we do not.
func TestAgainstPdftotext(t *testing.T) {
	bin := os.Getenv("INGESTD_TEST_PDFTOTEXT")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("pdftotext"); err != nil {
			t.Skip("set INGESTD_TEST_PDFTOTEXT to pdftotext, or put it on PATH (Debian: poppler-utils), to cross-check PDF text")
		}
	}
	m, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*.pdf"))
	for _, path := range m {
		d := MustExtract(t, path, MustRead(t, path), nil)
		for _, s := range d.Sections {
			page := strconv.Itoa(s.Page)
			out, err := exec.Command(bin, "-q", "-layout", "-enc", "UTF-8", "-f", page, "-l", page, path, "-").Output()
			if err != nil {
				t.Fatalf("pdftotext %s p. %s: %v", path, page, err)
			}
			ours, theirs := words(s.Text), words(string(out))
			chars := runeOverlap(strings.Join(ours, ""), strings.Join(theirs, ""))
			ours, theirs = ltr(ours), ltr(theirs)
			order := float64(lcs(ours, theirs)) / float64(max(len(ours), len(theirs), 1))
			t.Logf("%s %s: %d words vs %d, characters in common %.3f, words in order %.3f", filepath.Base(path), s.Locator, len(ours), len(theirs), chars, order)
			if chars < 0.99 || order < 0.95 {
				t.Errorf("%s %s differs from pdftotext: characters %.3f, order %.3f\nours:   %q\ntheirs: %q", path, s.Locator, chars, order, ours, theirs)
			}
		}
	}
}

// words splits text into words without layout markup: Markdown heading
// marks, list bullets and table bars go, and a list label glued to its
// word ("1.Back", as LibreOffice draws them) is split off.
func words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("#•◦▪|", r) || r == '\u202a' || r == '\u202b' || r == '\u202c'
	}) {
		if strings.Trim(w, "-") == "" {
			continue
		}
		if i := strings.IndexAny(w, ".)"); i > 0 && i <= 3 && i+1 < len(w) && !unicode.IsSpace(rune(w[i+1])) {
			if label := w[:i]; strings.Trim(label, "0123456789") == "" || len(label) == 1 && label[0] >= 'a' && label[0] <= 'z' {
				if r := rune(w[i+1]); unicode.IsLetter(r) {
					out = append(out, w[:i+1], w[i+1:]) // "1.Back" -> "1." "Back"
					continue
				}
			}
		}
		out = append(out, w)
	}
	return out
}

// ltr drops the words that hold right-to-left letters.
func ltr(ws []string) []string {
	out := ws[:0:0]
	for _, w := range ws {
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.In(r, unicode.Arabic, unicode.Hebrew) }) {
			out = append(out, w)
		}
	}
	return out
}

// runeOverlap returns the share of characters a and b have in common,
// counted as multisets, over the larger of the two.
func runeOverlap(a, b string) float64 {
	count := map[rune]int{}
	na, nb := 0, 0
	for _, r := range a {
		count[r]++
		na++
	}
	common := 0
	for _, r := range b {
		nb++
		if count[r] > 0 {
			count[r]--
			common++
		}
	}
	return float64(common) / float64(max(na, nb, 1))
}

// lcs returns the length of the longest common subsequence of a and b.
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
