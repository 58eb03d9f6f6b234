package main

import (
	"context"
	"flag"
	"runtime/debug"

	"github.com/ingestd/ingestd/internal/buildinfo"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version Go recorded, or "dev".
var version = ""

// versionString is the version alone ("v1.4.0", "dev"): what the MCP
// handshake, archives and the serve log carry.
func versionString() string { return buildinfo.Version(version) }

func runVersion(_ context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	e.stdout.Printf("%s\n", buildinfo.Line(version, bi))
	return nil
}
