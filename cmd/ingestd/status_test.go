package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/imap/imaptest"
)

// brokenConfig is a configuration with a healthy files installation, one
// whose root does not exist and an IMAP installation whose login the
// server refuses, each synced every hour (so serve syncs each at once).
func brokenConfig(t *testing.T) (cfg, missingRoot string) {
	t.Helper()
	ts := imaptest.MustServer(t, "support@example.com", "the right password")
	t.Setenv("TEST_STATUS_IMAP_PASSWORD", "a wrong password")
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "handbook", "leave.md"), "# Leave\n\nVacation days accrue monthly.\n")
	missingRoot = filepath.Join(dir, "no-such-folder")
	cfg = filepath.Join(dir, "ingestd.yaml")
	mustWrite(t, cfg, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: %s
installations:
  - id: handbook
    kind: files
    tier: trusted-internal
    interval: 1h
    files: {root: %s}
  - id: missing
    kind: files
    tier: trusted-internal
    interval: 1h
    files: {root: %s}
  - id: support
    kind: imap
    tier: untrusted-external
    interval: 1h
    imap: {addr: %q, username: support@example.com, password_env: TEST_STATUS_IMAP_PASSWORD, tls: none, insecure: true}
`, filepath.Join(dir, "data"), filepath.Join(dir, "handbook"), missingRoot, ts.Addr))
	return cfg, missingRoot
}

// TestServeShowsBrokenInstallations is the operator's view of issue 14's
// point 11, end to end: serve with a files root that does not exist and a
// mailbox that refuses the login stays ready (retrieval works), while GET
// /v1/installations, /metrics and `ingestd status` — run beside serve,
// reading the store — show both failing with their errors, and the
// refused login, dead-lettered, counts as a failed pass.
func TestServeShowsBrokenInstallations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve with its embedded NATS; -short skips it")
	}
	cfg, missingRoot := brokenConfig(t)
	srv := startServeInProcess(t, cfg)

	byID := map[string]ingestd.InstallationStatus{}
	waitFor(t, func() bool {
		var body installationsBody
		if err := getJSON(srv.base+"/v1/installations", &body); err != nil {
			return false
		}
		for _, s := range body.Installations {
			byID[s.ID] = s
		}
		return byID["handbook"].Health.Status == ingestd.HealthOK && byID["handbook"].Documents == 1 &&
			byID["missing"].Health.Status == ingestd.HealthFailing && byID["support"].Health.Status == ingestd.HealthFailing
	})
	for id, want := range map[string]string{
		"missing": fmt.Sprintf("files root %q does not exist", missingRoot),
		"support": `login as "support@example.com" refused`,
	} {
		s := byID[id]
		if s.LastRun == nil || !strings.Contains(s.LastRun.Error, want) || s.LastRun.Trigger != ingestd.TriggerSchedule ||
			s.ConsecutiveFailures < 1 || !s.LastSuccessAt.IsZero() || s.NextRunAt.IsZero() {
			t.Errorf("%s: %+v, want a failed scheduled pass saying %s", id, s, want)
		}
		if !strings.Contains(strings.Join(s.Health.Reasons, "\n"), want) {
			t.Errorf("%s's health reasons %q do not say %s", id, s.Health.Reasons, want)
		}
	}
	if h := byID["handbook"]; h.LastRun == nil || h.LastRun.Queued != 1 || h.LastRun.Seen != 1 || h.ConsecutiveFailures != 0 {
		t.Errorf("handbook: %+v, want a pass that queued its one document", h)
	}

	// Ready: retrieval works whatever the installations' syncs do.
	resp, err := http.Get(srv.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz %d with failing installations, want 200: readiness is about serving", resp.StatusCode)
	}

	// The refused login is permanent: its job is a dead letter, and the
	// pass that met it is in the history as failed.
	waitFor(t, func() bool {
		var dead []struct {
			Job   ingestd.Job `json:"job"`
			Error string      `json:"error"`
		}
		if err := getJSON(srv.base+"/v1/dlq", &dead); err != nil {
			return false
		}
		for _, d := range dead {
			if d.Job.Kind == ingestd.JobSync && d.Job.Installation == "support" && strings.Contains(d.Error, "refused") {
				return true
			}
		}
		return false
	})
	var runs runsBody
	if err := getJSON(srv.base+"/v1/installations/support/runs", &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs.Runs) != 1 || runs.Runs[0].OK() || runs.Runs[0].FailedInRow != 1 {
		t.Errorf("support's passes %+v, want the one failed pass", runs.Runs)
	}

	// Metrics say it too, without the error text.
	metrics := scrape(t, srv.base)
	for _, want := range []string{
		`ingestd_installation_health{installation="missing",status="failing"} 1`,
		`ingestd_installation_health{installation="support",status="failing"} 1`,
		`ingestd_installation_health{installation="handbook",status="ok"} 1`,
		`ingestd_sync_passes_total{installation="support",result="failed",trigger="schedule"} 1`,
		`ingestd_sync_consecutive_failures{installation="support"} 1`,
		`ingestd_sync_history_up 1`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !regexp.MustCompile(`ingestd_sync_last_success_timestamp_seconds\{installation="handbook"\} \d`).MatchString(metrics) {
		t.Error("/metrics has no last success for handbook")
	}
	if strings.Contains(metrics, "refused") || strings.Contains(metrics, missingRoot) {
		t.Error("/metrics carries an error text")
	}

	// `ingestd status` beside serve reads the same history from the store.
	code, out, errs := runCmd(t, "status", "--config", cfg)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^handbook\s+files\s+trusted-internal\s+1\s+.* ok \(schedule, .*\s+ok$`),
		regexp.MustCompile(`(?m)^missing\s+files\s+trusted-internal\s+0\s+.* failed \(schedule, .*never\s+\d+\s+in \S+\s+! failing$`),
		regexp.MustCompile(`(?m)^support\s+imap\s+untrusted-external\s+0\s+.* failed \(schedule, .*never\s+1\s+in \S+\s+! failing$`),
		regexp.MustCompile(`(?m)^! missing failing: the last (\d+ passes|pass) failed: files root ".*no-such-folder" does not exist$`),
		regexp.MustCompile(`(?m)^! support failing: the last pass failed: imap .*127\.0\.0\.1:\d+: login as "support@example\.com" refused`),
	} {
		if !want.MatchString(out) {
			t.Errorf("status output lacks %s:\n%s", want, out)
		}
	}
	code, out, errs = runCmd(t, "status", "--config", cfg, "--json")
	var body installationsBody
	if code != 0 || json.Unmarshal([]byte(out), &body) != nil || len(body.Installations) != 3 || body.Installations[2].Health.Status != ingestd.HealthFailing {
		t.Errorf("status --json: exit %d, %+v\n%s%s", code, body, out, errs)
	}
	code, out, errs = runCmd(t, "status", "support", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`(?m)^\S+ ago\s+schedule\s+\S+\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+failed: imap .*refused`).MatchString(out) {
		t.Errorf("status support: exit %d\n%s%s", code, out, errs)
	}
}

// TestStatusWithoutServe: with no serve running, `ingestd status` reads
// the history the foreground passes wrote; it refuses an installation
// that is not configured as a usage error, and so does `search
// --installations`.
func TestStatusWithoutServe(t *testing.T) {
	cfg, _ := brokenConfig(t)
	if code, out, errs := runCmd(t, "sync", "handbook", "--config", cfg); code != 0 {
		t.Fatalf("sync handbook: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runCmd(t, "sync", "missing", "--config", cfg); code != 1 || !strings.Contains(errs, "does not exist") {
		t.Fatalf("sync missing: exit %d, want 1 naming the root\n%s\n%s", code, out, errs)
	}
	code, out, errs := runCmd(t, "status", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errs)
	}
	var body installationsBody
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range body.Installations {
		trigger := "-"
		if s.LastRun != nil {
			trigger = s.LastRun.Trigger
		}
		got[s.ID] = s.Health.Status + " " + trigger + " " + strconv.Itoa(s.Documents)
	}
	for id, want := range map[string]string{"handbook": "ok manual 1", "missing": "failing manual 0", "support": "pending - 0"} {
		if got[id] != want {
			t.Errorf("%s: %q, want %q", id, got[id], want)
		}
	}

	code, out, errs = runCmd(t, "status", "handbok", "--config", cfg)
	if code != 2 || !strings.Contains(errs, `"handbok"`) || !strings.Contains(errs, "handbook, missing, support") {
		t.Errorf("status handbok: exit %d, want 2 naming the configured installations\n%s%s", code, out, errs)
	}
	code, out, errs = runCmd(t, "search", "vacation", "--installations", "handbook,handbok", "--config", cfg)
	if code != 2 || !strings.Contains(errs, `installation "handbok" is not configured (configured: handbook, missing, support)`) {
		t.Errorf("search --installations handbok: exit %d, want 2 naming the configured installations\n%s%s", code, out, errs)
	}
	if code, out, errs = runCmd(t, "search", "vacation", "--installations", "handbook", "--config", cfg); code != 0 || !strings.Contains(out, "leave.md") {
		t.Errorf("search --installations handbook: exit %d\n%s%s", code, out, errs)
	}
}

// getJSON decodes the JSON body of a GET that answers 200.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return json.Unmarshal(b, v)
}

// scrape returns the text of /metrics.
func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
