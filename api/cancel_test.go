package api_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// abandoningStore is a store whose CountDocuments sees its client go away
// mid-query and reports it in its own words, as SQLite does
// ("interrupted"), not as context.Canceled.
type abandoningStore struct {
	ingestd.Store
	cancel context.CancelFunc
}

func (s *abandoningStore) CountDocuments(ctx context.Context, _ []string) ([]ingestd.DocumentCount, error) {
	s.cancel()
	return nil, errors.New("interrupted")
}

func (s *abandoningStore) CountDocumentsFor(ctx context.Context, keys []string, _ *ingestd.Reader) ([]ingestd.DocumentCount, error) {
	return s.CountDocuments(ctx, keys)
}

// TestClientThatCancelsIsNotAServerError: a request whose client went
// away while the store worked is logged below ERROR, on REST and Connect.
func TestClientThatCancelsIsNotAServerError(t *testing.T) {
	for _, tt := range []struct {
		name, method, path, body string
	}{
		{"rest", "GET", "/v1/provenance", ""},
		{"connect", "POST", "/ingestd.v1.RetrievalService/Provenance", "{}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, emb := retrievaltest.MustAcceptance(t)
			ctx, cancel := context.WithCancel(t.Context())
			store := &abandoningStore{Store: s, cancel: cancel}
			svc, err := retrieval.New(retrieval.Options{Store: store, Embedder: emb, FirewallMode: ingestd.ModeEnforce, Installations: retrievaltest.Installations()})
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			h := api.New(api.Options{Retriever: svc, Documents: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			req := httptest.NewRequestWithContext(ctx, tt.method, tt.path, strings.NewReader(tt.body))
			req.Host = "127.0.0.1:7700"
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if ctx.Err() == nil {
				t.Fatalf("the store was not asked: %d %s", rec.Code, rec.Body)
			}
			if strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("an abandoned request is logged as a server error:\n%s", logs.String())
			}
		})
	}
}
