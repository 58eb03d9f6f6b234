package main

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// TestBenchArchive runs `ingestd-bench archive` on a small corpus: every
// step is measured beside the plain copy, and the archive holds the
// corpus. With a PostgreSQL server it measures the PostgreSQL store too.
func TestBenchArchive(t *testing.T) {
	args := []string{"archive", "--documents", "30", "--chunks", "2", "--dims", "16", "--json"}
	want := []string{"put sqlite", "export sqlite", "plain copy", "backup sqlite", "import sqlite"}
	if srv := os.Getenv(pgtest.EnvURL); srv != "" {
		t.Setenv("INGESTD_TEST_BENCH_ARCHIVE_PG", pgtest.MustCreateDB(t, srv))
		args = append(args, "--postgres-url-env", "INGESTD_TEST_BENCH_ARCHIVE_PG")
		want = append(want, "import postgres", "export postgres", "put postgres")
	} else {
		t.Log("no PostgreSQL server: the PostgreSQL steps are not measured (set " + pgtest.EnvURL + ")")
	}
	code, out, errs := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r archiveBenchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var steps []string
	for _, s := range r.Steps {
		steps = append(steps, s.Step)
		if s.Seconds <= 0 || s.VsCopy <= 0 || s.MBps <= 0 {
			t.Errorf("step %+v: not measured", s)
		}
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps %q, want %q", steps, want)
	}
	if r.Documents != 30 || r.Chunks != 60 || r.ArchiveBytes <= 0 || r.SQLiteBytes <= 0 {
		t.Fatalf("report %+v", r)
	}
}
