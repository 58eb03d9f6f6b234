package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		override string
		bi       *debug.BuildInfo
		want     string
	}{
		{"no build info", "", nil, "ingestd dev"},
		{"go install of a tag", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			"ingestd v1.4.0"},
		{"a clean checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs", "git", "vcs.revision", "80100f4aa1b2c3d4e5f6", "vcs.time", "2026-12-02T18:05:07Z", "vcs.modified", "false")},
			"ingestd dev (revision 80100f4aa1b2, 2026-12-02T18:05:07Z)"},
		{"a modified checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "80100f4aa1b2c3d4e5f6", "vcs.time", "2026-12-02T18:05:07Z", "vcs.modified", "true")},
			"ingestd dev (revision 80100f4aa1b2-dirty, 2026-12-02T18:05:07Z)"},
		{"a pseudo-version with its revision", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202180507-80100f4aa1b2"},
			Settings: vcs("vcs.revision", "80100f4aa1b2c3d4e5f6", "vcs.time", "2026-12-02T18:05:07Z")},
			"ingestd v0.0.0-20261202180507-80100f4aa1b2 (revision 80100f4aa1b2, 2026-12-02T18:05:07Z)"},
		{"-ldflags -X wins for the version", "v2.0.0", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "abc", "vcs.modified", "true")},
			"ingestd v2.0.0 (revision abc-dirty)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.override, tc.bi); got != tc.want {
				t.Errorf("Line = %q, want %q", got, tc.want)
			}
		})
	}
}
