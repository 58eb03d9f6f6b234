// Command ingestd-bench runs the benchmarks for developing ingestd: the
// embedded store against SQLite itself (store corpus, ingest, serve,
// retrieve) and archive export and import against a plain copy. Each
// compares with a baseline measured in the same run. What an operator
// runs against a deployment (bench retrieve, bench firewall) is in
// ingestd itself; this binary is not shipped in the image. See
// docs/BENCHMARKS.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ingestd/ingestd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command-line mistake: exit code 2 (cli.UsageError).
type usageError = cli.UsageError

// synopses are the lines of the usage: a subcommand, its flags and what
// it does. The usage, each command's --help and the README's table come
// from this list or are checked against it (TestUsageMatchesREADME,
// TestHelpListsEveryFlag).
var synopses = []cli.Synopsis{
	{Prog: "ingestd-bench", Name: "archive", Args: "[--documents N] [--chunks N] [--dims N] [--compression zstd|gzip|none] [--postgres-url-env VAR] [--json]",
		What: "export and import throughput on a synthetic corpus in temporary stores, each as a ratio to a plain copy of the archive's bytes"},
	{Prog: "ingestd-bench", Name: "store corpus", Args: "--dir DIR [--chunks N]",
		What: "build the synthetic corpus the other store benchmarks read: a SQLite file of N chunks, its index snapshot, a configuration and queries"},
	{Prog: "ingestd-bench", Name: "store ingest", Args: "[--docs N] [--rounds N] [--dir DIR] [--bin A,B] [--json]",
		What: "ingestd sync of generated Markdown files against a raw SQLite insert of the chunks it stored, in the same round"},
	{Prog: "ingestd-bench", Name: "store serve", Args: "--dir DIR [--rounds N] [--load D] [--concurrency N] [--serve-bin B] [--json]",
		What: "ingestd serve on a corpus: cold start to /healthz and /readyz against one scan of every row, resident memory per chunk, and a retrieval load"},
	{Prog: "ingestd-bench", Name: "store retrieve", Args: "--dir DIR [--rounds N] [--calls N] [--duration D] [--concurrency N] [--serve-bin B] [--http=false] [--cpuprofile F] [--json]",
		What: "the retrieval call on a corpus: p50, p99 and CPU time a call in process, and the rate of concurrent callers in process against as many HTTP clients"},
}

// usage is the text of `ingestd-bench --help`.
func usage() string {
	var b strings.Builder
	b.WriteString("ingestd-bench — the benchmarks for developing ingestd, each against a baseline measured in the same run\n\nUsage:\n")
	for _, s := range synopses {
		fmt.Fprintf(&b, "  %s\n        %s\n", s.Line(), s.What)
	}
	b.WriteString("\nThe store benchmarks start ingestd (sync, serve): the one beside this binary, else the one on $PATH, unless --bin or --serve-bin names it.\n" +
		"Run `ingestd-bench COMMAND --help` for a command's flags.\n")
	return b.String()
}

// env is what every subcommand gets: its streams and the environment.
// What it prints is numbers and names it generated: no outsider's text.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

type command struct {
	name string
	run  func(ctx context.Context, env *env, args []string) error
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) == 0 || cli.IsHelp(args[0]) && len(args) == 1 {
		fmt.Fprint(stdout, usage())
		return 0
	}
	if args[0] == "help" {
		// `ingestd-bench help store serve` is `ingestd-bench store serve --help`.
		args = append(args[1:len(args):len(args)], "--help")
	}
	cmds := []command{
		{"archive", runArchive},
		{"store", runStore},
	}
	for _, c := range cmds {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		if err == nil {
			return 0
		}
		var hr *cli.HelpRequest
		var ue *usageError
		switch {
		case errors.As(err, &hr):
			fmt.Fprint(stdout, hr.Text(synopses))
			return 0
		case errors.As(err, &ue) && ue.Cmd == "":
			fmt.Fprintf(stderr, "ingestd-bench %s: %s\n", c.name, ue.Msg)
			return 2
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "ingestd-bench %s: %s\nUsage:\n%s", ue.Cmd, ue.Msg, cli.GroupUsage(synopses, ue.Cmd))
			fmt.Fprintf(stderr, "Run `ingestd-bench %s --help` for every flag.\n", ue.Cmd)
			return 2
		}
		fmt.Fprintf(stderr, "ingestd-bench %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "ingestd-bench: unknown command %q\n\n", args[0])
	fmt.Fprint(stderr, usage())
	return 2
}

// parseFlags is cli.ParseFlags: flags before or after the positional
// arguments, -h and --help as a *cli.HelpRequest.
var parseFlags = cli.ParseFlags
