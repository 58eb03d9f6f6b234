package rawjson

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func members(t *testing.T, in string) ([]string, bool) {
	t.Helper()
	var got []string
	ok := Members([]byte(in), func(name, value []byte) bool {
		got = append(got, string(name)+"="+string(value))
		return true
	})
	return got, ok
}

func TestMembersHandsOnValuesAsWritten(t *testing.T) {
	got, ok := members(t, " {\"a\" : [1, 2] ,\"b\\u0063\":{\"x\":\"\\u00e9\"},\"n\":null}\n ")
	want := []string{"a=[1, 2]", `bc={"x":"\u00e9"}`, "n=null"}
	if !ok || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q %v, want %q", got, ok, want)
	}
	if got, ok := members(t, "{}"); !ok || len(got) != 0 {
		t.Fatalf("{}: %q %v", got, ok)
	}
}

// Every message two readers could read as two messages is refused.
func TestMembersRefusesWhatReadersDisagreeOn(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `"x"`, `{`, `{"a":1`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
		`{"a":1,"a":2}`,                           // a name twice
		`{"a":1,"\u0061":2}`,                      // the same name, escaped
		`{"a":{"b":1,"b":2}}`,                     // twice, nested
		"{\"a\":\"\xff\"}",                        // invalid UTF-8 in a value
		"{\"\xff\":1}",                            // and in a name
		`{"a":"\ud800"}`,                          // a lone surrogate
		`{"a":1}{"b":2}`, `{"a":1} x`, `{"a":1}]`, // data after the object
		`{"a":01}`, `{"a":+1}`, `{"a":NaN}`, `{"a":'x'}`,
	} {
		if got, ok := members(t, in); ok {
			t.Errorf("%q accepted as %q", in, got)
		}
	}
}

func TestMembersStopsWhenTold(t *testing.T) {
	n := 0
	if Members([]byte(`{"a":1,"b":2}`), func(name, value []byte) bool { n++; return false }) || n != 1 {
		t.Fatalf("a refused member: ok, or read on (%d)", n)
	}
}

func TestElements(t *testing.T) {
	var got []string
	if !Elements([]byte(` [ {"a":1}, "x",3 ] `), func(v []byte) bool { got = append(got, string(v)); return true }) ||
		strings.Join(got, "|") != `{"a":1}|"x"|3` {
		t.Fatalf("got %q", got)
	}
	for _, in := range []string{`{}`, `[1,]`, `[1] [2]`, `[{"a":1,"a":1}]`} {
		if Elements([]byte(in), func([]byte) bool { return true }) {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestScalars(t *testing.T) {
	if s, ok := String([]byte(`"a\nb\u00e9"`)); !ok || s != "a\nbé" {
		t.Errorf("String: %q %v", s, ok)
	}
	if _, ok := String([]byte(`12`)); ok {
		t.Error("String took a number")
	}
	for v, want := range map[string]bool{`"text"`: true, `"te\u0078t"`: true, `"texts"`: false, `text`: false, `"Text"`: false} {
		if IsString([]byte(v), "text") != want {
			t.Errorf("IsString(%s) != %v", v, want)
		}
	}
	if b, ok := Bool([]byte("true")); !ok || !b {
		t.Error("Bool true")
	}
	if _, ok := Bool([]byte(`"true"`)); ok {
		t.Error("Bool took a string")
	}
	if b, err := AppendString(nil, "<a>\"\n"); err != nil || string(b) != `"<a>\"\n"` {
		t.Errorf("AppendString: %s %v", b, err)
	}
	if _, err := AppendString(nil, "\xff"); err == nil {
		t.Error("AppendString took invalid UTF-8")
	}
}

func BenchmarkMembers(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory__read_graph","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		Members(line, func(name, value []byte) bool { return true })
	}
}

// FuzzMembers: what Members accepts, encoding/json (the SDK's reader
// here) reads as the same object, member for member; and String reads a
// string as encoding/json does.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,"\u00e9"]}}}`,
		`{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`,
		`{"a":1} {}`, `{}`, `[]`, `{"a":{"b":{"c":[]}}}`, `{"a\"b":"c\\d"}`, `{"Id":1,"id":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var names []string
		var values [][]byte
		if !Members(b, func(name, value []byte) bool {
			names = append(names, string(name))
			values = append(values, bytes.Clone(value))
			return true
		}) {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted what encoding/json finds invalid: %q", b)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("accepted what encoding/json cannot read as an object: %q: %v", b, err)
		}
		if len(m) != len(names) {
			t.Fatalf("%q: %d members, encoding/json reads %d (a name twice?)", b, len(names), len(m))
		}
		for i, n := range names {
			if !bytes.Equal(m[n], values[i]) {
				t.Fatalf("%q: member %q is %q here, %q to encoding/json", b, n, values[i], m[n])
			}
			if s, ok := String(values[i]); ok {
				var want string
				if err := json.Unmarshal(values[i], &want); err != nil || s != want {
					t.Fatalf("String(%q) = %q, encoding/json reads %q (%v)", values[i], s, want, err)
				}
			}
		}
	})
}

// FuzzAsJsontext: Members accepts exactly what jsontext, read strictly
// as it is by default, reads as one object, and hands on the same
// members; Elements the same for arrays, String the same text.
func FuzzAsJsontext(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,"\u00e9",-0.5e+3,true,null]}}}`,
		`{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\udc00"}`,
		`{"a":"\ud800\u0041"}`, `{"a":1} {}`, `{}`, `[]`, `[1,[2,{"b":[]}]]`, `{"a":{"b":{"c":[]}}}`, `{"a\"b":"c\\d\/\b\f\n\r\t"}`,
		`{"a":01}`, `{"a":1.}`, `{"a":1e}`, `{"a":-}`, "{\"a\":\"\x01\"}", "{\"a\":\"\xed\xa0\x80\"}",
		`{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"1":0}`, ` {"a" : [ ] } `, `[1,]`, `{"a":tru}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []member
		ok := Members(b, func(name, value []byte) bool {
			got = append(got, member{string(name), string(value)})
			return true
		})
		want, wantOK := oracle(b, '{')
		if ok != wantOK {
			t.Fatalf("%q: Members %v, jsontext %v", b, ok, wantOK)
		}
		if ok && !slices.Equal(got, want) {
			t.Fatalf("%q: members %q, jsontext %q", b, got, want)
		}
		var elems []member
		ok = Elements(b, func(v []byte) bool { elems = append(elems, member{"", string(v)}); return true })
		wantElems, wantOK := oracle(b, '[')
		if ok != wantOK || ok && !slices.Equal(elems, wantElems) {
			t.Fatalf("%q: Elements %v %q, jsontext %v %q", b, ok, elems, wantOK, wantElems)
		}
		s, ok := String(b)
		w, err := jsontext.AppendUnquote(nil, b)
		if wantOK := err == nil && len(b) > 0 && b[0] == '"'; ok != wantOK || ok && s != string(w) {
			t.Fatalf("String(%q) = %q %v, jsontext %q %v", b, s, ok, w, err)
		}
	})
}

// member is a name and value as written.
type member struct{ name, value string }

// oracle reads b with jsontext as one object (k '{'), its members, or
// one array (k '['), its elements with no name.
func oracle(b []byte, k jsontext.Kind) ([]member, bool) {
	v, ok := oracleValue(b, k)
	if !ok {
		return nil, false
	}
	d := jsontext.NewDecoder(bytes.NewReader(v))
	d.ReadToken()
	var ms []member
	for d.PeekKind() != jsontext.Kind(v[len(v)-1]) {
		var name string
		if k == '{' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, false
			}
			name = tok.String() // before the next read invalidates tok
		}
		val, err := d.ReadValue()
		if err != nil {
			return nil, false
		}
		ms = append(ms, member{name, string(val)})
	}
	return ms, true
}

// oracleValue is b's one value when it is of kind k and nothing follows.
func oracleValue(b []byte, k jsontext.Kind) (jsontext.Value, bool) {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	v, err := d.ReadValue()
	if err != nil || v.Kind() != k {
		return nil, false
	}
	v = v.Clone() // before the decoder reads on into its buffer
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// Nesting is bounded where jsontext bounds it: 10,000 containers open at
// once, the outermost counted.
func TestNestingAsJsontext(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		for _, in := range []string{
			`{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`,
			`{"a":` + strings.Repeat("[", depth-1) + "1" + strings.Repeat("]", depth-1) + `}`,
		} {
			_, want := oracle([]byte(in), '{')
			if got := Members([]byte(in), func(_, _ []byte) bool { return true }); got != want {
				t.Errorf("%d open: Members %v, jsontext %v", depth, got, want)
			}
		}
	}
}

// FuzzAppendString: AppendString writes what jsontext.AppendQuote writes,
// and refuses what it refuses.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c/d", "\b\f\n\r\t\x00\x1f\x7f", "<&>\u2028\u2029é😀", "\xff", "a\xed\xa0\x80b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := AppendString([]byte("x"), s)
		want, wantErr := jsontext.AppendQuote([]byte("x"), s)
		if (err == nil) != (wantErr == nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("%q: %s %v, jsontext %s %v", s, got, err, want, wantErr)
		}
	})
}
