package mail

import (
	netmail "net/mail"
	"strings"

	"github.com/ingestd/ingestd"
)

// SenderFacts returns what the message says, as facts for its item's
// Meta, about who sent it and what in it someone else wrote, for an
// installation whose owner trusts the Authentication-Results its own
// boundary MTA adds under authservID. It reports; it decides no tier
// (provenance.Declared does, from these facts and the declaration):
//
//   - ingestd.MetaSenderVerifiedDomain and ingestd.MetaSenderVerifiedBy
//     when the topmost Authentication-Results field whose authserv-id is
//     authservID (RFC 8601: any field above it, or of another
//     authserv-id, is someone else's claim and is ignored) shows dmarc=pass
//     with header.from, or dkim=pass with header.d, equal to the domain
//     of the message's one From address, and no DMARC result other than
//     pass or none for that domain. A message with no From, two From
//     fields or several From addresses is not verified.
//   - ingestd.MetaDerivedContent when the message's own text is not all
//     its sender's: "attached_message" for a message/rfc822 part,
//     "forwarded" for a forwarded block in the body, comma-separated.
//
// An attached message's own header is never read: it is whatever its
// forwarder was sent. nil when authservID is empty and when there is
// nothing to report.
func SenderFacts(m *Message, authservID string) map[string]string {
	authservID = strings.ToLower(strings.TrimSpace(authservID))
	if m == nil || authservID == "" {
		return nil
	}
	out := map[string]string{}
	if d := verifiedDomain(m, authservID); d != "" {
		out[ingestd.MetaSenderVerifiedDomain] = d
		out[ingestd.MetaSenderVerifiedBy] = authservID
	}
	var derived []string
	for _, a := range m.Attachments {
		if a.Message != nil || a.ContentType == "message/rfc822" || a.ContentType == "message/global" {
			derived = append(derived, "attached_message")
			break
		}
	}
	if hasForwardedBlock(m.Text) {
		derived = append(derived, "forwarded")
	}
	if len(derived) > 0 {
		out[ingestd.MetaDerivedContent] = strings.Join(derived, ",")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// verifiedDomain is the From domain the boundary's topmost result
// verifies, or "".
func verifiedDomain(m *Message, authservID string) string {
	from := m.fromDomain
	if from == "" {
		return ""
	}
	for _, v := range m.authResults {
		if servID(v) != authservID {
			continue
		}
		// The topmost field of the boundary decides alone, whatever it
		// holds: a lower one with the same id is older, or forged before
		// the message reached the boundary.
		results, ok := parseAuthResults(v)
		if !ok {
			return ""
		}
		pass := false
		for _, r := range results {
			switch r.method {
			case "dmarc":
				d := r.props["header.from"]
				if d != "" && d != from {
					continue
				}
				switch r.result {
				case "pass":
					pass = pass || d == from
				case "none":
				default:
					return "" // fail, quarantine, reject, temperror, permerror...
				}
			case "dkim":
				if r.result == "pass" && r.props["header.d"] == from {
					pass = true
				}
			}
		}
		if pass {
			return from
		}
		return ""
	}
	return ""
}

// fromDomain is the domain of the one address of the one From field,
// lower-case; "" otherwise.
func fromDomain(h header) string {
	var vals []string
	for _, f := range h {
		if f.key == "from" {
			vals = append(vals, f.value)
		}
	}
	if len(vals) != 1 {
		return ""
	}
	list, err := (&netmail.AddressParser{}).ParseList(strings.TrimSpace(vals[0]))
	if err != nil || len(list) != 1 {
		return ""
	}
	at := strings.LastIndexByte(list[0].Address, '@')
	if at < 0 {
		return ""
	}
	return normDomain(list[0].Address[at+1:])
}

func normDomain(d string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
}

// methodResult is one resinfo of an Authentication-Results field:
// "dkim=pass header.d=example.com header.s=sel".
type methodResult struct {
	method, result string
	props          map[string]string // ptype.property (lower-case) -> value (domains lower-cased)
}

// servID returns the authserv-id of an Authentication-Results value,
// lower-case: the first token before ';', comments removed.
func servID(v string) string {
	s := stripComments(v)
	if i := indexUnquoted(s, ';'); i >= 0 {
		s = s[:i]
	}
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.ToLower(strings.Trim(f[0], `"`))
}

// parseAuthResults reads the results of an Authentication-Results value
// (RFC 8601 section 2.2): authserv-id [version] ; method=result
// [reason=...] [ptype.property=value ...] ; ... or "none". Comments are
// dropped and spaces around '=' allowed. ok is false when a resinfo has
// no method=result.
func parseAuthResults(v string) ([]methodResult, bool) {
	s := stripComments(v)
	parts := splitUnquoted(s, ';')
	var out []methodResult
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if p == "" || strings.EqualFold(p, "none") {
			continue
		}
		toks := tokens(p)
		if len(toks) == 0 {
			continue
		}
		k, val, ok := strings.Cut(toks[0], "=")
		if !ok || k == "" || val == "" {
			return nil, false
		}
		method, _, _ := strings.Cut(strings.ToLower(k), "/")
		r := methodResult{method: method, result: strings.ToLower(val), props: map[string]string{}}
		for _, t := range toks[1:] {
			k, val, ok := strings.Cut(t, "=")
			if !ok {
				continue
			}
			k = strings.ToLower(k)
			val = strings.Trim(val, `"`)
			if k == "header.d" || k == "header.from" {
				val = normDomain(val)
			}
			if _, dup := r.props[k]; !dup {
				r.props[k] = val
			}
		}
		out = append(out, r)
	}
	return out, true
}

// tokens splits a resinfo on white space outside quotes, joining
// "a = b" into "a=b".
func tokens(s string) []string {
	var raw []string
	var cur strings.Builder
	inQuote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(s):
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
		case c == '"':
			inQuote = !inQuote
			cur.WriteByte(c)
		case !inQuote && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			if cur.Len() > 0 {
				raw = append(raw, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		raw = append(raw, cur.String())
	}
	var out []string
	for i := 0; i < len(raw); i++ {
		t := raw[i]
		switch {
		case t == "=" && len(out) > 0 && i+1 < len(raw):
			out[len(out)-1] += "=" + raw[i+1]
			i++
		case strings.HasSuffix(t, "=") && !strings.Contains(t[:len(t)-1], "=") && i+1 < len(raw):
			out = append(out, t+raw[i+1])
			i++
		case strings.HasPrefix(t, "=") && len(out) > 0:
			out[len(out)-1] += t
		default:
			out = append(out, t)
		}
	}
	return out
}

// stripComments removes RFC 5322 comments (nested parentheses, with
// quoted pairs) outside quoted strings.
func stripComments(s string) string {
	var b strings.Builder
	depth, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && (depth > 0 || inQuote) && i+1 < len(s):
			if depth == 0 {
				b.WriteByte(c)
				b.WriteByte(s[i+1])
			}
			i++
		case depth == 0 && c == '"':
			inQuote = !inQuote
			b.WriteByte(c)
		case !inQuote && c == '(':
			depth++
			if depth == 1 {
				b.WriteByte(' ')
			}
		case !inQuote && c == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func indexUnquoted(s string, sep byte) int {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && inQuote:
			i++
		case c == '"':
			inQuote = !inQuote
		case c == sep && !inQuote:
			return i
		}
	}
	return -1
}

func splitUnquoted(s string, sep byte) []string {
	var out []string
	for {
		i := indexUnquoted(s, sep)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// hasForwardedBlock reports a line that opens a forwarded message in
// the body: "---------- Forwarded message ---------" (Gmail),
// "-------- Forwarded Message --------" (Thunderbird), "Begin forwarded
// message:" (Apple Mail), and the same in a few other languages.
func hasForwardedBlock(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		l := strings.ToLower(strings.Trim(strings.TrimSpace(line), "-*_ >"))
		switch l {
		case "forwarded message", "begin forwarded message:", "weitergeleitete nachricht",
			"message transféré", "mensaje reenviado", "messaggio inoltrato", "mensagem encaminhada", "doorgestuurd bericht":
			return true
		}
	}
	return false
}
