package lexnorm

// The stemmer is a port of SQLite's FTS3/4 "porter" tokenizer's stemmer
// (ext/fts3/fts3_porter.c), so that a word stems as it does in the
// chunks_fts table of store/sqlite:
//
//   - ASCII letters are folded to lower case; nothing else is folded.
//   - A word of 3 to 20 ASCII letters is stemmed by the original Porter
//     algorithm (not Porter2/Snowball). Any other word is copied, except
//     that one longer than 20 bytes keeps only its first and last 10 bytes
//     (3 and 3 if it holds a digit and is longer than 6 bytes).

// appendCopy is fts3_porter.c's copy_stemmer.
func appendCopy(dst []byte, w string) []byte {
	start := len(dst)
	hasDigit := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		} else if '0' <= c && c <= '9' {
			hasDigit = true
		}
		dst = append(dst, c)
	}
	mx := 10
	if hasDigit {
		mx = 3
	}
	if n := len(w); n > 2*mx {
		copy(dst[start+mx:], dst[start+n-mx:])
		dst = dst[:start+2*mx]
	}
	return dst
}

// cType tells, for 'a'..'z', a vowel (0), a consonant (1) or 'y' (2).
var cType = [26]byte{
	0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0,
	1, 1, 1, 2, 1,
}

// porter holds a word reversed in b, as fts3_porter.c does: the word ends
// at b[22] and b[23:] are zero; z is the index of its (reversed) start.
type porter struct {
	b [28]byte
	z int
}

func (p *porter) isConsonant(z int) bool {
	x := p.b[z]
	if x == 0 {
		return false
	}
	j := cType[x-'a']
	if j < 2 {
		return j == 1
	}
	return p.b[z+1] == 0 || p.isVowel(z+1)
}

func (p *porter) isVowel(z int) bool {
	x := p.b[z]
	if x == 0 {
		return false
	}
	j := cType[x-'a']
	if j < 2 {
		return j == 0
	}
	return p.isConsonant(z + 1)
}

// measure is Porter's m of the (reversed) stem from z: how many
// consonant-vowel runs it has, counted up to 2, which is all the rules ask.
func (p *porter) measure(z int) int {
	for p.isVowel(z) {
		z++
	}
	m := 0
	for m < 2 {
		if p.b[z] == 0 {
			return m
		}
		for p.isConsonant(z) {
			z++
		}
		if p.b[z] == 0 {
			return m
		}
		m++
		for p.isVowel(z) {
			z++
		}
	}
	return m
}

func (p *porter) mGt0(z int) bool { return p.measure(z) > 0 }
func (p *porter) mEq1(z int) bool { return p.measure(z) == 1 }
func (p *porter) mGt1(z int) bool { return p.measure(z) > 1 }

func (p *porter) hasVowel(z int) bool {
	for p.isConsonant(z) {
		z++
	}
	return p.b[z] != 0
}

func (p *porter) doubleConsonant(z int) bool {
	return p.isConsonant(z) && p.b[z] == p.b[z+1]
}

func (p *porter) starOh(z int) bool {
	c := p.b[z]
	return p.isConsonant(z) && c != 'w' && c != 'x' && c != 'y' && p.isVowel(z+1) && p.isConsonant(z+2)
}

// Conditions of stem.
const (
	always = iota
	mGt0
	mGt1
	hasVowel
)

// stem is fts3_porter.c's stem: if the word ends with from (reversed) and
// the condition holds for what precedes it, the ending becomes to (in
// normal order). It reports whether from matched, whatever the condition.
func (p *porter) stem(from, to string, cond int) bool {
	z := p.z
	for i := 0; i < len(from); i++ {
		if p.b[z] != from[i] {
			return false
		}
		z++
	}
	switch cond {
	case mGt0:
		if !p.mGt0(z) {
			return true
		}
	case mGt1:
		if !p.mGt1(z) {
			return true
		}
	case hasVowel:
		if !p.hasVowel(z) {
			return true
		}
	}
	for i := 0; i < len(to); i++ {
		z--
		p.b[z] = to[i]
	}
	p.z = z
	return true
}

// appendStem is fts3_porter.c's porter_stemmer: it appends the stem of the
// token w to dst.
func appendStem(dst []byte, w string) []byte {
	n := len(w)
	if n < 3 || n >= 21 {
		return appendCopy(dst, w)
	}
	var p porter
	j := 22
	for i := 0; i < n; i, j = i+1, j-1 {
		c := w[i]
		switch {
		case 'A' <= c && c <= 'Z':
			p.b[j] = c + 'a' - 'A'
		case 'a' <= c && c <= 'z':
			p.b[j] = c
		default:
			return appendCopy(dst, w)
		}
	}
	p.z = j + 1
	b := &p.b

	p.step1()
	p.step2()
	p.step3()
	p.step4()
	p.step5()

	// Reverse back into dst.
	end := p.z
	for end < len(b) && b[end] != 0 {
		end++
	}
	for i := end - 1; i >= p.z; i-- {
		dst = append(dst, b[i])
	}
	return dst
}

// step1 is porter_stemmer's (fts3_porter.c) steps 1a (plurals), 1b (-ed, -ing) and 1c (y to i).
func (p *porter) step1() {
	b := &p.b
	// Step 1a
	if b[p.z] == 's' {
		if !p.stem("sess", "ss", always) && !p.stem("sei", "i", always) && !p.stem("ss", "ss", always) {
			p.z++
		}
	}

	// Step 1b
	z2 := p.z
	if p.stem("dee", "ee", mGt0) {
		// The work was all in the test.
	} else if (p.stem("gni", "", hasVowel) || p.stem("de", "", hasVowel)) && p.z != z2 {
		if p.stem("ta", "ate", always) || p.stem("lb", "ble", always) || p.stem("zi", "ize", always) {
			// The work was all in the test.
		} else if c := b[p.z]; p.doubleConsonant(p.z) && c != 'l' && c != 's' && c != 'z' {
			p.z++
		} else if p.mEq1(p.z) && p.starOh(p.z) {
			p.z--
			b[p.z] = 'e'
		}
	}

	// Step 1c
	if b[p.z] == 'y' && p.hasVowel(p.z+1) {
		b[p.z] = 'i'
	}
}

// step2 is porter_stemmer's (fts3_porter.c) step 2: double suffixes to single ones (-ational to -ate, ...).
func (p *porter) step2() {
	b := &p.b
	// Step 2
	switch b[p.z+1] {
	case 'a':
		if !p.stem("lanoita", "ate", mGt0) {
			p.stem("lanoit", "tion", mGt0)
		}
	case 'c':
		if !p.stem("icne", "ence", mGt0) {
			p.stem("icna", "ance", mGt0)
		}
	case 'e':
		p.stem("rezi", "ize", mGt0)
	case 'g':
		p.stem("igol", "log", mGt0)
	case 'l':
		if !p.stem("ilb", "ble", mGt0) && !p.stem("illa", "al", mGt0) && !p.stem("iltne", "ent", mGt0) &&
			!p.stem("ile", "e", mGt0) {
			p.stem("ilsuo", "ous", mGt0)
		}
	case 'o':
		if !p.stem("noitazi", "ize", mGt0) && !p.stem("noita", "ate", mGt0) {
			p.stem("rota", "ate", mGt0)
		}
	case 's':
		if !p.stem("msila", "al", mGt0) && !p.stem("ssenevi", "ive", mGt0) && !p.stem("ssenluf", "ful", mGt0) {
			p.stem("ssensuo", "ous", mGt0)
		}
	case 't':
		if !p.stem("itila", "al", mGt0) && !p.stem("itivi", "ive", mGt0) {
			p.stem("itilib", "ble", mGt0)
		}
	}
}

// step3 is porter_stemmer's (fts3_porter.c) step 3: -ic-, -full, -ness and the like.
func (p *porter) step3() {
	b := &p.b
	// Step 3
	switch b[p.z] {
	case 'e':
		if !p.stem("etaci", "ic", mGt0) && !p.stem("evita", "", mGt0) {
			p.stem("ezila", "al", mGt0)
		}
	case 'i':
		p.stem("itici", "ic", mGt0)
	case 'l':
		if !p.stem("laci", "ic", mGt0) {
			p.stem("luf", "", mGt0)
		}
	case 's':
		p.stem("ssen", "", mGt0)
	}
}

// step4 is porter_stemmer's (fts3_porter.c) step 4: -ant, -ence and the like, where m > 1.
func (p *porter) step4() {
	b := &p.b
	// Step 4
	z := p.z
	switch b[z+1] {
	case 'a':
		if b[z] == 'l' && p.mGt1(z+2) {
			p.z += 2
		}
	case 'c':
		if b[z] == 'e' && b[z+2] == 'n' && (b[z+3] == 'a' || b[z+3] == 'e') && p.mGt1(z+4) {
			p.z += 4
		}
	case 'e':
		if b[z] == 'r' && p.mGt1(z+2) {
			p.z += 2
		}
	case 'i':
		if b[z] == 'c' && p.mGt1(z+2) {
			p.z += 2
		}
	case 'l':
		if b[z] == 'e' && b[z+2] == 'b' && (b[z+3] == 'a' || b[z+3] == 'i') && p.mGt1(z+4) {
			p.z += 4
		}
	case 'n':
		if b[z] == 't' {
			if b[z+2] == 'a' {
				if p.mGt1(z + 3) {
					p.z += 3
				}
			} else if b[z+2] == 'e' {
				if !p.stem("tneme", "", mGt1) && !p.stem("tnem", "", mGt1) {
					p.stem("tne", "", mGt1)
				}
			}
		}
	case 'o':
		if b[z] == 'u' {
			if p.mGt1(z + 2) {
				p.z += 2
			}
		} else if b[z+3] == 's' || b[z+3] == 't' {
			p.stem("noi", "", mGt1)
		}
	case 's':
		if b[z] == 'm' && b[z+2] == 'i' && p.mGt1(z+3) {
			p.z += 3
		}
	case 't':
		if !p.stem("eta", "", mGt1) {
			p.stem("iti", "", mGt1)
		}
	case 'u':
		if b[z] == 's' && b[z+2] == 'o' && p.mGt1(z+3) {
			p.z += 3
		}
	case 'v', 'z':
		if b[z] == 'e' && b[z+2] == 'i' && p.mGt1(z+3) {
			p.z += 3
		}
	}
}

// step5 is porter_stemmer's (fts3_porter.c) steps 5a (a final -e) and 5b (-ll to -l).
func (p *porter) step5() {
	b := &p.b
	// Step 5a
	if b[p.z] == 'e' {
		if p.mGt1(p.z + 1) {
			p.z++
		} else if p.mEq1(p.z+1) && !p.starOh(p.z+1) {
			p.z++
		}
	}

	// Step 5b
	if p.mGt1(p.z) && b[p.z] == 'l' && b[p.z+1] == 'l' {
		p.z++
	}
}
