package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ingestd/ingestd"
)

// The browser tests drive Debian's chromium, headless, from Go through
// the DevTools protocol. They run wherever a chromium is installed; CI
// sets INGESTD_TEST_CHROMIUM (to 1 or the browser's path), and then a
// missing browser fails them instead of skipping.

func chromiumPath(t *testing.T) string {
	t.Helper()
	v := os.Getenv("INGESTD_TEST_CHROMIUM")
	if v != "" && v != "1" {
		if _, err := os.Stat(v); err == nil {
			return v
		}
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if v != "" {
		t.Fatalf("INGESTD_TEST_CHROMIUM=%s, but no chromium is installed (apt-get install chromium)", v)
	}
	t.Skip("no chromium installed and INGESTD_TEST_CHROMIUM unset: the browser tests need Debian's chromium")
	return ""
}

// pageLog is what the page reported: exceptions, console.error calls and
// the browser's own error entries (a CSP violation, a failed load).
type pageLog struct {
	mu     sync.Mutex
	errors []chromedp.ConsoleMessage
	marks  chan string
	n      int
}

func (l *pageLog) add(m chromedp.ConsoleMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, m)
}

// take returns the errors the page reported up to now, leaving none. The
// console's messages come in order: once a mark written now is read
// back, every message before it is in.
func (l *pageLog) take(t *testing.T, ctx context.Context) []chromedp.ConsoleMessage {
	t.Helper()
	l.n++
	mark := fmt.Sprintf("mark:%d", l.n)
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`console.info(%q)`, mark), chromedp.EvalIgnoreExceptions)(ctx, tg)
		return err
	}))
	for got := ""; got != mark; {
		select {
		case got = <-l.marks:
		case <-ctx.Done():
			t.Fatalf("the console's messages stopped: %v", ctx.Err())
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.errors
	l.errors = nil
	return out
}

// newBrowser starts a headless chromium with an empty profile, no
// network of its own (no QUIC, no background requests, no updates, no
// sync) and returns a tab's context with its log.
func newBrowser(t *testing.T) (context.Context, *pageLog) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // a container's small /dev/shm
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	// A deadline so that a page that never gets ready fails the test
	// instead of hanging it; no assertion reads the time.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	log := &pageLog{marks: make(chan string, 16)}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			switch {
			case m.Type == chromedp.ConsoleInfo && strings.HasPrefix(m.Text, "mark:"):
				log.marks <- m.Text
			case m.Type == chromedp.ConsoleError, m.IsException():
				log.add(m)
			}
		}
	}()
	return ctx, log
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the page; a promise is
// awaited.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("%s: %v", sel, err)
	}
	return v
}

// ready waits until the console shows page.
func ready(page string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#view[data-page=%q][data-state="ready"]`, page)))
}

// open goes to a page of the console already loaded in the tab: a
// hashchange, so the page does not reload.
func open(page string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[string](fmt.Sprintf(`location.hash = %q`, "#"+page))(ctx, tg)
			return err
		}),
		ready(page),
	)
}

// signIn loads the console on the installations page and signs in with
// tok through the form, as an operator does.
func signIn(s *server, tok string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(s.URL+"/ui/#installations"),
		ready("installations"),
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Click(chromedp.CSS("#signin-button")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="who"][text()="token set for this tab"]`)),
	)
}

// search runs a query in the playground.
func search(query string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		open("search"),
		chromedp.SendKeys(chromedp.CSS("#query"), query),
		chromedp.Click(chromedp.CSS("#search-button")),
		chromedp.WaitVisible(chromedp.CSS(`#answer[data-state="ready"] .view-answer`)),
	)
}

// pendingRoutes are the document routes the console already calls and
// another change adds to the API (GET /v1/installations/{id}/documents,
// GET /v1/documents/{id}); until then they answer 404 or 405, which the
// page shows as "not available" and the browser logs as a failed load.
func pendingRoute(m chromedp.ConsoleMessage) bool {
	u, err := url.Parse(m.URL)
	return err == nil && m.Source == "network" &&
		(strings.HasSuffix(u.Path, "/documents") || strings.HasPrefix(u.Path, "/v1/documents/")) &&
		(strings.Contains(m.Text, "status of 404") || strings.Contains(m.Text, "status of 405"))
}

var pages = []string{"installations", "provenance", "documents", "search", "blocks", "gateway", "dlq", "erasures"}

// TestPagesLoadWithoutErrors: every page of the console loads and shows
// its data with no exception, no console error, no CSP violation and no
// failed load, on a token-less loopback server and, signed in with an
// admin token, on one with tokens.
func TestPagesLoadWithoutErrors(t *testing.T) {
	ctx, log := newBrowser(t)
	for _, tokens := range []bool{false, true} {
		s := newServer(t, tokens)
		if tokens {
			do(t, ctx, signIn(s, adminToken))
			log.take(t, ctx) // the first page asked before the token was entered: 401
		} else {
			do(t, ctx, chromedp.Navigate(s.URL+"/ui/#installations"), ready("installations"))
		}
		for _, p := range append(pages[1:], pages[0]) {
			do(t, ctx, open(p))
			if body := text(t, ctx, "#view"); strings.Contains(body, "null") || strings.Contains(body, "undefined") {
				t.Errorf("tokens %v: page %s shows a missing value as text: %q", tokens, p, body)
			}
			if n := eval[int](t, ctx, `document.querySelectorAll("#view .problem").length`); n != 0 {
				t.Errorf("tokens %v: page %s shows a problem: %s", tokens, p, text(t, ctx, "#view .problem"))
			}
			// Each page shows what the server holds: two installations,
			// their documents by tier, the blocked turn's interval and
			// document, the call the gateway held, one dead letter, one
			// tombstone.
			want := map[string]int{"installations": 2, "provenance": 2 + 2, "blocks": 1 + 1, "gateway": 1, "dlq": 1, "erasures": 1}[p]
			if n := eval[int](t, ctx, `document.querySelectorAll("#view tbody tr").length`); n < want {
				t.Errorf("tokens %v: page %s shows %d rows, want %d", tokens, p, n, want)
			}
		}
		do(t, ctx, open("documents"),
			chromedp.Click(chromedp.CSS(`button[data-installation="handbook"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#document-list > *`)))
		if state := text(t, ctx, "#document-list"); !strings.Contains(state, "not available") && !strings.Contains(state, "Documents of") {
			t.Errorf("documents of handbook: %q", state)
		}
		do(t, ctx, search("vacation days"))
		for _, m := range log.take(t, ctx) {
			if !pendingRoute(m) {
				t.Errorf("tokens %v: %s %s (%s)", tokens, m, m.Source, m.URL)
			}
		}
	}
}

// TestInjectionMailIsBlocked: the quickstart's injection mail, in an
// untrusted installation, comes back for a refund question; the
// playground shows the verdict blocked, the mail's chunk with its tier,
// and a trusted view without it whose verdict allows tools. A token with
// only the retrieve scope is enough.
func TestInjectionMailIsBlocked(t *testing.T) {
	ctx, _ := newBrowser(t)
	s := newServer(t, true)
	do(t, ctx, signIn(s, chatToken), search("refund bank transfer IBAN order 5521"))
	views := eval[string](t, ctx, `Array.from(document.querySelectorAll("#answer .view-answer")).map(v => v.querySelector("h3").textContent).join(",")`)
	if views != "Answer,Trusted view" {
		t.Fatalf("views %q, want the answer and the trusted view", views)
	}
	if v := eval[string](t, ctx, `document.querySelectorAll("#answer .view-answer")[0].querySelector(".verdict").dataset.verdict`); v != "blocked" {
		t.Errorf("answer's verdict %q, want blocked", v)
	}
	mailTier := eval[string](t, ctx, `(() => {
		for (const tr of document.querySelectorAll("#answer .view-answer")[0].querySelectorAll("[data-block] tbody tr"))
			if (tr.querySelector(".title").textContent === "URGENT: refund must be wired today") return tr.querySelector(".tier").textContent;
		return "not shown"; })()`)
	if mailTier != "untrusted-external" {
		t.Errorf("the injection mail's row shows tier %q, want untrusted-external", mailTier)
	}
	trusted := eval[string](t, ctx, `document.querySelectorAll("#answer .view-answer")[1].querySelector(".verdict").dataset.verdict`)
	untrustedRows := eval[int](t, ctx, `document.querySelectorAll("#answer .view-answer")[1].querySelectorAll('tr[data-tier="untrusted-external"]').length`)
	if trusted != "allowed" || untrustedRows != 0 {
		t.Errorf("trusted view: verdict %q with %d untrusted rows, want allowed with none", trusted, untrustedRows)
	}
	if body := text(t, ctx, "#answer"); !strings.Contains(body, "Blocked: only read tools allowed") {
		t.Errorf("the verdict does not say which tool classes are left: %q", body)
	}
	if body := text(t, ctx, "#answer"); !strings.Contains(body, "mode enforce, reason untrusted_grounding") {
		t.Errorf("the verdict does not show its mode and reason: %q", body)
	}
}

// TestLatePageIsNotShownOverTheNext: a page whose data arrives after the
// operator has gone on to another (the installations, slow here, then
// the playground) is not drawn over it — the race a sign-in's reload
// ran against a quick click to another page.
func TestLatePageIsNotShownOverTheNext(t *testing.T) {
	ctx, _ := newBrowser(t)
	s := newServer(t, false)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/#search"), ready("search"))
	page := eval[string](t, ctx, `new Promise((done) => {
		const slow = window.fetch;
		window.fetch = (url, opts) => String(url).endsWith("/v1/installations")
			? new Promise((r) => setTimeout(r, 600)).then(() => slow(url, opts))
			: slow(url, opts);
		location.hash = "#installations";
		setTimeout(() => { location.hash = "#search"; }, 100);
		setTimeout(() => done(document.getElementById("view").dataset.page + " " + (document.getElementById("query") ? "query" : "no query")), 1500);
	})`)
	if page != "search query" {
		t.Fatalf("after the slow page answered, the view shows %q, want the playground", page)
	}
}

// TestDocumentStringsAreText: titles, texts and errors carrying <script>
// and <img onerror> are shown as the characters they are: no element is
// made from them and nothing of them runs.
func TestDocumentStringsAreText(t *testing.T) {
	ctx, log := newBrowser(t)
	s := newServer(t, false)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/#installations"), ready("installations"),
		chromedp.Click(chromedp.CSS(`tr[data-installation="support"] button.passes`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs table`)))
	if got := text(t, ctx, "#runs .error-text"); got != scriptError {
		t.Errorf("the pass's error reads %q, want %q", got, scriptError)
	}
	do(t, ctx, search("refund form invoice copy printer toner table"))
	titles := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#answer .title")).map(e => e.textContent)`)
	for _, want := range []string{scriptTitle, imgTitle} {
		if !slices.Contains(titles, want) {
			t.Errorf("title %q not shown as text; titles shown: %q", want, titles)
		}
	}
	texts := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#answer .text")).map(e => e.textContent)`)
	if !slices.Contains(texts, imgText) {
		t.Errorf("text %q not shown as text; texts shown: %q", imgText, texts)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("main script, main img, main b, main iframe").length`); n != 0 {
		t.Errorf("%d script, img, b or iframe elements in the page: markup from documents was inserted", n)
	}
	do(t, ctx, open("dlq"))
	if got := text(t, ctx, "#view .error-text"); got != `embed: <img src=x onerror="window.__pwned='dlq'">` {
		t.Errorf("the dead letter's error reads %q", got)
	}
	if got := eval[string](t, ctx, `String(window.__pwned)`); got != "undefined" {
		t.Errorf("window.__pwned = %q: a document's markup ran", got)
	}
	for _, m := range log.take(t, ctx) {
		if !pendingRoute(m) {
			t.Errorf("%s %s (%s)", m, m.Source, m.URL)
		}
	}
}

// TestReplayNeedsAnAdminToken: the dead letters' replay, an admin
// action, is refused to a visitor without a token (401) and to a token
// without the admin scope (403), and works with an admin token.
func TestReplayNeedsAnAdminToken(t *testing.T) {
	ctx, _ := newBrowser(t)
	s := newServer(t, true)
	buttons := `document.querySelectorAll("button.replay").length`
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/#dlq"), ready("dlq"))
	if msg, n := text(t, ctx, "#view .problem"), eval[int](t, ctx, buttons); !strings.Contains(msg, "401") || n != 0 {
		t.Errorf("without a token: %q and %d replay buttons, want 401 and none", msg, n)
	}
	do(t, ctx, signIn(s, chatToken), open("dlq"))
	if msg, n := text(t, ctx, "#view .problem"), eval[int](t, ctx, buttons); !strings.Contains(msg, "403") || n != 0 {
		t.Errorf("with a retrieve token: %q and %d replay buttons, want 403 and none", msg, n)
	}
	// The page's own requests, sent anyway with the retrieve token (a
	// button left from an admin's session, a script in the console), are
	// refused by the server: the check is the API's, not the page's.
	status := eval[int](t, ctx, `fetch("/v1/dlq/42/replay", {method: "POST", headers: {"Content-Type": "application/json",
		"Authorization": "Bearer " + sessionStorage.getItem("ingestd.console.token")}}).then(r => r.status)`)
	if status != http.StatusForbidden {
		t.Errorf("replay with a retrieve token: %d, want 403", status)
	}
	if got := s.dead.Replayed(); len(got) != 0 {
		t.Fatalf("replayed %q without an admin token", got)
	}

	do(t, ctx, signIn(s, adminToken), open("dlq"),
		chromedp.Click(chromedp.CSS(`button.replay[data-id="42"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.replay[data-result]`)))
	if got := eval[string](t, ctx, `document.querySelector("button.replay").dataset.result`); got != "queued" {
		t.Errorf("replay with an admin token: %q, want queued", got)
	}
	if got := s.dead.Replayed(); !slices.Equal(got, []string{deadLetterID}) {
		t.Errorf("replayed %q, want [%s]", got, deadLetterID)
	}
}

// evilPage is a page of another site that tries to drive the console's
// server (a token-less loopback one, which asks no token): replay a dead
// letter by a no-cors fetch, by a JSON fetch (which needs a preflight)
// and by a form; read the dead letters; and frame the console. It
// reports what its script could see.
const evilPage = `<!doctype html><html><body>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="TARGET/v1/dlq/42/replay"><input name="{}" value=""></form>
<iframe id="framed" src="TARGET/ui/#dlq"></iframe>
<script>
const T = "TARGET";
const out = {};
const loaded = (el) => new Promise((ok) => el.addEventListener("load", ok, {once: true}));
const framed = loaded(document.getElementById("framed"));
(async () => {
  try { const r = await fetch(T + "/v1/dlq/42/replay", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: "{}"}); out.nocors = r.type; }
  catch (e) { out.nocors = "error"; }
  try { const r = await fetch(T + "/v1/dlq/42/replay", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}); out.json = String(r.status); }
  catch (e) { out.json = "error"; }
  try { const r = await fetch(T + "/v1/dlq"); out.read = await r.text(); }
  catch (e) { out.read = "error"; }
  const sink = loaded(document.getElementById("sink"));
  document.getElementById("f").submit();
  await sink;
  await framed;
  try { out.frame = String(document.getElementById("framed").contentDocument.body.textContent); }
  catch (e) { out.frame = "error"; }
  document.body.dataset.out = JSON.stringify(out);
})();
</script></body></html>`

// TestOtherOriginCannotDriveIt: a page of another site, in the same
// browser, cannot replay a dead letter on a token-less server, read its
// dead letters, or run the console in a frame; the console itself, on
// the server's origin, can.
func TestOtherOriginCannotDriveIt(t *testing.T) {
	ctx, _ := newBrowser(t)
	s := newServer(t, false)
	target := s.URL // http://127.0.0.1:port
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(strings.ReplaceAll(evilPage, "TARGET", target)))
	}))
	t.Cleanup(evil.Close)
	u, err := url.Parse(evil.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Another site: localhost is not 127.0.0.1.
	do(t, ctx, chromedp.Navigate("http://localhost:"+u.Port()+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-out]`)))
	out := eval[string](t, ctx, `document.body.dataset.out`)
	if got := s.dead.Replayed(); len(got) != 0 {
		t.Errorf("another site replayed %q", got)
	}
	for _, want := range []string{`"nocors":"opaque"`, `"json":"error"`, `"read":"error"`, `"frame":"error"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the other site saw %s, want %s in it", out, want)
		}
	}
	var framed bool
	for _, r := range s.Seen() {
		if strings.HasPrefix(r, "GET /ui/ ") {
			framed = true
		}
		if strings.HasPrefix(r, "GET /ui/console.js") || strings.HasPrefix(r, "GET /v1/installations") {
			t.Errorf("the framed console ran: %s", r)
		}
	}
	if !framed {
		t.Errorf("the frame never asked for the console (requests: %q): the test proves nothing about framing", s.Seen())
	}

	// The check can fail: the console on the server's own origin replays.
	do(t, ctx, chromedp.Navigate(target+"/ui/#dlq"), ready("dlq"),
		chromedp.Click(chromedp.CSS(`button.replay[data-id="42"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.replay[data-result="queued"]`)))
	if got := s.dead.Replayed(); !slices.Equal(got, []string{deadLetterID}) {
		t.Errorf("the console replayed %q, want [%s]", got, deadLetterID)
	}
}

// TestScreenshots writes a screenshot of each page into the folder
// INGESTD_CONSOLE_SCREENSHOTS names (docs/console for the README):
//
//	INGESTD_CONSOLE_SCREENSHOTS=$PWD/docs/console go test ./console/ -run TestScreenshots
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("INGESTD_CONSOLE_SCREENSHOTS")
	if dir == "" {
		t.Skip("INGESTD_CONSOLE_SCREENSHOTS unset: it names the folder the screenshots go to")
	}
	ctx, _ := newBrowser(t)
	s := newServer(t, false)
	shot := func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/#installations"), ready("installations"),
		chromedp.Click(chromedp.CSS(`tr[data-installation="support"] button.passes`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs table`)))
	shot("installations")
	for _, p := range []string{"provenance", "gateway", "dlq", "erasures"} {
		do(t, ctx, open(p))
		shot(p)
	}
	mail := ingestd.DocumentID("support", "<c0ffee42@mail.example.org>")
	do(t, ctx, open("blocks"), chromedp.Click(chromedp.CSS(fmt.Sprintf(`#view tr[data-document=%q] button.open-document`, mail))),
		chromedp.WaitVisible(chromedp.CSS(`#document table`)))
	shot("blocks")
	do(t, ctx, open("documents"), chromedp.Click(chromedp.CSS(`button[data-installation="support"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#document-list > *`)))
	shot("documents")
	do(t, ctx, search("refund bank transfer IBAN order 5521"))
	shot("search")
}

// TestBlockedDocumentsView: the injection mail's turn (retrieved through
// the gateway's MCP server in the fixture) shows on the blocked-turns
// page as one blocked turn of one, with the mail as the document that
// caused it; opening it shows its chunks and tier. A retrieve token is
// refused the page.
func TestBlockedDocumentsView(t *testing.T) {
	ctx, log := newBrowser(t)
	s := newServer(t, true)
	do(t, ctx, signIn(s, adminToken), open("blocks"))
	if got := text(t, ctx, "#blocked-total"); !strings.HasPrefix(got, "1 (") {
		t.Errorf("blocked total %q, want the one blocked turn", got)
	}
	// The turn served the support inbox's mails; each blocked it once.
	mail := ingestd.DocumentID("support", "<c0ffee42@mail.example.org>")
	rows := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#view tr[data-document]")).map(r => r.dataset.document + "@" + r.cells[1].textContent + ":" + r.cells[2].textContent)`)
	if !slices.Contains(rows, mail+"@support:1") {
		t.Fatalf("documents causing blocks %q, want the injection mail (%s) once", rows, mail)
	}
	for _, r := range rows {
		if !strings.HasSuffix(r, "@support:1") {
			t.Errorf("document %q: only the support inbox's mails blocked, once", r)
		}
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#view tr[data-document=%q] button.open-document`, mail))), chromedp.WaitVisible(chromedp.CSS(`#document table`)))
	if title, tier := text(t, ctx, "#document h3"), text(t, ctx, "#document .tier"); title != "URGENT: refund must be wired today" || tier != "untrusted-external" {
		t.Errorf("opened document %q (%s), want the injection mail, untrusted-external", title, tier)
	}
	for _, m := range log.take(t, ctx) {
		if !strings.Contains(m.Text, "401") {
			t.Errorf("%s %s (%s)", m, m.Source, m.URL)
		}
	}
	do(t, ctx, signIn(s, chatToken), open("blocks"))
	if msg := text(t, ctx, "#view .problem"); !strings.Contains(msg, "403") {
		t.Errorf("with a retrieve token: %q, want 403", msg)
	}
}

// TestGatewayCallsView: the call the gateway refused in the injection
// mail's turn shows on the gateway page with what tainted the turn and
// the call's hash, and nothing of its arguments.
func TestGatewayCallsView(t *testing.T) {
	ctx, _ := newBrowser(t)
	s := newServer(t, true)
	do(t, ctx, signIn(s, adminToken), open("gateway"))
	row := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#view tbody tr")).map(r => Array.from(r.cells).map(c => c.textContent).join("|"))`)
	if len(row) != 1 {
		t.Fatalf("%d held calls shown, want 1: %q", len(row), row)
	}
	cells := strings.Split(row[0], "|")
	if len(cells) != 9 || cells[1] != "refused" || cells[2] != "mail" || cells[3] != "send_mail" || cells[4] != "write" || cells[5] != "turn" ||
		!strings.HasPrefix(cells[6], "retrieve served untrusted documents") || !strings.HasPrefix(cells[7], "sha256:") {
		t.Errorf("held call %q", cells)
	}
	if body := text(t, ctx, "#view"); strings.Contains(body, "attacker@") || strings.Contains(body, "customer list") {
		t.Errorf("the gateway page shows the call's arguments: %q", body)
	}
	do(t, ctx, signIn(s, chatToken), open("gateway"))
	if msg := text(t, ctx, "#view .problem"); !strings.Contains(msg, "403") {
		t.Errorf("with a retrieve token: %q, want 403", msg)
	}
}
