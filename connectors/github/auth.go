package github

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
)

// ParsePrivateKey parses a GitHub App private key (PEM, PKCS#1 as GitHub
// issues it, or PKCS#8). Errors are EINVALID and never echo the key.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "github app private key is not PEM")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "github app private key: not an RSA key in PKCS#1 or PKCS#8")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, ingestd.Errorf(ingestd.EINVALID, "github app private key is not RSA")
	}
	return rk, nil
}

// AppJWT returns the RS256 JSON Web Token a GitHub App authenticates
// with: issued 60 s in the past (clock drift, as GitHub recommends),
// valid 9 minutes (GitHub's cap is 10).
func AppJWT(appID int64, key *rsa.PrivateKey, now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims, err := json.Marshal(map[string]any{
		"iat": now.Add(-60 * time.Second).Unix(),
		"exp": now.Add(9 * time.Minute).Unix(),
		"iss": strconv.FormatInt(appID, 10),
	})
	if err != nil {
		return "", err
	}
	signing := header + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign app jwt: %w", err)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// appTokens mints and caches installation access tokens for a GitHub
// App; a token is renewed five minutes before it expires.
type appTokens struct {
	base           string // API base URL with trailing slash
	appID          int64
	installationID int64
	key            *rsa.PrivateKey
	http           *http.Client
	now            func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time
}

func (t *appTokens) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Before(t.expires.Add(-5*time.Minute)) {
		return t.token, nil
	}
	jwt, err := AppJWT(t.appID, t.key, t.now())
	if err != nil {
		return "", err
	}
	u := t.base + "app/installations/" + strconv.FormatInt(t.installationID, 10) + "/access_tokens"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(nil))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("Accept", mediaTypeGitHub)
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", userAgent)
	resp, err := t.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("installation token: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", ingestd.Errorf(ingestd.EUNAUTHORIZED, "github app installation token: %s", resp.Status)
	}
	var out struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Token == "" {
		return "", ingestd.Errorf(ingestd.EUNAUTHORIZED, "github app installation token: unreadable answer")
	}
	t.token, t.expires = out.Token, out.ExpiresAt
	return t.token, nil
}
