// Command ingestd ingests text other people wrote into a retrieval store,
// stamps every document with the tier its installation declared, fences
// every chunk, and answers retrieval with a turn-level tool-firewall
// verdict. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version or "dev".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command-line mistake: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

const usage = `ingestd — ingest text other people wrote, with provenance and a tool firewall

Usage:
  ingestd serve      [--config F] [--role all|api|worker]   run the daemon
  ingestd sync       INSTALLATION [--config F] [--json]      run one sync pass now
  ingestd sync       INSTALLATION --queue [--config F]       queue a pass for the workers (NATS)
  ingestd ingest     PATH --installation ID [--config F]     ingest one file into an installation
  ingestd search     QUERY [--config F] [--json] [--installations a,b] [--top-k N] [--fenced] [--exclude-untrusted]
  ingestd provenance [--config F] [--json] [--per-installation]
  ingestd migrate    [--config F] [--rebuild-vector-index]   apply the store schema; rebuild the HNSW index online
  ingestd reindex    [--config F]                            re-embed chunks made by another embedder
  ingestd dlq        list [--config F] [--json]              list dead-lettered jobs
  ingestd dlq        replay ID|--all [--config F]            queue dead-lettered jobs again
  ingestd bench      retrieve [--config F] [--concurrency N] [--duration D] [--grpc] [--url U] [--queries FILE]
  ingestd bench      firewall [--json [--turns]] [--mode a,b] [--corpus DIR]  the firewall usefulness benchmark (issue 17)
  ingestd version

The config file defaults to $INGESTD_CONFIG, then ./ingestd.yaml.
`

type command struct {
	name string
	run  func(ctx context.Context, env *env, args []string) error
}

// env is what every subcommand gets: its streams and the environment.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	lookupEnv      func(string) (string, bool)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv, lookupEnv: os.LookupEnv}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmds := []command{
		{"serve", runServe},
		{"sync", runSync},
		{"ingest", runIngest},
		{"search", runSearch},
		{"provenance", runProvenance},
		{"migrate", runMigrate},
		{"reindex", runReindex},
		{"dlq", runDLQ},
		{"bench", runBench},
		{"version", runVersion},
	}
	for _, c := range cmds {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		if err == nil {
			return 0
		}
		fmt.Fprintf(stderr, "ingestd %s: %v\n", c.name, err)
		var ue *usageError
		var ce *configError
		if errors.As(err, &ue) || errors.As(err, &ce) || errors.Is(err, flag.ErrHelp) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stderr, "ingestd: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// parseFlags parses flags that may stand before or after positional
// arguments ("sync support --config f" and "sync --config f support").
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &usageError{msg: fmt.Sprintf("%s: %v", fs.Name(), err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func configFlag(fs *flag.FlagSet, e *env) *string {
	def := e.getenv("INGESTD_CONFIG")
	if def == "" {
		def = "ingestd.yaml"
	}
	return fs.String("config", def, "configuration file")
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func runVersion(_ context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "ingestd %s\n", versionString())
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
