package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
)

// TestKind: the kind registers (its policy is complete), allows every
// tier, and builds a source from its decoded block.
func TestKind(t *testing.T) {
	reg := connectors.NewRegistry(Kind)
	for _, tier := range []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, ingestd.TierMachineGenerated} {
		inst := ingestd.Installation{ID: "docs", Kind: "url", Tier: tier}
		src, err := reg.Build(inst, connectors.Settings{Decode: func(v any) error {
			*(v.(*Config)) = Config{URLs: []string{"https://docs.example.com/"}, Crawl: CrawlConfig{Depth: 2, MaxPages: 500}}
			return nil
		}})
		if err != nil {
			t.Fatalf("Build(%s): %v", tier, err)
		}
		if _, ok := src.(*Source); !ok {
			t.Fatalf("Build returned %T, want *Source (cmd and the API need Fetch)", src)
		}
	}
}

// TestRedirectID: a page is identified by its final URL after redirects,
// so /old and /new do not become two documents.
func TestRedirectID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/new#top", http.StatusMovedPermanently)
		case "/new":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("moved here"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{srv.URL + "/old"}, AllowPrivateNetworks: true}, nil)
	items, err := src.Fetch(context.Background(), srv.URL+"/old")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := items[0].ExternalID, srv.URL+"/new"; got != want {
		t.Errorf("external id = %q, want %q", got, want)
	}
}
