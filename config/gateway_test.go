package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/gateway"
)

// TestUpstreamProblems: what started upstreams offer, compared with the
// declarations, each problem at the line of what to change.
func TestUpstreamProblems(t *testing.T) {
	body := `gateway:
  upstreams:
    - id: good
      command: [good-mcp]
      tools: {read_file: {class: read, output: untrusted}}
    - id: down
      command: [down-mcp]
      tools: {x: {class: read, output: trusted}}
    - id: odd
      url: https://mcp.example/
      tools:
        listed: {class: read, output: trusted}
        gone: {class: write, output: trusted}
`
	c, err := Parse("ingestd.yaml", []byte(body), registry())
	if err != nil {
		t.Fatal(err)
	}
	ok, problems := c.UpstreamProblems([]gateway.Listing{
		{Upstream: "good"},
		{Upstream: "down", Down: "exit status 1"},
		{Upstream: "odd", Undeclared: []string{"extra"}, Missing: []string{"gone"}},
	})
	if !slices.Equal(ok, []string{"good"}) {
		t.Errorf("ok = %q, want [good]", ok)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Error())
	}
	want := []string{
		`ingestd.yaml:6: gateway: upstream "down" did not start: exit status 1`,
		`ingestd.yaml:9: gateway: upstream "odd" offers tools nobody declared`,
		`ingestd.yaml:13: gateway: upstream "odd": tool "gone" is declared but the upstream does not offer it`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want %q...", i, got[i], want[i])
		}
	}
}
