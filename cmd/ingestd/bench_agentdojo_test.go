package main

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestBenchAgentDojo runs the command on the synthetic suite and checks
// that --json prints exactly the documented keys.
func TestBenchAgentDojo(t *testing.T) {
	code, out, errs := runCmd(t, "bench", "agentdojo", "--suite", "../../benchmarks/agentdojo/testdata/synthetic", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	keys := func(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }
	if got := keys(r); !slices.Equal(got, []string{"bound", "mislabelled", "policies", "search_recall", "suite", "tasks"}) {
		t.Fatalf("keys %v", got)
	}
	for _, block := range []string{"policies", "bound"} {
		var ps map[string]map[string]json.RawMessage
		if err := json.Unmarshal(r[block], &ps); err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(ps)); !slices.Equal(got, []string{"graded", "graded_confirm", "strict"}) {
			t.Fatalf("%s: policies %v", block, got)
		}
		for p, f := range ps {
			if got := keys(f); !slices.Equal(got, []string{"attack_success", "confirmations_per_task", "utility"}) {
				t.Errorf("%s %s: keys %v", block, p, got)
			}
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r["mislabelled"], &m); err != nil {
		t.Fatal(err)
	}
	if got := keys(m); !slices.Equal(got, []string{"external_as_trusted", "internal_as_untrusted"}) {
		t.Errorf("mislabelled: keys %v", got)
	}
	if code, _, _ := runCmd(t, "bench", "agentdojo", "--suite", "no-such-dir"); code != 2 {
		t.Errorf("a missing suite: exit %d, want 2", code)
	}
}
