// Package buildinfo is what the binary says it is: the version, and the
// revision and commit time Go embeds when it builds from a checkout. It
// imports the standard library only.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version is the version alone ("v1.4.0", "dev"): override when the
// build set one (-ldflags -X), else the module version Go recorded,
// else "dev".
func Version(override string) string {
	bi, _ := debug.ReadBuildInfo()
	v, _, _ := parts(override, bi)
	return v
}

// Line is what `ingestd version` prints: the version, and the VCS
// revision and commit time Go embeds when it builds from a checkout
// (-buildvcs, the default for `go build` in a git work tree), the
// revision suffixed -dirty when the work tree had uncommitted changes.
// override is the -ldflags -X version; bi nil means no build info.
func Line(override string, bi *debug.BuildInfo) string {
	v, rev, at := parts(override, bi)
	line := "ingestd " + v
	var extra []string
	if rev != "" {
		extra = append(extra, "revision "+rev)
	}
	if at != "" {
		extra = append(extra, at)
	}
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	return line
}

// parts is the version, the revision (12 digits, -dirty when the work
// tree had changes) and the commit time.
func parts(override string, bi *debug.BuildInfo) (v, rev, at string) {
	v = override
	if bi == nil {
		if v == "" {
			v = "dev"
		}
		return v, "", ""
	}
	if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return v, rev, at
}
