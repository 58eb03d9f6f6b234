// Package lexnorm is the word normalisation that the lexical embedder and
// the in-memory text index share, so that a word and its variants meet in
// both rankers: the same query finds the same chunks by its words and lands
// near them by its vector.
//
// AppendTerm normalises one word (a token as the callers split text):
//
//   - a number word from "zero" to "ninety" becomes its digits ("thirty"
//     is "30", "fifth" is "5th"), so "thirty days" matches "30 days";
//   - the word is stemmed as SQLite's porter tokenizer stems it, so
//     "refunds", "refunded" and "refunding" are "refund";
//   - a stem in the synonym table becomes the stem of its group's first
//     word ("buy" is "purchase", "e-mail" is "mail").
//
// The tables are small, general English and deliberate: a word with
// several common senses ("leave", "client", "second") is left alone,
// because folding it would join unrelated texts. Changing them changes
// what the text index matches and the lexical embedder's vectors (its ID
// names the version).
package lexnorm

import "strings"

// AppendTerm appends the normalised form of the word w to dst.
func AppendTerm(dst []byte, w string) []byte {
	if n, ok := number(w); ok {
		return append(dst, n...)
	}
	start := len(dst)
	dst = appendStem(dst, w)
	if s, ok := synonyms[string(dst[start:])]; ok {
		dst = append(dst[:start], s...)
	}
	return dst
}

// Term returns the normalised form of the word w.
func Term(w string) string { return string(AppendTerm(nil, w)) }

// AppendStem appends the Porter stem of the word w to dst, as SQLite's
// porter tokenizer gives it, with no other folding.
func AppendStem(dst []byte, w string) []byte { return appendStem(dst, w) }

// maxNumberWord is the length of the longest number word.
const maxNumberWord = 9 // "seventeen"

// number returns the digits of a number word, in any ASCII case.
func number(w string) (string, bool) {
	if len(w) < 3 || len(w) > maxNumberWord {
		return "", false
	}
	var buf [maxNumberWord]byte
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case 'a' <= c && c <= 'z':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			return "", false
		}
		buf[i] = c
	}
	d, ok := numbers[string(buf[:len(w)])]
	return d, ok
}

// numbers maps number words to digits. "second" is not among them: it is
// also a unit of time. "one" is, though it is also a pronoun ("the one
// that"): the numeral is the sense that carries a fact ("one business
// day"), and the pronoun is common enough to weigh little either way.
var numbers = map[string]string{
	"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
	"seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
	"thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
	"eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
	"fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
	"first": "1st", "third": "3rd", "fourth": "4th", "fifth": "5th", "sixth": "6th",
	"seventh": "7th", "eighth": "8th", "ninth": "9th", "tenth": "10th",
}

// synonymGroups are words that mean the same in ordinary English prose; the
// first of each group is the one the others become. Every word of a group
// stands for its inflections (they share its stem).
var synonymGroups = []string{
	"purchase buy",
	"mail email",
	"login logon signin",
	"delete erase erasure",
	"holiday vacation",
	"permit allow",
	"telephone phone",
	"automobile car",
	"large big",
	"quick fast",
	"reply answer respond",
	"display show",
	"outage downtime",
	"document doc",
	"mfa 2fa",
	"inquiry enquiry inquire enquire",
}

// Groups returns the words AppendTerm makes one term, beyond stemming:
// each number word with its digits, then each synonym group, in a fixed
// order. A store whose full-text search cannot call AppendTerm (Postgres)
// matches a query word to the others of its group with it.
func Groups() [][]string {
	var out [][]string
	for _, w := range numberOrder {
		out = append(out, []string{w, numbers[w]})
	}
	for _, g := range synonymGroups {
		out = append(out, strings.Fields(g))
	}
	return out
}

// numberOrder lists the keys of numbers in order, for Groups.
var numberOrder = strings.Fields(`zero one two three four five six seven eight nine ten eleven twelve
	thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty
	seventy eighty ninety first third fourth fifth sixth seventh eighth ninth tenth`)

// synonyms maps the stem of each word of a group to the stem of its first.
var synonyms = func() map[string]string {
	m := map[string]string{}
	for _, g := range synonymGroups {
		ws := strings.Fields(g)
		head := string(appendStem(nil, ws[0]))
		for _, w := range ws[1:] {
			s := string(appendStem(nil, w))
			if _, dup := m[s]; dup || s == head {
				panic("lexnorm: synonym " + w + " is listed twice")
			}
			m[s] = head
		}
	}
	return m
}()
