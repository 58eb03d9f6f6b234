package config

import (
	"slices"
	"strings"
	"testing"
	"time"

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

// TestGatewaySettingsRanges: the gateway's durations and numbers are
// refused at their line when out of range, a turn_window under a minute
// included; in range they load, turn_window as the duration given.
func TestGatewaySettingsRanges(t *testing.T) {
	block := "gateway:\n  upstreams:\n    - id: crm\n      command: [crm-mcp]\n      tools: {lookup: {class: read, output: trusted}}\n"
	for _, tc := range []struct{ setting, want string }{
		{"turn_window: 30s", `ingestd.yaml:6: gateway: turn_window 30s is too short: use at least 1m0s`},
		{"turn_window: -5m", `ingestd.yaml:6: line 6: "-5m" is not a duration`},
		{"confirm_ttl: 10ms", `ingestd.yaml:6: gateway: confirm_ttl 10ms is too short: use at least 1s`},
		{"max_turns: -1", `ingestd.yaml:6: gateway: max_turns -1 is out of range: use 1 to 65536, or leave it out for the default, 256`},
		{"max_result_bytes: 12", `ingestd.yaml:6: gateway: max_result_bytes 12 is out of range`},
	} {
		_, err := Parse("ingestd.yaml", []byte(block+"  "+tc.setting+"\n"), registry())
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q...", tc.setting, err, tc.want)
		}
	}
	c, err := Parse("ingestd.yaml", []byte(block+"  turn_window: 15m\n  max_turns: 64\n"), registry())
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.Gateway.TurnWindow) != 15*time.Minute || c.Gateway.MaxTurns != 64 {
		t.Errorf("turn_window %v, max_turns %d", time.Duration(c.Gateway.TurnWindow), c.Gateway.MaxTurns)
	}
}
