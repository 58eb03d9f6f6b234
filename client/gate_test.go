package client_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
)

func TestAllowedTools(t *testing.T) {
	tools := []string{"search_web", "transfer_money"}
	ids := []string{"d1"}
	tests := []struct {
		name    string
		v       *ingestd.Verdict
		want    bool // tools kept
		wantErr bool // Validate fails
	}{
		{name: "enforce allows", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: "no_untrusted_grounding", UntrustedDocumentIDs: []string{}}, want: true},
		{name: "enforce blocks", v: &ingestd.Verdict{Mode: "enforce", Reason: "untrusted_grounding", UntrustedDocumentIDs: ids, WouldBlock: true}},
		{name: "shadow would block", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "shadow", Reason: "untrusted_grounding", UntrustedDocumentIDs: ids, WouldBlock: true}, want: true},
		{name: "shadow clean", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "shadow", Reason: "no_untrusted_grounding"}, want: true},
		{name: "off", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "off", Reason: "firewall_off", UntrustedDocumentIDs: ids}, want: true},
		{name: "absent", v: nil, wantErr: true},
		{name: "zero value", v: &ingestd.Verdict{}, wantErr: true},
		{name: "unknown mode", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "permissive", Reason: "no_untrusted_grounding"}, wantErr: true},
		{name: "unknown reason", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: "looks_fine"}, wantErr: true},
		{name: "enforce allows over untrusted", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: "untrusted_grounding", UntrustedDocumentIDs: ids, WouldBlock: true}, wantErr: true},
		{name: "untrusted without ids", v: &ingestd.Verdict{Mode: "enforce", Reason: "untrusted_grounding", WouldBlock: true}, wantErr: true},
		{name: "clean with ids", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: "no_untrusted_grounding", UntrustedDocumentIDs: ids}, wantErr: true},
		{name: "clean but blocked", v: &ingestd.Verdict{Mode: "enforce", Reason: "no_untrusted_grounding"}, wantErr: true},
		{name: "untrusted would not block", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "shadow", Reason: "untrusted_grounding", UntrustedDocumentIDs: ids}, wantErr: true},
		{name: "shadow blocks", v: &ingestd.Verdict{Mode: "shadow", Reason: "untrusted_grounding", UntrustedDocumentIDs: ids, WouldBlock: true}, wantErr: true},
		{name: "firewall_off in enforce", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: "firewall_off"}, wantErr: true},
		{name: "off blocking", v: &ingestd.Verdict{Mode: "off", Reason: "firewall_off"}, wantErr: true},
		{name: "off would block", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "off", Reason: "firewall_off", UntrustedDocumentIDs: ids, WouldBlock: true}, wantErr: true},
		{name: "empty document id", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "shadow", Reason: "untrusted_grounding", UntrustedDocumentIDs: []string{""}, WouldBlock: true}, wantErr: true},
		{name: "enforce would block with a clean reason", v: &ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: "no_untrusted_grounding", WouldBlock: true}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := client.Validate(tt.v); (err != nil) != tt.wantErr {
				t.Fatalf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
			got := client.AllowedTools(tt.v, tools)
			if tt.want && !slices.Equal(got, tools) || !tt.want && len(got) != 0 {
				t.Errorf("AllowedTools = %v, want kept=%v", got, tt.want)
			}
			open := client.AllowedTools(tt.v, tools, client.FailOpen())
			wantOpen := tt.want || tt.wantErr // FailOpen only rescues untrusted verdicts
			if wantOpen != (len(open) == len(tools)) {
				t.Errorf("AllowedTools(FailOpen) = %v, want kept=%v", open, wantOpen)
			}
		})
	}
}

func TestAllowedToolsDoesNotAlias(t *testing.T) {
	tools := []string{"a", "b"}
	v := &ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: "no_untrusted_grounding"}
	got := client.AllowedTools(v, tools)
	got[0] = "x"
	if tools[0] != "a" {
		t.Error("AllowedTools returned the caller's slice")
	}
}

// Verdicts as the server writes them.
const (
	allowJSON  = `{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}`
	blockJSON  = `{"tools_allowed":false,"mode":"enforce","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true}`
	shadowJSON = `{"tools_allowed":true,"mode":"shadow","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true}`
	offJSON    = `{"tools_allowed":true,"mode":"off","reason":"firewall_off","untrusted_document_ids":["d1"],"would_block":false}`
)

func TestAllowedToolsJSON(t *testing.T) {
	tools := []string{"transfer_money"}
	chunk := `{"chunk_id":"c1","document_id":"d1","fenced":"x","text":"x"}`
	tests := []struct {
		name string
		body string
		want bool
	}{
		// Well-formed: the verdict decides.
		{name: "allowed", body: `{"primary":[],"verdict":` + allowJSON + `}`, want: true},
		{name: "allowed, verdict first, chunks after", body: `{"verdict":` + allowJSON + `,"primary":[` + chunk + `],"expanded":[],"rejected":[],"excluded_untrusted_documents":0}`, want: true},
		{name: "allowed, whitespace around", body: " \n\t{ \"verdict\" : " + allowJSON + " } \r\n", want: true},
		{name: "allowed, escaped key and value", body: `{"verd\u0069ct":{"tools_allowed":true,"mode":"enf\u006frce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`, want: true},
		{name: "allowed, unknown top-level field", body: `{"verdict":` + allowJSON + `,"next_page":null}`, want: true},
		{name: "shadow allows", body: `{"verdict":` + shadowJSON + `}`, want: true},
		{name: "off allows", body: `{"verdict":` + offJSON + `}`, want: true},
		{name: "blocked", body: `{"verdict":` + blockJSON + `}`},

		// Absent or incomplete.
		{name: "no verdict", body: `{"primary":[]}`},
		{name: "null verdict", body: `{"verdict":null}`},
		{name: "missing field", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[]}}`},
		{name: "null ids", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":null,"would_block":false}}`},
		{name: "empty verdict", body: `{"verdict":{}}`},

		// Duplicate keys: encoding/json keeps the last one.
		{name: "two verdicts, allowing last", body: `{"verdict":` + blockJSON + `,"verdict":` + allowJSON + `}`},
		{name: "two verdicts, allowing first", body: `{"verdict":` + allowJSON + `,"verdict":` + blockJSON + `}`},
		{name: "two identical verdicts", body: `{"verdict":` + allowJSON + `,"verdict":` + allowJSON + `}`},
		{name: "two verdicts, one escaped", body: `{"verdict":` + blockJSON + `,"verd\u0069ct":` + allowJSON + `}`},
		{name: "verdict in another case", body: `{"verdict":` + blockJSON + `,"Verdict":` + allowJSON + `}`},
		{name: "only a VERDICT", body: `{"VERDICT":` + allowJSON + `}`},
		{name: "verdict in mixed case", body: `{"vErDiCt":` + allowJSON + `,"verdict":` + blockJSON + `}`},
		{name: "verdict with a NUL", body: `{"verdict":` + blockJSON + `,"verdict\u0000":` + allowJSON + `}`},
		{name: "verdict with a space", body: `{"verdict":` + blockJSON + `,"verdict ":` + allowJSON + `}`},
		{name: "duplicate tools_allowed", body: `{"verdict":{"tools_allowed":false,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false,"tools_allowed":true}}`},
		{name: "duplicate mode", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","mode":"off","reason":"firewall_off","untrusted_document_ids":[],"would_block":false}}`},
		{name: "duplicate reason", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"untrusted_grounding","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "duplicate ids", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":["d1"],"untrusted_document_ids":[],"would_block":false}}`},
		{name: "duplicate would_block", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":true,"would_block":false}}`},
		{name: "case variant inside verdict", body: `{"verdict":{"tools_allowed":false,"Tools_Allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "duplicate key in a chunk", body: `{"primary":[{"document_id":"d1","document_id":"d2"}],"verdict":` + allowJSON + `}`},
		{name: "duplicate top-level key", body: `{"primary":[],"primary":[],"verdict":` + allowJSON + `}`},

		// Unknown shapes.
		{name: "tools_allowed a string", body: `{"verdict":{"tools_allowed":"yes","mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "tools_allowed a number", body: `{"verdict":{"tools_allowed":1,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "tools_allowed null", body: `{"verdict":{"tools_allowed":null,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "would_block a string", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":"false"}}`},
		{name: "mode a number", body: `{"verdict":{"tools_allowed":true,"mode":1,"reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "unknown mode", body: `{"verdict":{"tools_allowed":true,"mode":"yolo","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "mode in upper case", body: `{"verdict":{"tools_allowed":true,"mode":"ENFORCE","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "unknown reason", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"looks_fine","untrusted_document_ids":[],"would_block":false}}`},
		{name: "ids an object", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":{},"would_block":false}}`},
		{name: "ids of numbers", body: `{"verdict":{"tools_allowed":false,"mode":"enforce","reason":"untrusted_grounding","untrusted_document_ids":[1],"would_block":true}}`},
		{name: "empty id", body: `{"verdict":{"tools_allowed":true,"mode":"shadow","reason":"untrusted_grounding","untrusted_document_ids":[""],"would_block":true}}`},
		{name: "unknown field in verdict", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false,"override":true}}`},
		{name: "verdict an array", body: `{"verdict":[` + allowJSON + `]}`},
		{name: "verdict a string", body: `{"verdict":"allow"}`},
		{name: "verdict true", body: `{"verdict":true}`},
		{name: "enforce allows with untrusted ids", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":["d1"],"would_block":false}}`},
		{name: "enforce would block yet allows", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true}}`},
		{name: "enforce would block, clean reason", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":true}}`},
		{name: "off would block", body: `{"verdict":{"tools_allowed":true,"mode":"off","reason":"firewall_off","untrusted_document_ids":["d1"],"would_block":true}}`},

		// Not one JSON object.
		{name: "garbled", body: `{"verdict":{"tools_allowed":true,`},
		{name: "trailing garbage", body: `{"verdict":` + allowJSON + `} x`},
		{name: "trailing object", body: `{"verdict":` + blockJSON + `}{"verdict":` + allowJSON + `}`},
		{name: "trailing comma", body: `{"verdict":` + allowJSON + `,}`},
		{name: "comment", body: `{"verdict":` + allowJSON + `/* ok */}`},
		{name: "array", body: `[{"verdict":` + allowJSON + `}]`},
		{name: "string", body: `"verdict"`},
		{name: "null", body: `null`},
		{name: "number", body: `1`},
		{name: "not json", body: `<html>502 Bad Gateway</html>`},
		{name: "empty", body: ``},
		{name: "only whitespace", body: " \n"},
		{name: "byte order mark", body: "\ufeff{\"verdict\":" + allowJSON + "}"},
		{name: "invalid UTF-8 in a key", body: "{\"verdict\":" + blockJSON + ",\"verdict\xff\":" + allowJSON + "}"},
		{name: "invalid UTF-8 in a chunk", body: "{\"primary\":[\"\xc3\x28\"],\"verdict\":" + allowJSON + "}"},
		{name: "nested too deep", body: `{"primary":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"verdict":` + allowJSON + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := client.AllowedToolsJSON([]byte(tt.body), tools)
			if (len(got) == 1) != tt.want {
				v, err := client.VerdictFromJSON([]byte(tt.body))
				t.Errorf("AllowedToolsJSON = %v, want kept=%v (VerdictFromJSON = %+v, %v)", got, tt.want, v, err)
			}
		})
	}
}

// TestVerdictFromJSONSaysWhy: a refusal names what was wrong.
func TestVerdictFromJSONSaysWhy(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"verdict":` + blockJSON + `,"verdict":` + allowJSON + `}`, `key "verdict" appears twice`},
		{`{"verdict":` + blockJSON + `,"Verdict":` + allowJSON + `}`, `"Verdict" that another parser could read as "verdict"`},
		{`{"verdict":{"tools_allowed":"yes"}}`, `field "tools_allowed" is not a boolean`},
		{`{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false,"x":1}}`, `unknown field "x"`},
		{`{"verdict":{"tools_allowed":true}}`, `field "mode" is missing`},
		{`{"verdict":` + allowJSON + `} {}`, "data after the JSON object"},
		{`[]`, "not a JSON object"},
	}
	for _, tt := range tests {
		_, err := client.VerdictFromJSON([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("VerdictFromJSON(%.60s) = %v, want an error with %q", tt.body, err, tt.want)
		}
	}
}

// BenchmarkVerdictFromJSON compares the strict reader with a plain
// json.Unmarshal of the same response (8 chunks of about 2 KiB each, as
// POST /v1/retrieve answers top_k 8), the baseline, in one run:
// go test ./client/ -run '^$' -bench VerdictFromJSON -benchmem
func BenchmarkVerdictFromJSON(b *testing.B) {
	text := strings.Repeat("Vacation days accrue monthly for every employee. ", 40)
	var chunks []string
	for i := range 8 {
		c, _ := json.Marshal(map[string]any{"chunk_id": fmt.Sprint("c", i), "document_id": "d1", "installation": "handbook",
			"source_kind": "files", "uri": "file:///handbook/vacation.md", "title": "Vacation", "tier": "trusted-internal",
			"score": 0.5, "fenced": text, "text": text})
		chunks = append(chunks, string(c))
	}
	body := []byte(`{"primary":[` + strings.Join(chunks, ",") + `],"expanded":[],"rejected":[],"verdict":` + allowJSON + `,"excluded_untrusted_documents":0}`)
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var r struct {
				Verdict *ingestd.Verdict `json:"verdict"`
			}
			if err := json.Unmarshal(body, &r); err != nil || r.Verdict == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := client.VerdictFromJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
