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
		}
		if err := json.Unmarshal(schema(tt.file), &s); err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		for f := range tt.typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if _, ok := s.Properties[name]; !ok {
				t.Errorf("%s has no property %q (%s.%s)", tt.file, name, tt.typ.Name(), f.Name)
			}
		}
	}
}
