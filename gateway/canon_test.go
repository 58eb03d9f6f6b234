package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/rawjson"
)

// The canonical form a confirmation is bound to: keys sorted, no space,
// numbers as written, everything outside printable ASCII escaped; and
// the refusal of what two readers could read as two calls.
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		``:                                  `{}`,
		` `:                                 `{}`,
		`null`:                              `{}`,
		`{}`:                                `{}`,
		` {"k" : [ 1 , 2 ] } `:              `{"k":[1,2]}`,
		`{"b":1,"a":[true,false,null,"x"]}`: `{"a":[true,false,null,"x"],"b":1}`,
		`{"z":{"y":{"x":1.50e3}},"a":-0}`:   `{"a":-0,"z":{"y":{"x":1.50e3}}}`,
		`{"\u0061":1,"b":2}`:                `{"a":1,"b":2}`,
		`{"s":"é\u00e9\n\t\"\\\u0001 \u2028 😀 <>&"}`: `{"s":"\u00e9\u00e9\n\t\"\\\u0001 \u2028 \ud83d\ude00 <>&"}`,
		`{"n":123456789012345678901234567890}`:       `{"n":123456789012345678901234567890}`,
		`[3,2,1]`:                                    `[3,2,1]`,
		`"str"`:                                      `"str"`,
	} {
		got, err := Canonical(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		`{"a":1,"a":2}`:       `repeat the key "a"`,
		`{"a":1,"\u0061":2}`:  `repeat the key "a"`,
		`{"a":{"b":1,"b":2}}`: `repeat the key "b"`,
		"{\"a\":\"\xff\"}":    "not valid UTF-8",
		`{"a":"\ud800"}`:      "surrogate",
		`{"a":1} x`:           "data after",
		`{"a":1}{}`:           "data after",
		`{"a":}`:              "arguments:",
		`{"a":1,}`:            "arguments:",
		strings.Repeat("[", 70) + strings.Repeat("]", 70): "deeper than 64",
	} {
		if got, err := Canonical(json.RawMessage(in)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %s %v, want an error saying %q", in, got, err, why)
		}
	}
}

// FuzzValidAsCanonical: every argument text rawjson.Valid takes at the
// depth Canonical allows, Canonical takes too, so that prepare may skip
// it for a read; and whatever Canonical takes but Valid does not is
// only no arguments (empty, null).
func FuzzValidAsCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":"\u00e9"}]}`, `{"a":1,"a":2}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `null`, ``, ` `, `[1]`, `"x"`, `{"a":1} 2`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64), strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat("[", 65) + "1" + strings.Repeat("]", 65), strings.Repeat("[", 66) + strings.Repeat("]", 66)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := rawjson.Valid(b, maxDepth)
		_, err := Canonical(b)
		if valid && err != nil {
			t.Fatalf("%q: Valid, but Canonical refuses it: %v", b, err)
		}
		if trimmed := strings.TrimSpace(string(b)); !valid && err == nil && trimmed != "" && trimmed != "null" {
			t.Fatalf("%q: Canonical takes it, Valid does not", b)
		}
	})
}
