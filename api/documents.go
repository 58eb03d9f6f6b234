package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
)

// documentList is the body of GET /v1/installations/{id}/documents.
type documentList struct {
	Installation string                    `json:"installation"`
	Documents    []ingestd.DocumentSummary `json:"documents"`
	// NextPageToken asks for the next page; absent on the last one.
	NextPageToken string `json:"next_page_token,omitempty"`
}

// mountDocuments adds GET /v1/documents/{id} (one document with its tier
// in force, fields and fenced chunks) and GET
// /v1/installations/{id}/documents (a page of an installation's
// documents), retrieve scope, both through package access: a document of
// an installation the token may not see is not found, like one that does
// not exist, and a listing of such an installation is refused.
func (s *server) mountDocuments(mux *http.ServeMux, reader access.DocumentReader, lister access.DocumentLister) {
	if reader != nil {
		reader = access.NewDocuments(reader)
	}
	if lister != nil {
		lister = access.NewListing(lister)
	}
	mux.Handle("GET /v1/documents/{id}", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reader == nil {
			s.fail(w, r, ingestd.Errorf(ingestd.EUNAVAILABLE, "documents cannot be read on this server"))
			return
		}
		doc, err := reader.Document(r.Context(), r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, doc)
	}), ScopeRetrieve, false))
	mux.Handle("GET /v1/installations/{id}/documents", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lister == nil {
			s.fail(w, r, ingestd.Errorf(ingestd.EUNAVAILABLE, "documents cannot be listed on this server"))
			return
		}
		inst := r.PathValue("id")
		req, err := listRequest(inst, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		list, err := lister.ListDocuments(r.Context(), req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		body := documentList{Installation: inst, Documents: list.Documents}
		if list.Next != "" {
			body.NextPageToken = pageToken(inst, list.Next)
		}
		writeJSON(w, http.StatusOK, body)
	}), ScopeRetrieve, false))
}

// listRequest reads limit and page_token from r's query.
func listRequest(inst string, r *http.Request) (ingestd.DocumentListRequest, error) {
	q := r.URL.Query()
	req := ingestd.DocumentListRequest{Installation: inst, Principal: q.Get("principal")}
	n, err := queryLimit(r, "documents", ingestd.MaxListLimit)
	if err != nil {
		return req, err
	}
	req.Limit = n
	if t := q.Get("page_token"); t != "" {
		after, ok := parsePageToken(inst, t)
		if !ok {
			return req, ingestd.Errorf(ingestd.EINVALID, "page_token is not one this listing gave: start again without it")
		}
		req.After = after
	}
	return req, nil
}

// A page token is opaque to clients: the installation and the last
// document id of the page before, so that a token is only good for the
// listing that gave it. Its form may change in any release.
const pageTokenPrefix = "p1\x00"

func pageToken(inst, after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s%s\x00%s", pageTokenPrefix, inst, after)))
}

func parsePageToken(inst, token string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", false
	}
	rest, ok := strings.CutPrefix(string(b), pageTokenPrefix)
	if !ok {
		return "", false
	}
	got, after, ok := strings.Cut(rest, "\x00")
	if !ok || got != inst || after == "" {
		return "", false
	}
	return after, true
}

// queryLimit is the request's ?limit=: 0 when absent, else a whole number
// from 1 to max (no upper bound for max 0), refused naming what it
// counts.
func queryLimit(r *http.Request, what string, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case max > 0 && (err != nil || n < 1 || n > max):
		return 0, ingestd.Errorf(ingestd.EINVALID, "limit %.40q is not a whole number of %s from 1 to %d", v, what, max)
	case err != nil || n < 1:
		return 0, ingestd.Errorf(ingestd.EINVALID, "limit %.40q is not a whole number of %s, at least 1", v, what)
	}
	return n, nil
}
