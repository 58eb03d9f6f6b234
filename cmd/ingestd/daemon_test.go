package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

// TestDLQAndQueueThroughServe runs the real binary's serve on the
// quickstart (embedded NATS, no NATS listener) with an admin token, and
// `ingestd dlq` and `ingestd sync --queue` against it: they reach the
// embedded NATS through serve's admin API. Before serve starts they run
// the embedded NATS themselves: the pass queued then for an installation
// serve will not know becomes the dead letter the test lists and replays.
func TestDLQAndQueueThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	bin := filepath.Join(t.TempDir(), "ingestd")
	buildBinary(t, bin)
	cfg := mustQuickstart(t)
	mustListenAnywhereLocal(t, cfg)
	base := string(mustRead(t, cfg)) + "\nauth:\n  tokens:\n    - {name: chat, token_env: INGESTD_TEST_CHAT_TOKEN, scopes: [retrieve]}\n    - {name: ops, token_env: INGESTD_TEST_ADMIN_TOKEN, scopes: [admin]}\n"
	scratch := "  - {id: scratch, kind: files, tier: trusted-internal, files: {root: ./handbook}}\n"
	write := func(body string) {
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("INGESTD_TEST_CHAT_TOKEN", "chat-token-for-the-dlq-test-8b3e0f5a")
	t.Setenv("INGESTD_TEST_ADMIN_TOKEN", "admin-token-for-the-dlq-test-2d7c9a41")

	// No serve: the command runs the embedded NATS under the data_dir lock.
	write(strings.Replace(base, "installations:\n", "installations:\n"+scratch, 1))
	code, out, errs := runCmd(t, "sync", "scratch", "--queue", "--config", cfg)
	if code != 0 || !strings.Contains(out, "scratch: sync pass queued; no serve runs on this data_dir") {
		t.Fatalf("sync --queue without serve: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runCmd(t, "dlq", "list", "--config", cfg); code != 0 || out != "no dead letters\n" {
		t.Fatalf("dlq list without serve: exit %d\n%s\n%s", code, out, errs)
	}

	// serve no longer configures scratch: its worker dead-letters the pass.
	write(base)
	srv := startServe(t, bin, cfg)
	pid := fmt.Sprintf("process %d", srv.cmd.Process.Pid)
	var dead []ingestd.DeadLetter
	waitFor(t, func() bool {
		code, out, _ := runCmd(t, "dlq", "list", "--json", "--config", cfg)
		return code == 0 && json.Unmarshal([]byte(out), &dead) == nil && len(dead) == 1
	})
	if d := dead[0]; d.Job.Installation != "scratch" || d.Reason != "unknown installation" {
		t.Fatalf("dead letter %+v, want scratch's pass refused as unknown installation", d)
	}
	// The real binary, as an operator runs it.
	if out, code := runBinary(t, bin, "dlq", "list", "--config", cfg); code != 0 || !strings.Contains(out, "scratch") || !strings.Contains(out, "unknown installation") {
		t.Fatalf("ingestd dlq list: exit %d\n%s", code, out)
	}

	first := dead[0].ID
	code, out, errs = runCmd(t, "dlq", "replay", first, "--config", cfg)
	if code != 0 || out != "dead letter "+first+" queued again\n" {
		t.Fatalf("dlq replay: exit %d\n%s\n%s", code, out, errs)
	}
	// Replayed, the pass is refused again: a new dead letter.
	waitFor(t, func() bool {
		code, out, _ := runCmd(t, "dlq", "list", "--json", "--config", cfg)
		return code == 0 && json.Unmarshal([]byte(out), &dead) == nil && len(dead) == 1 && dead[0].ID != first
	})
	code, out, errs = runCmd(t, "dlq", "replay", "--all", "--config", cfg)
	if code != 0 || out != "1 dead letter queued again\n" {
		t.Fatalf("dlq replay --all: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runCmd(t, "dlq", "replay", "999999", "--config", cfg); code != 1 || !strings.Contains(errs, "no dead letter") {
		t.Errorf("replay of an unknown id: exit %d, %s", code, errs)
	}

	before := strings.Count(srv.log(), "msg=sync.dispatch installation=handbook")
	code, out, errs = runCmd(t, "sync", "handbook", "--queue", "--config", cfg)
	if code != 0 || !strings.Contains(out, "handbook: sync pass queued by serve, "+pid) {
		t.Fatalf("sync --queue beside serve: exit %d\n%s\n%s", code, out, errs)
	}
	waitFor(t, func() bool { return strings.Count(srv.log(), "msg=sync.dispatch installation=handbook") > before })

	// Without the admin token's variable the command says which to set.
	os.Unsetenv("INGESTD_TEST_ADMIN_TOKEN")
	code, _, errs = runCmd(t, "dlq", "list", "--config", cfg)
	if code != 2 || !strings.Contains(errs, `auth: token "ops": environment variable INGESTD_TEST_ADMIN_TOKEN is not set`) {
		t.Errorf("dlq list without the admin token: exit %d, %s", code, errs)
	}
}
