package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemotePinsServeCertificate: over TLS the command trusts exactly the
// certificate tls.cert names, whatever name it was issued to.
func TestRemotePinsServeCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "[]")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	served := filepath.Join(dir, "served.pem")
	writePEM(t, served, srv.Certificate().Raw)
	other := filepath.Join(dir, "other.pem")
	writePEM(t, other, mustSelfSigned(t))

	for _, tt := range []struct {
		name, cert string
		wantErr    string
	}{
		{"the served certificate", served, ""},
		{"another certificate", other, "not the one tls.cert names"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := pinnedTLS(tt.cert)
			if err != nil {
				t.Fatal(err)
			}
			d := &Remote{base: srv.URL, client: &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}}
			_, err = d.ListDLQ(t.Context())
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("ListDLQ: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func writePEM(t *testing.T, path string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSelfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
