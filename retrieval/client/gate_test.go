package client_test

import (
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval/client"
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

func TestAllowedToolsJSON(t *testing.T) {
	tools := []string{"transfer_money"}
	tests := []struct {
		name string
		body string
		want bool
	}{
		{name: "allowed", body: `{"primary":[],"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`, want: true},
		{name: "blocked", body: `{"verdict":{"tools_allowed":false,"mode":"enforce","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true}}`},
		{name: "no verdict", body: `{"primary":[]}`},
		{name: "null verdict", body: `{"verdict":null}`},
		{name: "missing field", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[]}}`},
		{name: "null ids", body: `{"verdict":{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":null,"would_block":false}}`},
		{name: "wrong type", body: `{"verdict":{"tools_allowed":"yes","mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
		{name: "garbled", body: `{"verdict":{"tools_allowed":true,`},
		{name: "not json", body: `<html>502 Bad Gateway</html>`},
		{name: "empty", body: ``},
		{name: "unknown mode", body: `{"verdict":{"tools_allowed":true,"mode":"yolo","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := client.AllowedToolsJSON([]byte(tt.body), tools)
			if (len(got) == 1) != tt.want {
				t.Errorf("AllowedToolsJSON = %v, want kept=%v", got, tt.want)
			}
		})
	}
}
