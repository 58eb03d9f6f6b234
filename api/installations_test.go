package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
	"github.com/ingestd/ingestd/health"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// mustHistory is the sync history of the acceptance corpus's
// installations in a store of its own: handbook synced, support refused
// twice since its one success, the rest never synced.
func mustHistory(t *testing.T) *health.Monitor {
	t.Helper()
	insts := retrievaltest.Installations()
	insts[0].Interval, insts[1].Interval = time.Hour, 10*time.Minute
	m, err := health.New(health.Options{Store: sqlitetest.MustOpen(t), Installations: insts, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []ingestd.SyncRun{
		{Installation: "handbook", Trigger: ingestd.TriggerSchedule, StartedAt: t0.Add(-time.Minute), Duration: time.Second, Seen: 3, Added: 3, Complete: true},
		{Installation: "support", Trigger: ingestd.TriggerSchedule, StartedAt: t0.Add(-30 * time.Minute), Duration: time.Second, Seen: 2, Unchanged: 2, Cursors: "mailbox:INBOX=7"},
		{Installation: "support", Trigger: ingestd.TriggerSchedule, StartedAt: t0.Add(-20 * time.Minute), Duration: time.Second, Error: `imap 127.0.0.1:993: login as "support" refused`},
		{Installation: "support", Trigger: ingestd.TriggerAPI, StartedAt: t0.Add(-10 * time.Minute), Duration: time.Second, Error: `imap 127.0.0.1:993: login as "support" refused`},
	} {
		if err := m.Record(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestInstallationsREST: GET /v1/installations shows each configured
// installation's syncs and health; GET /v1/installations/{id}/runs its
// passes, newest first.
func TestInstallationsREST(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Installations: mustHistory(t)})
	status, body, _ := e.do(t, "GET", "/v1/installations", "", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/installations: %d %s", status, body)
	}
	var list struct {
		Installations []ingestd.InstallationStatus `json:"installations"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list.Installations {
		ids = append(ids, s.ID+":"+s.Health.Status)
	}
	if got, want := strings.Join(ids, " "), "handbook:ok support:failing repo:pending legacy:pending partner:pending"; got != want {
		t.Errorf("installations %s, want %s", got, want)
	}
	sup := list.Installations[1]
	if sup.LastRun == nil || sup.LastRun.Trigger != ingestd.TriggerAPI || sup.ConsecutiveFailures != 2 ||
		!sup.LastSuccessAt.Equal(t0.Add(-30*time.Minute+time.Second)) || !strings.Contains(strings.Join(sup.Health.Reasons, "\n"), `login as "support" refused`) {
		t.Errorf("support: %+v", sup)
	}
	if !sup.NextRunAt.IsZero() || sup.Kind != "imap" || sup.Tier != "untrusted-external" || sup.IntervalSeconds != 600 {
		t.Errorf("support's declaration: %+v", sup)
	}

	tests := []struct {
		path       string
		wantStatus int
		want       string // the errors of the passes, newest first, or a substring of the error message
	}{
		{"/v1/installations/support/runs", 200, `imap 127.0.0.1:993: login as "support" refused|imap 127.0.0.1:993: login as "support" refused|`},
		{"/v1/installations/support/runs?limit=1", 200, `imap 127.0.0.1:993: login as "support" refused`},
		{"/v1/installations/repo/runs", 200, ""},
		{"/v1/installations/suport/runs", 404, `no installation "suport" is configured (configured: handbook, support, repo, legacy, partner)`},
		{"/v1/installations/support/runs?limit=0", 400, `limit "0" is not a whole number of passes, at least 1`},
		{"/v1/installations/support/runs?limit=ten", 400, `limit "ten"`},
		{"/v1/installations/support/runs?limit=5000", 400, "not between 1 and 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, body, _ := e.do(t, "GET", tt.path, "", nil)
			if status != tt.wantStatus {
				t.Fatalf("%d %s, want %d", status, body, tt.wantStatus)
			}
			if status != http.StatusOK {
				if !strings.Contains(errorMessage(t, body), tt.want) {
					t.Errorf("%s, want it to say %s", body, tt.want)
				}
				return
			}
			var runs struct {
				Installation string            `json:"installation"`
				Runs         []ingestd.SyncRun `json:"runs"`
			}
			if err := json.Unmarshal(body, &runs); err != nil || runs.Runs == nil {
				t.Fatalf("%v: %s", err, body)
			}
			var errs []string
			for _, r := range runs.Runs {
				errs = append(errs, r.Error)
			}
			if got := strings.Join(errs, "|"); got != tt.want {
				t.Errorf("passes %q, want %q", got, tt.want)
			}
		})
	}
}

// TestInstallationsConnect: the InstallationService answers what the
// REST routes do, with NotFound and InvalidArgument where they answer 404
// and 400.
func TestInstallationsConnect(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Installations: mustHistory(t)})
	for name, opts := range map[string][]connect.ClientOption{
		"Connect JSON": {connect.WithProtoJSON()},
		"gRPC":         {connect.WithGRPC()},
	} {
		t.Run(name, func(t *testing.T) {
			c := ingestdv1connect.NewInstallationServiceClient(e.H2C, e.URL, opts...)
			list, err := c.ListInstallations(t.Context(), connect.NewRequest(&ingestdv1.ListInstallationsRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			sts := list.Msg.GetInstallations()
			if len(sts) != 5 || sts[1].GetId() != "support" || sts[1].GetHealth().GetStatus() != ingestd.HealthFailing ||
				sts[1].GetConsecutiveFailures() != 2 || sts[1].GetLastRun().GetTrigger() != ingestd.TriggerAPI ||
				sts[1].GetLastSuccessAt() != "2026-06-01T11:30:01Z" || sts[2].GetLastRun() != nil {
				t.Errorf("installations: %v", sts)
			}
			runs, err := c.ListRuns(t.Context(), connect.NewRequest(&ingestdv1.ListRunsRequest{Installation: "support", Limit: 2}))
			if err != nil {
				t.Fatal(err)
			}
			if rs := runs.Msg.GetRuns(); len(rs) != 2 || rs[0].GetFailedInRow() != 2 || rs[1].GetStartedAt() != "2026-06-01T11:40:00Z" {
				t.Errorf("runs: %v", rs)
			}
			for _, tc := range []struct {
				req  *ingestdv1.ListRunsRequest
				code connect.Code
			}{
				{&ingestdv1.ListRunsRequest{Installation: "suport"}, connect.CodeNotFound},
				{&ingestdv1.ListRunsRequest{Installation: "support", Limit: -1}, connect.CodeInvalidArgument},
				{&ingestdv1.ListRunsRequest{Installation: "support", Limit: 1001}, connect.CodeInvalidArgument},
			} {
				if _, err := c.ListRuns(t.Context(), connect.NewRequest(tc.req)); connect.CodeOf(err) != tc.code {
					t.Errorf("ListRuns(%v) = %v, want %s", tc.req, err, tc.code)
				}
			}
		})
	}
}

// TestInstallationsNeedAdmin: the history shows error texts that name
// hosts and accounts, so a retrieval token cannot read it, on REST or
// Connect.
func TestInstallationsNeedAdmin(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Installations: mustHistory(t), Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
	}})
	for _, path := range []string{"/v1/installations", "/v1/installations/support/runs"} {
		for token, want := range map[string]int{"": 401, chatToken: 403, adminToken: 200} {
			if status, body, _ := e.do(t, "GET", path, token, nil); status != want {
				t.Errorf("GET %s with token %q: %d %s, want %d", path, token, status, body, want)
			}
		}
	}
	for token, want := range map[string]connect.Code{chatToken: connect.CodePermissionDenied, adminToken: 0} {
		c := ingestdv1connect.NewInstallationServiceClient(e.H2C, e.URL)
		req := connect.NewRequest(&ingestdv1.ListInstallationsRequest{})
		req.Header().Set("Authorization", "Bearer "+token)
		if _, err := c.ListInstallations(t.Context(), req); connect.CodeOf(err) != want && !(want == 0 && err == nil) {
			t.Errorf("ListInstallations with token %q: %v, want %v", token, err, want)
		}
	}
}

// TestInstallationsWithoutHistory: a server wired without the history
// says so.
func TestInstallationsWithoutHistory(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	if status, body, _ := e.do(t, "GET", "/v1/installations", "", nil); status != http.StatusServiceUnavailable {
		t.Errorf("GET /v1/installations: %d %s, want 503", status, body)
	}
	c := ingestdv1connect.NewInstallationServiceClient(e.H2C, e.URL)
	if _, err := c.ListInstallations(t.Context(), connect.NewRequest(&ingestdv1.ListInstallationsRequest{})); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("ListInstallations: %v, want unavailable", err)
	}
}

// TestWrongMethod: every route answers a method it does not take with 405
// and the methods it does take in Allow — REST, Connect and gRPC routes
// and probes alike (the webhook intake answers its own, see
// connectors/webhook) — and a path no route serves stays 404.
func TestWrongMethod(t *testing.T) {
	var fx effects
	o := fx.options()
	o.Installations, o.DeadLetters = mustHistory(t), mustDeadLetters(t, 0)
	e := MustServe(t, ingestd.ModeEnforce, o)
	id := retrievaltest.Vacation.ID()
	tests := []struct {
		path    string
		methods []string // methods it does not take
		allow   []string // what Allow must list
	}{
		{"/v1/retrieve", []string{"GET", "PUT", "PATCH", "DELETE"}, []string{"POST"}},
		{"/v1/provenance", []string{"POST", "PUT", "DELETE"}, []string{"GET", "HEAD"}},
		{"/v1/documents/" + id + "/reject", []string{"GET", "PUT", "DELETE"}, []string{"POST"}},
		{"/v1/documents/" + id, []string{"POST", "PUT"}, []string{"DELETE", "GET", "HEAD"}},
		{"/v1/installations/handbook/documents", []string{"POST", "DELETE"}, []string{"GET", "HEAD"}},
		{"/v1/installations/handbook/sync", []string{"GET", "PUT", "DELETE"}, []string{"POST"}},
		{"/v1/installations/docs/urls", []string{"GET", "DELETE"}, []string{"POST"}},
		{"/v1/installations", []string{"POST", "PUT", "DELETE"}, []string{"GET", "HEAD"}},
		{"/v1/installations/handbook/runs", []string{"POST", "DELETE"}, []string{"GET", "HEAD"}},
		{"/v1/dlq", []string{"POST", "DELETE"}, []string{"GET", "HEAD"}},
		{"/v1/dlq/7/replay", []string{"GET", "PUT"}, []string{"POST"}},
		{"/v1/dlq/replay", []string{"GET", "DELETE"}, []string{"POST"}},
		{"/healthz", []string{"POST", "DELETE"}, []string{"GET", "HEAD"}},
		{"/readyz", []string{"POST", "PUT"}, []string{"GET", "HEAD"}},
		{"/metrics", []string{"POST"}, []string{"GET", "HEAD"}},
		{"/ingestd.v1.RetrievalService/Retrieve", []string{"PUT", "DELETE"}, []string{"GET", "POST"}},
		{"/ingestd.v1.RetrievalService/Provenance", []string{"PUT", "PATCH"}, []string{"GET", "POST"}},
		{"/ingestd.v1.InstallationService/ListInstallations", []string{"PUT", "DELETE"}, []string{"GET", "POST"}},
		{"/ingestd.v1.InstallationService/ListRuns", []string{"PUT"}, []string{"GET", "POST"}},
		{"/grpc.health.v1.Health/Check", []string{"GET", "PUT"}, []string{"POST"}},
	}
	for _, tt := range tests {
		for _, m := range tt.methods {
			t.Run(m+" "+tt.path, func(t *testing.T) {
				req, _ := http.NewRequestWithContext(t.Context(), m, e.URL+tt.path, nil)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusMethodNotAllowed {
					t.Fatalf("%d, want 405", resp.StatusCode)
				}
				allow := strings.Split(strings.ReplaceAll(resp.Header.Get("Allow"), " ", ""), ",")
				slices.Sort(allow)
				if got, want := strings.Join(allow, ","), strings.Join(tt.allow, ","); got != want {
					t.Errorf("Allow %q, want %q", resp.Header.Get("Allow"), want)
				}
			})
		}
	}
	for _, c := range []call{{method: "GET", path: "/v2/nothing"}, {method: "DELETE", path: "/v1/installations/handbook", ctype: "application/json"}} {
		if status, body := e.send(t, c); status != http.StatusNotFound {
			t.Errorf("%s %s: %d %s, want 404", c.method, c.path, status, body)
		}
	}
	// Even without a Content-Type: the 405 says what to do, where a 415
	// would send a client looking for the wrong mistake.
	if status, body := e.send(t, call{method: "DELETE", path: "/v1/retrieve"}); status != http.StatusMethodNotAllowed || !strings.Contains(body, "use POST") {
		t.Errorf("DELETE /v1/retrieve without Content-Type: %d %s, want 405 saying to use POST", status, body)
	}
	if n := fx.total(); n != 0 {
		t.Errorf("requests with a wrong method reached %d handlers", n)
	}
}

// TestBodyNotAnObject: a body that is JSON but not an object, or a field
// of the wrong JSON type, is refused with a message in JSON's words: no Go
// type (api.requestBody, []string, *bool, int) and no parser jargon.
func TestBodyNotAnObject(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, effectsOptions())
	tests := []struct {
		path, body, want string
	}{
		{"/v1/retrieve", `[]`, "request body must be a JSON object, not an array"},
		{"/v1/retrieve", `"refund"`, "request body must be a JSON object, not a string"},
		{"/v1/retrieve", `8`, "request body must be a JSON object, not a number"},
		{"/v1/retrieve", `true`, "request body must be a JSON object, not true or false"},
		{"/v1/retrieve", `{"query": "refund", "top_k": "8"}`, `field "top_k" must be a whole number from 1 to 100, not a string`},
		{"/v1/retrieve", `{"query": "refund", "installations": "support"}`, `field "installations" must be an array of strings, not a string`},
		{"/v1/retrieve", `{"query": "refund", "expand": "yes"}`, `field "expand" must be true or false, not a string`},
		{"/v1/retrieve", `{"query": ["refund"]}`, `field "query" must be a string, not an array`},
		{"/v1/installations/docs/urls", `["https://docs.example.com/"]`, "request body must be a JSON object, not an array"},
		{"/ingestd.v1.RetrievalService/Retrieve", `[]`, "the request must be a JSON object, not an array"},
		{"/ingestd.v1.RetrievalService/Retrieve", `"refund"`, "the request must be a JSON object, not a string"},
		{"/ingestd.v1.InstallationService/ListRuns", ` [{"installation": "support"}]`, "the request must be a JSON object, not an array"},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.body, func(t *testing.T) {
			status, body := e.send(t, call{method: "POST", path: tt.path, ctype: "application/json", body: tt.body})
			if status != http.StatusBadRequest || !strings.Contains(errorMessage(t, []byte(body)), tt.want) {
				t.Errorf("%d %s, want 400 saying %q", status, body, tt.want)
			}
			for _, goish := range []string{"requestBody", "api.", "[]string", "*bool", "int32", "ingestdv1", "unexpected token", "json:"} {
				if strings.Contains(body, goish) {
					t.Errorf("message %s names %q", body, goish)
				}
			}
		})
	}
}

// errorMessage is the message of an error body, REST's
// {"error": {"message"}} or Connect's {"message"}.
func errorMessage(tb testing.TB, body []byte) string {
	tb.Helper()
	var v struct {
		Error   struct{ Message string } `json:"error"`
		Message string                   `json:"message"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		tb.Fatalf("error body %s: %v", body, err)
	}
	return v.Error.Message + v.Message
}

// effectsOptions are options whose admin callbacks do nothing.
func effectsOptions() api.Options {
	var fx effects
	return fx.options()
}

// TestUnknownInstallationFilter: a retrieve request whose installations
// filter names one that is not configured is refused, naming those that
// are, on REST (400) and on Connect and gRPC (InvalidArgument), instead of
// an empty answer; the service checks it, so every surface does.
func TestUnknownInstallationFilter(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	const want = `installation "suport" is not configured (configured: handbook, support, repo, legacy, partner)`
	status, body, _ := e.do(t, "POST", "/v1/retrieve", "", `{"query": "refund", "installations": ["support", "suport"]}`)
	if status != http.StatusBadRequest || !strings.Contains(errorMessage(t, body), want) {
		t.Errorf("REST: %d %s, want 400 saying %s", status, body, want)
	}
	if status, body, _ := e.do(t, "POST", "/v1/retrieve", "", `{"query": "refund", "installations": ["support"]}`); status != http.StatusOK {
		t.Errorf("REST with a configured installation: %d %s", status, body)
	}
	for name, opts := range map[string][]connect.ClientOption{"Connect": nil, "gRPC": {connect.WithGRPC()}} {
		c := ingestdv1connect.NewRetrievalServiceClient(e.H2C, e.URL, opts...)
		_, err := c.Retrieve(t.Context(), connect.NewRequest(&ingestdv1.RetrieveRequest{Query: "refund", Installations: []string{"suport"}}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want invalid_argument saying %s", name, err, want)
		}
	}
}

// TestInstallationsScoped: an admin token limited to the handbook lists
// the handbook alone and is refused the support mailbox's passes (whose
// errors name its host and account), on REST and Connect alike.
func TestInstallationsScoped(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Installations: mustHistory(t), Tokens: []api.Token{
		{Name: "desk-ops", Token: opsToken, Scopes: []string{api.ScopeAdmin}, Installations: []string{"handbook"}},
	}})
	status, body, _ := e.do(t, "GET", "/v1/installations", opsToken, nil)
	var list struct {
		Installations []ingestd.InstallationStatus `json:"installations"`
	}
	if err := json.Unmarshal(body, &list); status != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/installations: %d %s", status, body)
	}
	if len(list.Installations) != 1 || list.Installations[0].ID != "handbook" {
		t.Errorf("a token limited to the handbook lists %+v", list.Installations)
	}
	for path, want := range map[string]int{"/v1/installations/handbook/runs": 200, "/v1/installations/support/runs": 403} {
		if status, body, _ := e.do(t, "GET", path, opsToken, nil); status != want {
			t.Errorf("GET %s: %d %s, want %d", path, status, body, want)
		} else if want == 403 && strings.Contains(string(body), "login as") {
			t.Errorf("GET %s refused but quoted the pass: %s", path, body)
		}
	}
	c := ingestdv1connect.NewInstallationServiceClient(e.H2C, e.URL, connect.WithGRPC())
	req := connect.NewRequest(&ingestdv1.ListInstallationsRequest{})
	req.Header().Set("Authorization", "Bearer "+opsToken)
	got, err := c.ListInstallations(t.Context(), req)
	if err != nil || len(got.Msg.GetInstallations()) != 1 || got.Msg.GetInstallations()[0].GetId() != "handbook" {
		t.Errorf("ListInstallations: %v, %v", got, err)
	}
	runs := connect.NewRequest(&ingestdv1.ListRunsRequest{Installation: "support"})
	runs.Header().Set("Authorization", "Bearer "+opsToken)
	if _, err := c.ListRuns(t.Context(), runs); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("ListRuns(support): %v, want permission denied", err)
	}
}
