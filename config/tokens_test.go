package config

import (
	"strings"
	"testing"
)

// TestMetricsScopeSeesEveryInstallation: the metrics name every
// installation, so a token limited to some cannot hold the metrics scope;
// the configuration says so at the line of its installations.
func TestMetricsScopeSeesEveryInstallation(t *testing.T) {
	body := "installations:\n  - {id: h, kind: files, tier: trusted-internal, files: {root: ./docs}}\n" +
		"auth:\n  tokens:\n    - {name: prometheus, token_env: T1, scopes: [metrics]}\n" +
		"    - name: desk\n      token_env: T2\n      scopes: [retrieve, metrics]\n      installations: [h]\n"
	_, err := Parse("ingestd.yaml", []byte(body), registry())
	if err == nil || !strings.HasPrefix(err.Error(), "ingestd.yaml:9: auth: token \"desk\": the metrics scope needs a token that sees every installation") {
		t.Errorf("error %v", err)
	}
}
