// Package skelgen builds the skeleton table that the fence's marker
// detector reads (firewall/skeleton_table.go), from Unicode data only:
//
//   - the UTS #39 confusable prototypes of confusables.txt, Unicode 17.0.0,
//     as go.mau.fi/util/confusable compiles them (its GetReplacement);
//   - compatibility decomposition (NFKD) and character names, from
//     golang.org/x/text (Unicode 15.0.0);
//   - general categories, case mappings and the White_Space and
//     Default_Ignorable properties of the Go standard library.
//
// One list is by hand, because no Unicode data holds it: Leet, the
// stand-ins leetspeak writes for letters. Every other rule below is
// stated over those properties. The generated file is committed; firewall's tests regenerate
// it and fail when it differs (run `go generate ./firewall`). The data is
// Unicode's, under the Unicode License v3 (LICENSE-UNICODE).
//
// go.mau.fi/util (MPL-2.0, unmodified) is imported by this package only, so
// by the generator and firewall's tests: ingestd's binaries carry the
// generated table, not its code. It was chosen as the maintained Go module
// that compiles the newest confusables.txt; swapping it for another source
// of the same data means changing prototype() alone.
//
// # Symbols
//
// Every character stands for a string of symbols:
//
//	a d e g i n s t   a letter of the marker keyword, whatever its case or look
//	A D E G I N S T   the same letter, or nothing: punctuation or a
//	                  mathematical or currency symbol that looks like or is
//	                  written for the letter ('|' and '!' for I, '@' for A,
//	                  '$' for S, '+' for T), which a reader may take for the
//	                  letter or for a separator
//	x                 any other letter or digit
//	<                 the start of a marker
//	.                 anything else visible: punctuation, symbols
//	(nothing)         white space, combining marks and default-ignorable
//	                  characters (zero-width, soft hyphen, variation selectors)
//
// A character's symbols are found in this order:
//
//  1. White space, marks and default-ignorables stand for nothing.
//  2. A character with a compatibility decomposition stands for the symbols
//     of its decomposition (full-width, mathematical, circled, superscript
//     and small forms; ligatures).
//  3. '<', a character whose UTS #39 prototype is '<', and a non-letter
//     whose prototype is '❬' (the prototype of the angle brackets 〈 〈 ⟨)
//     stand for '<'.
//  4. A character stands for a keyword letter when any of its case
//     variants has the skeleton of the letter in either case, or when it
//     is, or its prototype chain passes through, a stand-in that
//     leetspeak writes for the letter (see Leet). The skeleton of a single
//     character is found by repeating, until nothing changes: its UTS #39
//     prototype (marks dropped), lower case, and, for a character whose
//     Unicode name says it is a form of a Latin letter ("LATIN LETTER SMALL
//     CAPITAL D", "NEGATIVE SQUARED LATIN CAPITAL LETTER D", "REGIONAL
//     INDICATOR SYMBOL LETTER D"), that letter. So 'I', 'l', '1', '|' and
//     Lisu 'ꓲ' all have the skeleton of 'I'; 'т' has the prototype 'ᴛ', a
//     small capital T; '5', and Latin 'Ƽ' whose prototype is '5', stand
//     for S. The skeleton decides before leetspeak. The letter is in upper
//     case when the character is punctuation or a mathematical or currency
//     symbol.
//  5. A character whose prototype is several characters stands for their
//     symbols ("m" looks like "rn").
//  6. Otherwise a decimal digit stands for 'x', and the prototype decides:
//     a letter or digit 'x', anything else '.'.
//
// Every digit stands for the letters it looks like or is written for, and
// for nothing else, however many of them a keyword holds. The keyword's
// 'n' has no such digit or symbol, so no number, hash or date can spell
// the keyword.
package skelgen

import (
	"bytes"
	"fmt"
	"go/format"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

// ConfusablesVersion is the Unicode version of the confusable prototypes.
// go.mau.fi/util generates its table from that version's confusables.txt
// (go.mau.fi/util/unicodeurls.UnicodeVersion).
const ConfusablesVersion = "17.0.0"

// Symbol bytes besides the keyword's letters (lower case: the letter; upper
// case: the letter or nothing).
const (
	Other = 'x'
	Open  = '<'
	Punct = '.'
)

// Leet maps each stand-in that leetspeak writes for a letter to the
// letters it is written for: the digits and symbols of the common
// substitution table (0 for O or D, 1 for I or L, 3 for E, 4 for A, 5 for
// S, 6 and 9 for G, 7 for T, 8 for B, @ for A, $ for S, | and ! for I or
// L, + for T). It is the only list by hand: Unicode's confusables tie '0'
// to 'O' and '1' and '|' to 'l', but no digit to another letter.
// Characters that look like a stand-in (full-width '５', Latin 'Ƽ') are
// found by the rules, not listed.
var Leet = map[rune]string{
	'0': "od", '1': "il", '2': "z", '3': "e", '4': "a", '5': "s", '6': "gb", '7': "t", '8': "b", '9': "gq",
	'@': "a", '$': "s", '|': "il", '!': "il", '+': "t",
}

// Builder computes symbols for one keyword.
type Builder struct {
	keyword  string
	letterOf map[rune]byte // skeleton of a letter (see canon) -> keyword letter
	nameFold map[rune]rune // a form of a Latin letter -> that letter

	foldOnce sync.Once
	asciiOf  map[rune]rune // skeleton of an ASCII letter in either case -> the letter
}

var latinForm = regexp.MustCompile(`(?:^|\s)(?:LATIN (?:CAPITAL |SMALL )?LETTER (?:SMALL CAPITAL )?|LATIN LETTER SMALL CAPITAL |REGIONAL INDICATOR SYMBOL LETTER )([A-Z])$`)

// New returns a Builder for keyword, which must be lower-case ASCII letters.
func New(keyword string) *Builder {
	b := &Builder{keyword: keyword, letterOf: map[rune]byte{}, nameFold: map[rune]rune{}}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		// Only names ending in a one-letter word can match; the test
		// spares the regexp the other million.
		name := runenames.Name(r)
		if n := len(name); n < 2 || name[n-2] != ' ' || name[n-1] < 'A' || name[n-1] > 'Z' {
			continue
		}
		if m := latinForm.FindStringSubmatch(name); m != nil {
			b.nameFold[r] = rune(m[1][0])
		}
	}
	for i := 0; i < len(keyword); i++ {
		k := rune(keyword[i])
		if k < 'a' || k > 'z' {
			panic(fmt.Sprintf("skelgen: keyword %q is not lower-case ASCII letters", keyword))
		}
		for _, v := range []rune{k, unicode.ToUpper(k)} {
			c := b.canon(v)
			if prev, ok := b.letterOf[c]; ok && prev != byte(k) {
				panic(fmt.Sprintf("skelgen: %q and %q share the skeleton %q", prev, k, c))
			}
			b.letterOf[c] = byte(k)
		}
	}
	return b
}

// prototype returns the UTS #39 prototype of r with combining marks
// dropped, or "" when r is its own prototype.
func prototype(r rune) string {
	p := confusable.GetReplacement(r)
	if p == "" {
		return ""
	}
	return stripMarks(norm.NFD.String(p))
}

func stripMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

func single(s string) (rune, bool) {
	r, n := utf8.DecodeRuneInString(s)
	return r, n > 0 && n == len(s)
}

// canon returns the skeleton of a single character: prototype, lower case
// and Latin-letter name, repeated until nothing changes.
func (b *Builder) canon(r rune) rune {
	for range 8 {
		z := r
		if d, ok := single(stripMarks(norm.NFKD.String(string(z)))); ok {
			z = d
		}
		if p, ok := single(prototype(z)); ok {
			z = p
		}
		z = unicode.ToLower(z)
		if l, ok := b.nameFold[z]; ok {
			z = unicode.ToLower(l)
		}
		if z == r {
			break
		}
		r = z
	}
	return r
}

func gap(r rune) bool {
	return unicode.Is(unicode.White_Space, r) || unicode.Is(unicode.M, r) || ignorable(r)
}

// ignorable reports Default_Ignorable_Code_Point as DerivedCoreProperties.txt
// derives it, less white space (which stands for nothing anyway).
func ignorable(r rune) bool {
	switch {
	case r >= 0xFFF9 && r <= 0xFFFB, r >= 0x13430 && r <= 0x1343F,
		unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r)
}

// plainLetter reports whether r is a letter that no rule below touches:
// no decomposition, no prototype, no case variant, no Latin-letter name,
// not a keyword letter's skeleton. Most of Unicode's letters (the Han
// ideographs among them) are such, and stand for 'x'.
func (b *Builder) plainLetter(r rune) bool {
	if r < utf8.RuneSelf || !unicode.IsLetter(r) || unicode.SimpleFold(r) != r ||
		confusable.GetReplacement(r) != "" || norm.NFKD.PropertiesString(string(r)).Decomposition() != nil {
		return false
	}
	_, named := b.nameFold[r]
	_, keyword := b.letterOf[r]
	return !named && !keyword
}

// unassignedOrPrivate reports whether r is a private-use character or has
// no general category in the Go standard library's Unicode tables.
func unassignedOrPrivate(r rune) bool {
	return unicode.Is(unicode.Co, r) ||
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// Symbols returns the symbols r stands for (see the package comment).
func (b *Builder) Symbols(r rune) string { return b.symbols(r, 0) }

func (b *Builder) symbols(r rune, depth int) string {
	if depth > 4 {
		return string(Punct)
	}
	if gap(r) {
		return ""
	}
	if unassignedOrPrivate(r) && confusable.GetReplacement(r) == "" {
		return string(Punct) // what the rules below make of it, sooner
	}
	if b.plainLetter(r) {
		return string(Other) // likewise
	}
	if d := norm.NFKD.String(string(r)); d != string(r) {
		var sb strings.Builder
		for _, q := range d {
			sb.WriteString(b.symbols(q, depth+1))
		}
		return sb.String()
	}
	p := prototype(r)
	proto := p
	if proto == "" {
		proto = string(r)
	}
	if proto == "<" || proto == "❬" && !unicode.IsLetter(r) {
		return string(Open)
	}
	if k, ok := b.keywordLetter(r); ok {
		if separator(r) {
			k = byte(unicode.ToUpper(rune(k)))
		}
		return string(k)
	}
	if utf8.RuneCountInString(p) > 1 {
		var sb strings.Builder
		for _, q := range p {
			sb.WriteString(b.symbols(q, depth+1))
		}
		return sb.String()
	}
	if unicode.IsDigit(r) {
		return string(Other)
	}
	q := r
	if c, ok := single(p); ok {
		q = c
	}
	if unicode.IsDigit(q) || unicode.IsLetter(q) {
		return string(Other)
	}
	return string(Punct)
}

// separator reports whether r is punctuation or a mathematical or currency
// symbol: a character text puts between words, which may stand for a
// keyword letter or for nothing. Other symbols that stand for a letter
// (squared and negative-squared letters, regional indicators) are read as
// the letter alone, so that a row of flags does not spell the keyword.
func separator(r rune) bool {
	return unicode.In(r, unicode.P, unicode.Sm, unicode.Sc)
}

// keywordLetter returns the keyword letter r stands for by rule 4: by its
// skeleton, else by leetspeak. (A few letters of other scripts have one
// case variant that looks like a keyword letter and another whose
// prototype is a stand-in for a different one; the look wins.)
func (b *Builder) keywordLetter(r rune) (byte, bool) {
	for _, y := range orbit(r) {
		if k, ok := b.letterOf[b.canon(y)]; ok {
			return k, true
		}
	}
	if k := b.leetLetter(r); k != 0 {
		return k, true
	}
	return 0, false
}

// leetLetter returns the keyword letter that r, or a character on its
// prototype chain, is a leetspeak stand-in for, or 0.
func (b *Builder) leetLetter(r rune) byte {
	for range 8 {
		for _, l := range Leet[r] {
			if strings.ContainsRune(b.keyword, l) {
				return byte(l)
			}
		}
		p, ok := single(prototype(r))
		if !ok || p == r {
			break
		}
		r = p
	}
	return 0
}

// orbit returns r and its case variants, r first.
func orbit(r rune) []rune {
	out := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	return out
}

// Compact returns syms in a shorter form that both matchers read the same
// way: 'x' and '.' only break (the keyword matcher skips '.', both stop at
// 'x'; a run of '<' stops at either), so a '.' beside any symbol but '<'
// adds nothing, and repeats of 'x' or '.' add nothing.
func Compact(syms string) string {
	var out []byte
	for i := 0; i < len(syms); i++ {
		c := syms[i]
		if c == Punct {
			prevBreaks := len(out) > 0 && out[len(out)-1] != Open
			nextBreaks := i+1 < len(syms) && syms[i+1] != Open
			if prevBreaks || nextBreaks {
				continue
			}
		}
		if c == Other && len(out) > 0 && out[len(out)-1] == Other {
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

// Generate writes the Go source of the skeleton table for keyword into
// package pkg.
func Generate(w io.Writer, pkg, keyword string) error {
	b := New(keyword)
	var ascii [utf8.RuneSelf]string
	for c := range ascii {
		ascii[c] = Compact(b.Symbols(rune(c)))
	}
	starts, ids, syms := partition(b)
	if len(syms) > 256 {
		return fmt.Errorf("skelgen: %d distinct symbol strings do not fit a byte", len(syms))
	}

	var buf bytes.Buffer
	fmt.Fprintf(&buf, "// Code generated by firewall/internal/skelgen from Unicode %s confusables; DO NOT EDIT.\n", ConfusablesVersion)
	fmt.Fprintf(&buf, "//\n// Derived from Unicode data, © Unicode, Inc., under the Unicode License v3:\n")
	fmt.Fprintf(&buf, "// see internal/skelgen/LICENSE-UNICODE.\n\n")
	fmt.Fprintf(&buf, "package %s\n\n", pkg)
	fmt.Fprintf(&buf, "// skelASCII holds the symbols of each ASCII character.\n")
	fmt.Fprintf(&buf, "var skelASCII = [128]string{\n")
	for c, s := range ascii {
		if s != "" {
			fmt.Fprintf(&buf, "\t%#x: %q, // %s\n", c, s, asciiName(c))
		}
	}
	fmt.Fprintf(&buf, "}\n\n")
	fmt.Fprintf(&buf, "// skelStart[i] is the first rune of a range of runes, up to skelStart[i+1],\n")
	fmt.Fprintf(&buf, "// that stand for skelSyms[skelID[i]]; the first range starts at U+0080.\n")
	fmt.Fprintf(&buf, "var skelStart = [%d]uint32{", len(starts))
	for i, r := range starts {
		if i%8 == 0 {
			buf.WriteString("\n\t")
		} else {
			buf.WriteByte(' ')
		}
		fmt.Fprintf(&buf, "%#x,", r)
	}
	fmt.Fprintf(&buf, "\n}\n\n")
	fmt.Fprintf(&buf, "var skelID = [%d]uint8{", len(ids))
	for i, v := range ids {
		if i%16 == 0 {
			buf.WriteString("\n\t")
		} else {
			buf.WriteByte(' ')
		}
		fmt.Fprintf(&buf, "%d,", v)
	}
	fmt.Fprintf(&buf, "\n}\n\n")
	fmt.Fprintf(&buf, "var skelSyms = [%d]string{", len(syms))
	for i, s := range syms {
		if i%8 == 0 {
			buf.WriteString("\n\t")
		} else {
			buf.WriteByte(' ')
		}
		fmt.Fprintf(&buf, "%q,", s)
	}
	fmt.Fprintf(&buf, "\n}\n")
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return fmt.Errorf("skelgen: format: %w", err)
	}
	_, err = w.Write(src)
	return err
}

// partition splits the code space above ASCII into ranges of runes with
// equal symbols under b: each range's first rune (starts), the id of its
// symbols (ids) and the distinct symbol strings by id (syms, id 0 the
// symbols of unassigned code points and most letters).
func partition(b *Builder) (starts []rune, ids []int, syms []string) {
	index := map[string]int{}
	id := func(s string) int {
		i, ok := index[s]
		if !ok {
			i = len(syms)
			index[s] = i
			syms = append(syms, s)
		}
		return i
	}
	id(string(Other)) // id 0: the symbols of unassigned code points and most letters
	prev := -1
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		s := string(Other)
		if r < 0xD800 || r > 0xDFFF {
			s = Compact(b.Symbols(r))
		}
		if i := id(s); i != prev {
			starts, ids, prev = append(starts, r), append(ids, i), i
		}
	}
	return starts, ids, syms
}

func asciiName(c int) string {
	if c < 0x20 || c == 0x7f {
		return fmt.Sprintf("control %#x", c)
	}
	return fmt.Sprintf("%q", rune(c))
}

// Fold returns the letter r looks like, whatever its case, for comparing
// text by its look: the lower-case ASCII letter whose skeleton (in either
// case) r shares, as keyword letters are found, else the skeleton of r in
// lower case; a leetspeak stand-in folds to the first letter it is written
// for ('3' to 'e', '@' to 'a'). Other digits and characters are returned as
// they are, white space as ' ', and marks and default-ignorable characters
// as -1 (dropped by strings.Map). 'l' and 'I' share a skeleton, so 'l'
// folds to 'i'.
func (b *Builder) Fold(r rune) rune {
	switch {
	case unicode.Is(unicode.White_Space, r):
		return ' '
	case unicode.Is(unicode.M, r) || ignorable(r):
		return -1
	case !unicode.IsLetter(r) && !unicode.IsDigit(r):
		if d, ok := single(norm.NFKD.String(string(r))); ok && d != r {
			return b.Fold(d)
		}
		if l := Leet[r]; l != "" {
			return rune(l[0])
		}
		return r
	}
	b.foldOnce.Do(func() {
		b.asciiOf = map[rune]rune{}
		for l := 'a'; l <= 'z'; l++ {
			for _, v := range []rune{l, unicode.ToUpper(l)} {
				if _, ok := b.asciiOf[b.canon(v)]; !ok {
					b.asciiOf[b.canon(v)] = l
				}
			}
		}
	})
	for _, y := range orbit(r) {
		if l, ok := b.asciiOf[b.canon(y)]; ok {
			return l
		}
	}
	c := b.canon(unicode.ToLower(r))
	if l := Leet[c]; l != "" {
		return rune(l[0])
	}
	return c
}

// Sources returns, for each symbol string of a single keyword letter or of
// '<', the runes that stand for exactly it, in order: the look-alikes a
// test can substitute into a marker.
func (b *Builder) Sources() map[string][]rune {
	out := map[string][]rune{}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF || r == utf8.RuneError {
			continue
		}
		s := b.Symbols(r)
		if len(s) == 1 && s != string(Other) && s != string(Punct) {
			out[s] = append(out[s], r)
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}
