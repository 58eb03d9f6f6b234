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
	grounding := []struct {
		name      string
		ids       []string
		untrusted []string
	}{
		{name: "none", ids: nil, untrusted: []string{}},
		{name: "internal only", ids: []string{"int1", "int2", "mach", "int1"}, untrusted: []string{}},
		{name: "external", ids: []string{"int1", "ext2", "ext1", "ext2"}, untrusted: []string{"ext1", "ext2"}},
		{name: "unknown value", ids: []string{"int1", "unk"}, untrusted: []string{"unk"}},
		{name: "undeclared", ids: []string{"und", "int1"}, untrusted: []string{}},
		{name: "missing id", ids: []string{"int1", "gone"}, untrusted: []string{"gone"}},
	}
	type want struct {
		allowed bool
		mode    string
		reason  string
		would   bool
	}
	modes := []struct {
		mode             string
		clean, untrusted want
	}{
		{mode: "enforce",
			clean:     want{true, "enforce", ingestd.ReasonNoUntrusted, false},
			untrusted: want{false, "enforce", ingestd.ReasonUntrusted, true}},
		{mode: "shadow",
			clean:     want{true, "shadow", ingestd.ReasonNoUntrusted, false},
			untrusted: want{true, "shadow", ingestd.ReasonUntrusted, true}},
		{mode: "off",
			clean:     want{true, "off", ingestd.ReasonOff, false},
			untrusted: want{true, "off", ingestd.ReasonOff, false}},
		{mode: "bogus", // fails closed: decided and reported as enforce
			clean:     want{true, "enforce", ingestd.ReasonNoUntrusted, false},
			untrusted: want{false, "enforce", ingestd.ReasonUntrusted, true}},
		{mode: "",
			clean:     want{true, "enforce", ingestd.ReasonNoUntrusted, false},
			untrusted: want{false, "enforce", ingestd.ReasonUntrusted, true}},
	}
	for _, m := range modes {
		for _, g := range grounding {
			t.Run(fmt.Sprintf("%s/%s", m.mode, g.name), func(t *testing.T) {
				v := Decide(m.mode, g.ids, tiers)
				w := m.clean
				if len(g.untrusted) > 0 {
					w = m.untrusted
				}
				got := want{v.ToolsAllowed, v.Mode, v.Reason, v.WouldBlock}
				if got != w {
					t.Errorf("Decide = %+v, want %+v", got, w)
				}
				if v.UntrustedDocumentIDs == nil {
					t.Fatal("UntrustedDocumentIDs is nil")
				}
				if !slices.Equal(v.UntrustedDocumentIDs, g.untrusted) {
					t.Errorf("UntrustedDocumentIDs = %v, want %v", v.UntrustedDocumentIDs, g.untrusted)
				}
			})
		}
	}
}

func TestDecideJSONEmptyList(t *testing.T) {
	b, err := json.Marshal(Decide(ingestd.ModeEnforce, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}`; got != want {
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
