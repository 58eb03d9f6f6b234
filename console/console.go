// Package console is the operator's console: a page at /ui/ made of
// embedded static files (one HTML page, one script, one style sheet, an
// icon), with no build step and nothing loaded from elsewhere. It holds
// no data and no logic of the server: its script calls the API's own
// routes from the operator's browser, with the bearer token the operator
// enters, through the same guard as every other client (the page is of
// the server's origin, so its requests are same-origin, and its changes
// are application/json).
//
// Every response carries a strict Content-Security-Policy: only this
// origin's files, no inline script or style, no plugins, no base URL, no
// form submission, and no framing by another page. The script inserts
// every value it receives as text (textContent), never as markup:
// documents' titles, text and errors are written by outside authors.
package console

import (
	"bytes"
	"embed"
	"net/http"
	"strings"
	"time"
)

// CSP is the Content-Security-Policy of every response of the console.
const CSP = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

//go:embed assets
var assets embed.FS

// types are the files served and their media types; anything else is
// not found.
var types = map[string]string{
	"index.html":  "text/html; charset=utf-8",
	"console.js":  "text/javascript; charset=utf-8",
	"console.css": "text/css; charset=utf-8",
	"favicon.svg": "image/svg+xml",
}

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// Handler serves the console's files under Prefix: Prefix itself is the
// page. Mount it for GET (and so HEAD) at Prefix; it needs no token, as
// the files hold no data.
func Handler() http.Handler {
	// The embedded files never change while the process runs: one
	// modification time, the start, for conditional requests.
	started := time.Now()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		ct, known := types[name]
		if !ok || !known {
			h.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("not found\n"))
			return
		}
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		h.Set("Content-Type", ct)
		http.ServeContent(w, r, name, started, bytes.NewReader(b))
	})
}
