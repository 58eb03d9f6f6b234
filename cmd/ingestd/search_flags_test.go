package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/cli"
)

// TestSearchTakesEveryRequestField: every field of the retrieve request
// has a search flag, and the flags reach the request: --grounding auto
// and --trusted-view answer as POST /v1/retrieve does with them, and
// --top-k out of 1..100 is refused rather than read as the default.
func TestSearchTakesEveryRequestField(t *testing.T) {
	var syn cli.Synopsis
	for _, s := range synopses {
		if s.Name == "search" {
			syn = s
		}
	}
	flagOf := map[string]string{
		"query": "", "top_k": "--top-k", "installations": "--installations", "tiers": "--tiers",
		"source_kinds": "--source-kinds", "expand": "--no-expand", "include_rejected": "--no-rejected",
		"exclude_untrusted": "--exclude-untrusted", "request_id": "--request-id", "grounding": "--grounding",
		"trusted_view": "--trusted-view", "principal": "--as-user",
		"-": "", // Reader: access resolves it from the token and principal, never a flag
	}
	rt := reflect.TypeOf(ingestd.RetrieveRequest{})
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		f, ok := flagOf[name]
		if !ok {
			t.Errorf("request field %q has no search flag here: add one (and to this table)", name)
			continue
		}
		if f != "" && !strings.Contains(syn.Args, f) {
			t.Errorf("request field %q: the search synopsis lacks %s", name, f)
		}
	}

	cfg := mustQuickstart(t)
	for _, inst := range []string{"handbook", "support"} {
		if code, _, errs := runCmd(t, "sync", inst, "--config", cfg); code != 0 {
			t.Fatalf("sync %s: %s", inst, errs)
		}
	}
	code, out, errs := runCmd(t, "search", "refund by bank transfer", "--config", cfg, "--json",
		"--grounding", "auto", "--trusted-view", "--request-id", "turn-7", "--no-rejected")
	if code != 0 {
		t.Fatalf("search: exit %d: %s", code, errs)
	}
	var resp ingestd.RetrieveResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.TrustedView == nil || resp.TrustedView.Verdict == nil {
		t.Errorf("--trusted-view: the answer has no trusted view: %s", out)
	}
	if resp.RequestID != "turn-7" {
		t.Errorf("--request-id: request_id = %q", resp.RequestID)
	}
	if len(resp.Rejected) != 0 {
		t.Errorf("--no-rejected: %d rejected chunks", len(resp.Rejected))
	}
	if code, out, errs := runCmd(t, "search", "refund", "--config", cfg, "--trusted-view"); code != 0 || !strings.Contains(out, "trusted view") {
		t.Errorf("--trusted-view on a terminal: exit %d, stdout %q, stderr %q; want the view printed", code, out, errs)
	}
	for _, k := range []string{"0", "-1", "101"} {
		if code, _, errs := runCmd(t, "search", "refund", "--config", cfg, "--top-k", k); code != 2 || !strings.Contains(errs, "--top-k") {
			t.Errorf("--top-k %s: exit %d, stderr %q; want 2 naming the flag", k, code, errs)
		}
	}
	if code, _, errs := runCmd(t, "search", "refund", "--config", cfg, "--grounding", "some"); code != 2 || !strings.Contains(errs, "grounding") {
		t.Errorf("--grounding some: exit %d, stderr %q; want 2", code, errs)
	}
}
