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
	"reflect"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

func TestXrefLinks(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"short", "Fixes #12 and #7.", []string{"o/r#12", "o/r#7"}},
		{"qualified same repo", "see o/r#3", []string{"o/r#3"}},
		{"other repo ignored", "see other/repo#3", nil},
		{"url same host", "dup of https://github.com/o/r/issues/9 and https://github.com/o/r/pull/10", []string{"o/r#10", "o/r#9"}},
		{"url other host", "https://gitlab.com/o/r/issues/9", nil},
		{"self and duplicates", "#5 #5 #1", []string{"o/r#1"}},
		{"html entity and anchors", "&#39; and https://x.io/page#12 and color #fff", nil},
		{"heading is not a ref", "# Title\n#12 at line start", []string{"o/r#12"}},
		{"punctuation around", "(#3), [#4]", []string{"o/r#3", "o/r#4"}},
		{"word before", "v1.2#3 abc#4 #5x", nil},
		{"url fragment", "https://github.com/o/r#12", nil},
		{"end of text", "#8", []string{"o/r#8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := &gh.Issue{Number: gh.Int(5), Body: gh.String(tt.body), HTMLURL: gh.String("https://github.com/o/r/issues/5")}
			it := github.ItemFromIssue("o/r", is)
			var got []string
			for _, l := range it.Links {
				if l.Relation != "xref" {
					t.Errorf("relation %q", l.Relation)
				}
				got = append(got, l.ToExternalID)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("xrefs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestItemFromPullRequestStatus(t *testing.T) {
	tests := []struct {
		name  string
		pr    gh.PullRequest
		want  ingestd.Status
		merge string
	}{
		{"open", gh.PullRequest{State: gh.String("open")}, "", ""},
		{"closed unmerged", gh.PullRequest{State: gh.String("closed"), Merged: gh.Bool(false)}, ingestd.StatusRejected, "false"},
		{"merged", gh.PullRequest{State: gh.String("closed"), Merged: gh.Bool(true)}, "", "true"},
		{"merged_at only", gh.PullRequest{State: gh.String("closed"), MergedAt: &gh.Timestamp{Time: t0}}, "", "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.pr.Number = gh.Int(2)
			tt.pr.AuthorAssociation = gh.String("CONTRIBUTOR")
			it := github.ItemFromPullRequest("o/r", &tt.pr)
			if it.Status != tt.want || it.Meta["merged"] != tt.merge {
				t.Errorf("status %q merged %q, want %q %q", it.Status, it.Meta["merged"], tt.want, tt.merge)
			}
			if it.ItemKind != github.KindPullRequest || it.ExternalID != "o/r#2" || it.Meta[github.MetaAuthorAssociation] != "CONTRIBUTOR" {
				t.Errorf("item = %+v", it)
			}
		})
	}
}

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
