package textindex

import "github.com/ingestd/ingestd/internal/lexnorm"

// The tokenizer splits text as SQLite's FTS3/4 "porter" tokenizer
// (ext/fts3/fts3_porter.c) does, which store/sqlite's test compares it
// with, and each token is normalised by lexnorm.AppendTerm, the function
// the lexical embedder calls too; store/sqlite splits queries the same
// way:
//
//   - A token is a run of bytes that are ASCII letters, digits or '_', or
//     any byte >= 0x80 (so every non-ASCII rune is a word character and
//     non-ASCII punctuation does not split words).
//   - ASCII letters are folded to lower case; nothing else is folded.
//   - A token of 3 to 20 ASCII letters is stemmed as the porter tokenizer
//     stems it (the original Porter algorithm). Any other token is copied,
//     except that one longer than 20 bytes keeps only its first and last
//     10 bytes (3 and 3 if it holds a digit and is longer than 6 bytes).
//   - Unlike chunks_fts, a number word is its digits ("thirty" is "30")
//     and a word in lexnorm's synonym table is its group's word.

// isDelim reports whether the byte separates tokens.
func isDelim(c byte) bool {
	if c >= 0x80 {
		return false
	}
	return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_')
}

// words calls fn with every token of s as it stands in s, unstemmed.
func words(s string, fn func(w string)) {
	for i := 0; i < len(s); {
		for i < len(s) && isDelim(s[i]) {
			i++
		}
		start := i
		for i < len(s) && !isDelim(s[i]) {
			i++
		}
		if i > start {
			fn(s[start:i])
		}
	}
}

// Tokenize calls fn with every token of s, in order, as the porter
// tokenizer produces it. The slice passed to fn is only valid during the
// call.
func Tokenize(s string, fn func(tok []byte)) {
	var buf [64]byte
	out := buf[:0]
	for i := 0; i < len(s); {
		for i < len(s) && isDelim(s[i]) {
			i++
		}
		start := i
		for i < len(s) && !isDelim(s[i]) {
			i++
		}
		if i > start {
			out = appendStem(out[:0], s[start:i])
			fn(out)
		}
	}
}

// Term returns the indexed form of one query word: the word normalised as
// Tokenize normalises a token. The word should be one token (no
// delimiter bytes); store/sqlite's query splitting guarantees that.
func Term(word string) string {
	return string(appendStem(nil, word))
}

// appendStem appends the indexed form of the token w to dst: the word
// normalised as the lexical embedder normalises it (lexnorm.AppendTerm).
func appendStem(dst []byte, w string) []byte { return lexnorm.AppendTerm(dst, w) }
