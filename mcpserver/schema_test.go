package mcpserver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

// The retrieve tool's schemas name every field of the request and of the
// answer, so a host that keeps to the input schema can ask for all a
// REST caller can (grounding, trusted_view) and read all it gets.
func TestRetrieveSchemasNameEveryField(t *testing.T) {
	for _, tt := range []struct {
		file string
		typ  reflect.Type
	}{
		{"retrieve.input.json", reflect.TypeFor[ingestd.RetrieveRequest]()},
		{"retrieve.output.json", reflect.TypeFor[ingestd.RetrieveResponse]()},
	} {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Defs       struct {
				Chunk struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"chunk"`
				Verdict struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"verdict"`
			} `json:"$defs"`
		}
		if err := json.Unmarshal(schema(tt.file), &s); err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		hasEvery(t, tt.file, s.Properties, tt.typ)
		if tt.typ == reflect.TypeFor[ingestd.RetrieveResponse]() {
			hasEvery(t, tt.file+" $defs/chunk", s.Defs.Chunk.Properties, reflect.TypeFor[ingestd.ServedChunk]())
			// The verdict's schema refuses fields it does not name
			// (additionalProperties: false), so a host that validates the
			// answer, as the TypeScript SDK does, fails on a new one.
			hasEvery(t, tt.file+" $defs/verdict", s.Defs.Verdict.Properties, reflect.TypeFor[ingestd.Verdict]())
		}
	}
}

// hasEvery reports each JSON field of typ that props does not name.
func hasEvery(t *testing.T, where string, props map[string]json.RawMessage, typ reflect.Type) {
	t.Helper()
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if _, ok := props[name]; !ok {
			t.Errorf("%s has no property %q (%s.%s)", where, name, typ.Name(), f.Name)
		}
	}
}
