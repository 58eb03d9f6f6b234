package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
)

// TestKind: the kind registers (its policy is complete), allows every
// tier, and builds a source from its decoded block that reads one URL.
func TestKind(t *testing.T) {
	reg := connectors.NewRegistry(Kind)
	for _, tier := range []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, ingestd.TierMachineGenerated} {
		inst := ingestd.Installation{ID: "docs", Kind: "url", Tier: tier}
		c, err := reg.Build(inst, connectors.Settings{Decode: func(v any) error {
			*(v.(*Config)) = Config{URLs: []string{"https://docs.example.com/"}, Crawl: CrawlConfig{Depth: 2, MaxPages: 500}}
			return nil
		}})
		if err != nil {
			t.Fatalf("Build(%s): %v", tier, err)
		}
		if c.Reader == nil || !c.RemoteRefs {
			t.Errorf("Build(%s): Reader %v, RemoteRefs %v; want a reader of URLs from anywhere (ingest URL and the API)", tier, c.Reader, c.RemoteRefs)
		}
		if c.Watcher != nil || c.Intake != nil {
			t.Errorf("Build(%s): a url installation declares a watcher or an intake", tier)
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

// TestReaderConformance runs the ItemReader cases against a trusted url
// installation: its own pages read; a URL off its sites, a redirect off
// them, a scheme, an address or credentials the guard refuses do not.
func TestReaderConformance(t *testing.T) {
	const docs = "https://docs.example.com"
	n := MustNet(t)
	n.html(docs+"/guide", "Guide", "<p>the guide</p>")
	n.redirect(docs+"/away", http.StatusFound, "https://evil.example.com/page")
	n.html("https://evil.example.com/page", "Evil", "<p>not ours</p>")
	src := MustNetSource(t, n, ingestd.TierTrustedInternal, Config{URLs: []string{docs + "/"}})
	connectortest.RunItemReader(t, src, connectortest.ReaderCases{
		Inside: []string{docs + "/guide"},
		Outside: []string{
			"https://evil.example.com/page",
			docs + "/away",
			"file:///etc/passwd",
			"http://127.0.0.1/",
			"https://user:pw@docs.example.com/guide",
			"not a url",
		},
	})
}
