package firewall

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "empty is enforce", in: "", want: ingestd.ModeEnforce},
		{name: "enforce", in: "enforce", want: ingestd.ModeEnforce},
		{name: "shadow", in: "shadow", want: ingestd.ModeShadow},
		{name: "off", in: "off", want: ingestd.ModeOff},
		{name: "case and space", in: " Shadow\n", want: ingestd.ModeShadow},
		{name: "unknown", in: "audit", wantErr: true},
		{name: "boolean-ish", in: "false", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMode(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseMode(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				if got, want := ingestd.ErrorCode(err), ingestd.EINVALID; got != want {
					t.Fatalf("code = %q, want %q", got, want)
				}
				if msg := ingestd.ErrorMessage(err); !containsAll(msg, "enforce", "shadow", "off") {
					t.Fatalf("message %q does not name the valid modes", msg)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("ParseMode(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestDecide(t *testing.T) {
	tiers := map[string]ingestd.Tier{
		"int1": ingestd.TierTrustedInternal,
		"int2": ingestd.TierTrustedInternal,
		"mach": ingestd.TierMachineGenerated,
		"ext1": ingestd.TierUntrustedExternal,
		"ext2": ingestd.TierUntrustedExternal,
		"unk":  "partner-shared", // a value this build does not know
		"und":  "",               // undeclared
	}
	type cond int
	const (
		clean cond = iota
		untrusted
		unknown
	)
	grounding := []struct {
		name      string
		ids       []string
		untrusted []string
		cond      cond
	}{
		{name: "none", ids: nil, untrusted: []string{}},
		{name: "internal only", ids: []string{"int1", "int2", "mach", "int1"}, untrusted: []string{}},
		{name: "external", ids: []string{"int1", "ext2", "ext1", "ext2"}, untrusted: []string{"ext1", "ext2"}, cond: untrusted},
		{name: "unknown value", ids: []string{"int1", "unk"}, untrusted: []string{"unk"}, cond: unknown},
		{name: "undeclared", ids: []string{"und", "int1"}, untrusted: []string{}},
		{name: "missing id", ids: []string{"int1", "gone"}, untrusted: []string{"gone"}, cond: unknown},
		{name: "missing id beside external", ids: []string{"ext1", "gone"}, untrusted: []string{"ext1", "gone"}, cond: unknown},
	}
	type want struct {
		allowed bool
		mode    string
		reason  string
		would   bool
		classes string
	}
	all, read, none := "read,read_open,write", "read", ""
	enforce := [3]want{
		clean:     {true, "enforce", ingestd.ReasonNoUntrusted, false, all},
		untrusted: {false, "enforce", ingestd.ReasonUntrusted, true, read},
		unknown:   {false, "enforce", ingestd.ReasonUnknownProvenance, true, none},
	}
	modes := []struct {
		mode string
		want [3]want
	}{
		{mode: "enforce", want: enforce},
		{mode: "shadow", want: [3]want{
			clean:     {true, "shadow", ingestd.ReasonNoUntrusted, false, all},
			untrusted: {true, "shadow", ingestd.ReasonUntrusted, true, all},
			unknown:   {true, "shadow", ingestd.ReasonUnknownProvenance, true, all},
		}},
		{mode: "off", want: [3]want{
			clean:     {true, "off", ingestd.ReasonOff, false, all},
			untrusted: {true, "off", ingestd.ReasonOff, false, all},
			unknown:   {true, "off", ingestd.ReasonOff, false, all},
		}},
		{mode: "bogus", want: enforce}, // fails closed: decided and reported as enforce
		{mode: "", want: enforce},
	}
	for _, m := range modes {
		for _, g := range grounding {
			t.Run(fmt.Sprintf("%s/%s", m.mode, g.name), func(t *testing.T) {
				v := Decide(m.mode, g.ids, tiers)
				w := m.want[g.cond]
				var classes []string
				for _, c := range v.AllowedToolClasses {
					classes = append(classes, string(c))
				}
				got := want{v.ToolsAllowed, v.Mode, v.Reason, v.WouldBlock, strings.Join(classes, ",")}
				if got != w {
					t.Errorf("Decide = %+v, want %+v", got, w)
				}
				if v.UntrustedDocumentIDs == nil || v.AllowedToolClasses == nil {
					t.Fatal("UntrustedDocumentIDs or AllowedToolClasses is nil")
				}
				if !slices.Equal(v.UntrustedDocumentIDs, g.untrusted) {
					t.Errorf("UntrustedDocumentIDs = %v, want %v", v.UntrustedDocumentIDs, g.untrusted)
				}
				if v.ToolsAllowed != v.AllowedToolClasses.Equal(ingestd.AllToolClasses()) {
					t.Errorf("tools_allowed %v with classes %v", v.ToolsAllowed, v.AllowedToolClasses)
				}
			})
		}
	}
}

// TestDecideGradesByClass: under untrusted grounding in enforce mode,
// only a closed-world read passes; read_open is blocked like a write,
// and a class this build does not know counts as a write.
func TestDecideGradesByClass(t *testing.T) {
	tiers := map[string]ingestd.Tier{"ext": ingestd.TierUntrustedExternal, "int": ingestd.TierTrustedInternal}
	for _, tt := range []struct {
		name string
		ids  []string
		c    ingestd.ToolClass
		want bool
	}{
		{"clean read", []string{"int"}, ingestd.ToolRead, true},
		{"clean read_open", []string{"int"}, ingestd.ToolReadOpen, true},
		{"clean write", []string{"int"}, ingestd.ToolWrite, true},
		{"clean unknown class", []string{"int"}, "admin", true},
		{"untrusted read", []string{"int", "ext"}, ingestd.ToolRead, true},
		{"untrusted read_open", []string{"ext"}, ingestd.ToolReadOpen, false},
		{"untrusted write", []string{"ext"}, ingestd.ToolWrite, false},
		{"untrusted unknown class", []string{"ext"}, "admin", false},
		{"unknown provenance read", []string{"gone"}, ingestd.ToolRead, false},
		{"unknown provenance write", []string{"gone"}, ingestd.ToolWrite, false},
	} {
		v := Decide(ingestd.ModeEnforce, tt.ids, tiers)
		if got := v.AllowedToolClasses.Has(tt.c); got != tt.want {
			t.Errorf("%s: Has(%q) = %v under %v, want %v", tt.name, tt.c, got, v.AllowedToolClasses, tt.want)
		}
	}
}

func TestDecideJSONEmptyList(t *testing.T) {
	b, err := json.Marshal(Decide(ingestd.ModeEnforce, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false,"allowed_tool_classes":["read","read_open","write"]}`; got != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
}

func TestDecideDoesNotKeepCallerSlice(t *testing.T) {
	ids := []string{"b", "a"}
	v := Decide(ingestd.ModeEnforce, ids, nil)
	if !slices.Equal(ids, []string{"b", "a"}) {
		t.Fatalf("Decide reordered the caller's ids: %v", ids)
	}
	if !slices.Equal(v.UntrustedDocumentIDs, []string{"a", "b"}) {
		t.Fatalf("UntrustedDocumentIDs = %v", v.UntrustedDocumentIDs)
	}
}

func BenchmarkDecide(b *testing.B) {
	ids := make([]string, 30)
	tiers := make(map[string]ingestd.Tier, 30)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%023d", 30-i)
		switch i % 3 {
		case 0:
			tiers[ids[i]] = ingestd.TierTrustedInternal
		case 1:
			tiers[ids[i]] = ingestd.TierUntrustedExternal
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		Decide(ingestd.ModeEnforce, ids, tiers)
	}
}
