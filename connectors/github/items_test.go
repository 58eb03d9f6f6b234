package github_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

func TestNewFromSettings(t *testing.T) {
	reg := connectors.NewRegistry(github.Kind)
	inst := ingestd.Installation{ID: "repo", Kind: "github", Tier: ingestd.TierUntrustedExternal,
		TierByMeta: map[string]map[string]ingestd.Tier{"author_association": {"OWNER": ingestd.TierTrustedInternal}}}
	env := map[string]string{"GH": "tok"}
	build := func(cfg github.Config) error {
		_, err := reg.Build(inst, connectors.Settings{
			Decode:    func(v any) error { *(v.(*github.Config)) = cfg; return nil },
			LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		})
		return err
	}
	if err := build(github.Config{Repos: []string{"a/b"}, TokenEnv: "GH"}); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, cfg := range map[string]github.Config{
		"no repos":        {},
		"bad repo":        {Repos: []string{"just-a-name"}},
		"unset token env": {Repos: []string{"a/b"}, TokenEnv: "MISSING"},
		"per_page":        {Repos: []string{"a/b"}, PerPage: 500},
		"base_url":        {Repos: []string{"a/b"}, BaseURL: "ftp://x"},
		"bad glob":        {Repos: []string{"a/b"}, DocsPaths: []string{"docs/[*"}},
		"app without key": {Repos: []string{"a/b"}, App: &github.AppConfig{AppID: 1, InstallationID: 2}},
	} {
		if err := build(cfg); ingestd.ErrorCode(err) != ingestd.EINVALID {
			t.Errorf("%s: err = %v, want EINVALID", name, err)
		}
	}
}

func TestAppAuth(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f := MustFakeAPI(t)
	f.setJSON(t, "/repos/o/r", `"r"`, map[string]any{"full_name": "o/r", "default_branch": "main"})
	f.setJSON(t, "/repos/o/r/issues", `"i"`, []any{})
	clock := &fakeClock{now: t0}
	var mints int
	f.before = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/app/installations/99/access_tokens" {
			return false
		}
		if r.Method != http.MethodPost || !validJWT(t, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), &key.PublicKey, clock.Now()) {
			http.Error(w, "bad jwt", http.StatusUnauthorized)
			return true
		}
		mints++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"token": "ghs_inst", "expires_at": clock.Now().Add(time.Hour)})
		return true
	}
	src, err := github.NewSource("gh", github.Config{Repos: []string{"o/r"}, BaseURL: f.URL, Include: github.Include{Docs: no(), IssueComments: no(), ReviewComments: no()}},
		github.Options{App: &github.App{AppID: 7, InstallationID: 99, PrivateKeyPEM: pemKey}, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	pass := connectortest.New(nil)
	if err := src.Sync(context.Background(), pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Fails()) > 0 {
		t.Fatalf("fails: %v", pass.Fails())
	}
	if mints != 1 {
		t.Errorf("tokens minted = %d, want 1 (cached)", mints)
	}
	for _, r := range f.Requests() {
		if strings.HasPrefix(r.Path, "/repos/") && r.Auth != "Bearer ghs_inst" {
			t.Errorf("%s sent %q, want the installation token", r.Path, r.Auth)
		}
	}
}

func validJWT(t *testing.T, jwt string, pub *rsa.PublicKey, now time.Time) bool {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
		t.Log("jwt signature invalid")
		return false
	}
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Iat, Exp int64
		Iss      string
	}
	if json.Unmarshal(raw, &c) != nil || c.Iss != "7" || c.Iat > now.Unix() || c.Exp <= now.Unix() || c.Exp-c.Iat > 600 {
		t.Logf("jwt claims invalid: %s", raw)
		return false
	}
	return true
}
