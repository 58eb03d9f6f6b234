package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchFirewall(t *testing.T) {
	code, out, errs := runCmd(t, "bench", "firewall", "--json", "--mode", "top_k=3,default")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Corpus struct {
			Documents int `json:"documents"`
			Questions int `json:"questions"`
		} `json:"corpus"`
		Modes []struct {
			Mode           string `json:"mode"`
			InjectionReach int    `json:"injection_reach"`
			NeedlessBlock  struct {
				N, Of int
			} `json:"needless_block"`
			Turns []json.RawMessage `json:"turns"`
		} `json:"modes"`
		Goals []struct {
			Met bool `json:"met"`
		} `json:"goals"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Corpus.Documents < 200 || r.Corpus.Questions < 100 {
		t.Errorf("corpus %+v, want at least 200 documents and 100 questions", r.Corpus)
	}
	if len(r.Modes) != 2 || r.Modes[0].Mode != "default" || r.Modes[1].Mode != "top_k=3" {
		t.Fatalf("modes %+v, want default then top_k=3", r.Modes)
	}
	for _, m := range r.Modes {
		if m.NeedlessBlock.Of == 0 || len(m.Turns) != 0 {
			t.Errorf("mode %s: %d internal questions, %d turns; want questions and no turns without --turns", m.Mode, m.NeedlessBlock.Of, len(m.Turns))
		}
	}
	if len(r.Goals) != 2 {
		t.Errorf("%d goal results, want injection reach for both modes", len(r.Goals))
	}

	code, out, errs = runCmd(t, "bench", "firewall", "--mode", "exclude_untrusted")
	if code != 0 || !strings.Contains(out, "exclude_untrusted") || !strings.Contains(out, "needless blocks") {
		t.Fatalf("text report: exit %d\n%s\n%s", code, out, errs)
	}
}

func TestBenchFirewallUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "firewall", "--mode", "nope"},
		{"bench", "firewall", "extra"},
		{"bench", "firewall", "--corpus", "does-not-exist"},
	} {
		if code, _, errs := runCmd(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d (%s), want 2 with a reason", args, code, errs)
		}
	}
}
