package migration_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ingestd/ingestd/store/internal/migration"
)

func TestLoad(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	ok := fstest.MapFS{
		"migrations/0002_more.sql":  file("ALTER 2"),
		"migrations/0001_first.sql": file("CREATE 1"),
		"migrations/README":         file("not a migration"),
	}
	ms, err := migration.Load(ok, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	want := []migration.File{{Version: 1, Name: "0001_first.sql", SQL: "CREATE 1"}, {Version: 2, Name: "0002_more.sql", SQL: "ALTER 2"}}
	if len(ms) != len(want) {
		t.Fatalf("%d migrations, want %d", len(ms), len(want))
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("migration %d = %+v, want %+v", i, ms[i], want[i])
		}
	}

	for _, tt := range []struct {
		name string
		fsys fstest.MapFS
		want string // in the error
	}{
		{"none", fstest.MapFS{}, "no migrations"},
		{"gap", fstest.MapFS{"m/0001_a.sql": file("x"), "m/0003_c.sql": file("y")}, "0003_c.sql: want version 2"},
		{"misnamed", fstest.MapFS{"m/first.sql": file("x")}, "first.sql: want version 1"},
		{"no number", fstest.MapFS{"m/0001_a.sql": file("x"), "m/b_0002.sql": file("y")}, "b_0002.sql: want version 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := migration.Load(tt.fsys, "m")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
