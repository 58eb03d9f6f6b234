// Package terminaltest is test support for what ingestd prints for a
// person: the rule of what would drive or deceive a terminal, written
// apart from package terminal's own, so that the two check each other.
package terminaltest

// RawControl returns the first character in s that would drive or
// deceive a terminal, and whether there is one: a C0 control but line
// feed and tab, DEL, a C1 control, a bidi override or isolate, a
// zero-width character or mark, the byte-order mark, a tag character, a
// line or paragraph separator, a soft hyphen.
func RawControl(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0,
			r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
			r == 0x061c, r == 0xfeff, r == 0x2028, r == 0x2029, r == 0x00ad,
			r >= 0xe0000 && r <= 0xe007f:
			return r, true
		}
	}
	return 0, false
}
