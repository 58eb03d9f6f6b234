package main

import (
	"context"
	"flag"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version Go recorded, or "dev".
var version = ""

// versionString is the version alone ("v1.4.0", "dev"): what the MCP
// handshake, archives and the serve log carry.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	v, _, _ := versionParts(version, bi)
	return v
}

// versionLine is what `ingestd version` prints: the version, and the VCS
// revision and commit time Go embeds when it builds from a checkout
// (-buildvcs, the default for `go build` in a git work tree), the
// revision suffixed -dirty when the work tree had uncommitted changes.
// override is the -ldflags -X version; bi nil means no build info.
func versionLine(override string, bi *debug.BuildInfo) string {
	v, rev, at := versionParts(override, bi)
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

func versionParts(override string, bi *debug.BuildInfo) (v, rev, at string) {
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

func runVersion(_ context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	e.stdout.Printf("%s\n", versionLine(version, bi))
	return nil
}
