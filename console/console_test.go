package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/ingestd/ingestd/console"
)

// TestServedWithCSP: the console's files are served by the API's handler
// at /ui/, each with the strict policy and its own media type; anything
// else under /ui/ is not found, a change is refused and a foreign Host is
// turned away as on every route.
func TestServedWithCSP(t *testing.T) {
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(console.CSP, want) {
			t.Errorf("CSP %q lacks %q", console.CSP, want)
		}
	}
	if strings.Contains(console.CSP, "unsafe") {
		t.Errorf("CSP %q allows something unsafe", console.CSP)
	}
	s := newServer(t, true)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range []struct {
		method, path, location string
		status                 int
		ctype                  string
	}{
		{"GET", "/ui/", "", 200, "text/html; charset=utf-8"},
		{"HEAD", "/ui/", "", 200, "text/html; charset=utf-8"},
		{"GET", "/ui/console.js", "", 200, "text/javascript; charset=utf-8"},
		{"GET", "/ui/console.css", "", 200, "text/css; charset=utf-8"},
		{"GET", "/ui/favicon.svg", "", 200, "image/svg+xml"},
		{"GET", "/ui/index.html", "", 200, "text/html; charset=utf-8"},
		{"GET", "/ui/assets/console.js", "", 404, ""},
		{"GET", "/ui/../ui/console.js", "/ui/console.js", 307, ""},
		{"GET", "/ui/console.go", "", 404, ""},
		{"POST", "/ui/", "", 405, ""},
		{"GET", "/ui", "/ui/", 307, ""},
	} {
		req, err := http.NewRequest(tt.method, s.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.status {
			t.Errorf("%s %s: %d, want %d (%s)", tt.method, tt.path, res.StatusCode, tt.status, body)
			continue
		}
		if tt.location != "" {
			if loc := res.Header.Get("Location"); loc != tt.location {
				t.Errorf("%s %s: Location %q, want %q", tt.method, tt.path, loc, tt.location)
			}
			continue
		}
		if tt.ctype != "" {
			if got := res.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("%s %s: Content-Type %q, want %q", tt.method, tt.path, got, tt.ctype)
			}
			if got := res.Header.Get("Content-Security-Policy"); got != console.CSP {
				t.Errorf("%s %s: Content-Security-Policy %q, want %q", tt.method, tt.path, got, console.CSP)
			}
			for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
				if got := res.Header.Get(k); got != v {
					t.Errorf("%s %s: %s %q, want %q", tt.method, tt.path, k, got, v)
				}
			}
		}
	}

	// Without tokens the server answers loopback Hosts only, the console
	// too: a rebinding page gets nothing.
	open := newServer(t, false)
	req, _ := http.NewRequest("GET", open.URL+"/ui/console.js", nil)
	req.Host = "attacker.example"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET /ui/console.js with Host attacker.example: %d, want 421", res.StatusCode)
	}
}

// TestPageHasNoInlineCode: the page holds no inline script, no event
// handler attribute, no inline style, and loads only the console's own
// files; the script has no way to insert markup or run text as code.
func TestPageHasNoInlineCode(t *testing.T) {
	page, err := os.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		t.Fatal(err)
	}
	scripts := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				scripts++
				if n.FirstChild != nil {
					t.Errorf("an inline <script>: %q", n.FirstChild.Data)
				}
			case "style":
				t.Error("an inline <style>")
			}
			for _, a := range n.Attr {
				switch {
				case strings.HasPrefix(a.Key, "on"):
					t.Errorf("<%s %s=...>: an event handler attribute", n.Data, a.Key)
				case a.Key == "style":
					t.Errorf("<%s style=...>: an inline style", n.Data)
				case a.Key == "src" || a.Key == "href" || a.Key == "action":
					if !strings.HasPrefix(a.Val, console.Prefix) && !strings.HasPrefix(a.Val, "#") {
						t.Errorf("<%s %s=%q>: only the console's own files and fragments", n.Data, a.Key, a.Val)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if scripts != 1 {
		t.Errorf("%d scripts, want the one", scripts)
	}

	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(['"]|\.src\s*=|\.href\s*=|setAttribute\(['"](on|src|href|style)|srcdoc|javascript:`)
	err = fs.WalkDir(os.DirFS("assets"), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".js") {
			return err
		}
		b, err := os.ReadFile("assets/" + path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := sinks.FindString(line); m != "" {
				t.Errorf("assets/%s:%d: %s: values are inserted as text only", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
