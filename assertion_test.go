package ingestd_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

// TestAssertion: an assertion names the person its key signed for until
// it expires; every change to it, another key, an expired or too long
// one, a group and every malformed form is refused, saying why.
func TestAssertion(t *testing.T) {
	key := []byte("assertion-key-for-tests-0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	good, err := ingestd.SignAssertion(key, "alice@example.com", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ingestd.VerifyAssertion(key, good, now); err != nil || p != "user:alice@example.com" {
		t.Fatalf("verify = %q, %v; want user:alice@example.com", p, err)
	}
	parts := strings.Split(good, ".")
	bob := base64.RawURLEncoding.EncodeToString([]byte("user:bob@example.com"))
	sign := func(principal string, exp time.Time) string {
		a, err := ingestd.SignAssertion(key, principal, exp)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	refused := []struct{ name, assertion, why string }{
		{"none", "", "is required"},
		{"another person, same mac", strings.Join([]string{parts[0], bob, parts[2], parts[3]}, "."), "not signed"},
		{"a later expiry, same mac", strings.Join([]string{parts[0], parts[1], "1800000600", parts[3]}, "."), "not signed"},
		{"an expiry written otherwise", strings.Join([]string{parts[0], parts[1], "+" + parts[2], parts[3]}, "."), "not an assertion"},
		{"another key", func() string {
			a, _ := ingestd.SignAssertion([]byte("another-key-for-tests-0123456789abcdef"), "alice@example.com", now.Add(time.Minute))
			return a
		}(), "not signed"},
		{"expired", sign("alice@example.com", now.Add(-time.Minute)), "expired"},
		{"too long", sign("alice@example.com", now.Add(time.Hour)), "more than 15m0s"},
		{"v2", "v2" + good[2:], "not an assertion"},
		{"three parts", strings.Join(parts[:3], "."), "not an assertion"},
		{"bad base64", strings.Join([]string{parts[0], "!!", parts[2], parts[3]}, "."), "not an assertion"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ingestd.VerifyAssertion(key, tt.assertion, now)
			if ingestd.ErrorCode(err) != ingestd.EUNAUTHORIZED || !strings.Contains(ingestd.ErrorMessage(err), tt.why) {
				t.Errorf("verify = %q, %v; want unauthorized saying %q", p, err, tt.why)
			}
			if tt.assertion != "" && strings.Contains(ingestd.ErrorMessage(err), tt.assertion) {
				t.Errorf("the refusal repeats the assertion: %v", err)
			}
		})
	}
	if _, err := ingestd.VerifyAssertion(key, good, now.Add(time.Minute+ingestd.AssertionSkew/2)); err != nil {
		t.Errorf("within the skew after expiry: %v", err)
	}
	if _, err := ingestd.SignAssertion(key, "group:hr", now); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("signing for a group: %v, want invalid", err)
	}
	if _, err := ingestd.SignAssertion(key[:31], "alice@example.com", now); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("signing with a 31-byte key: %v, want invalid", err)
	}
}
