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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command-line mistake: exit code 2. cmd, when set, is the
// subcommand ("store serve") whose usage is printed under the message.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string { return e.msg }

// synopsis is one line of the usage: a subcommand, its flags and what it
// does. The usage, each command's --help and the README's table come
// from this list or are checked against it (TestUsageMatchesREADME,
// TestHelpListsEveryFlag).
type synopsis struct {
	name string // "archive", "store serve"
	args string // every flag
	what string
}

var synopses = []synopsis{
	{"archive", "[--documents N] [--chunks N] [--dims N] [--compression zstd|gzip|none] [--postgres-url-env VAR] [--json]",
		"export and import throughput on a synthetic corpus in temporary stores, each as a ratio to a plain copy of the archive's bytes"},
	{"store corpus", "--dir DIR [--chunks N]",
		"build the synthetic corpus the other store benchmarks read: a SQLite file of N chunks, its index snapshot, a configuration and queries"},
	{"store ingest", "[--docs N] [--rounds N] [--dir DIR] [--bin A,B] [--json]",
		"ingestd sync of generated Markdown files against a raw SQLite insert of the chunks it stored, in the same round"},
	{"store serve", "--dir DIR [--rounds N] [--load D] [--concurrency N] [--serve-bin B] [--json]",
		"ingestd serve on a corpus: cold start to /healthz and /readyz against one scan of every row, resident memory per chunk, and a retrieval load"},
	{"store retrieve", "--dir DIR [--rounds N] [--calls N] [--duration D] [--concurrency N] [--serve-bin B] [--http=false] [--cpuprofile F] [--json]",
		"the retrieval call on a corpus: p50, p99 and CPU time a call in process, and the rate of concurrent callers in process against as many HTTP clients"},
}

// line is the synopsis as the usage and the README write it.
func (s synopsis) line() string {
	return strings.TrimSpace("ingestd-bench " + s.name + " " + s.args)
}

// usage is the text of `ingestd-bench --help`.
func usage() string {
	var b strings.Builder
	b.WriteString("ingestd-bench — the benchmarks for developing ingestd, each against a baseline measured in the same run\n\nUsage:\n")
	for _, s := range synopses {
		fmt.Fprintf(&b, "  %s\n        %s\n", s.line(), s.what)
	}
	b.WriteString("\nThe store benchmarks start ingestd (sync, serve): the one beside this binary, else the one on $PATH, unless --bin or --serve-bin names it.\n" +
		"Run `ingestd-bench COMMAND --help` for a command's flags.\n")
	return b.String()
}

// groupUsage is the synopses of a command and of its subcommands ("store":
// store corpus, store ingest, ...), one a line.
func groupUsage(name string) string {
	var b strings.Builder
	for _, s := range synopses {
		if s.name == name || strings.HasPrefix(s.name, name+" ") {
			fmt.Fprintf(&b, "  %s\n", s.line())
		}
	}
	return b.String()
}

// helpRequest is what parseFlags returns for -h or --help: run prints the
// command's help on stdout and exits 0.
type helpRequest struct{ fs *flag.FlagSet }

func (h *helpRequest) Error() string { return "help requested" }

// text is the command's synopsis, what it does, and every flag with its
// meaning and default.
func (h *helpRequest) text() string {
	var b strings.Builder
	for _, s := range synopses {
		if s.name == h.fs.Name() {
			fmt.Fprintf(&b, "Usage: %s\n\n%s.\n", s.line(), strings.ToUpper(s.what[:1])+s.what[1:])
		}
	}
	var flags []*flag.Flag
	h.fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	if len(flags) == 0 {
		return b.String()
	}
	b.WriteString("\nFlags:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, f := range flags {
		arg, meaning := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" {
			meaning += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, arg, meaning)
	}
	tw.Flush()
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
	if len(args) == 0 || isHelp(args[0]) && len(args) == 1 {
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
		var hr *helpRequest
		var ue *usageError
		switch {
		case errors.As(err, &hr):
			fmt.Fprint(stdout, hr.text())
			return 0
		case errors.As(err, &ue) && ue.cmd == "":
			fmt.Fprintf(stderr, "ingestd-bench %s: %s\n", c.name, ue.msg)
			return 2
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "ingestd-bench %s: %s\nUsage:\n%s", ue.cmd, ue.msg, groupUsage(ue.cmd))
			fmt.Fprintf(stderr, "Run `ingestd-bench %s --help` for every flag.\n", ue.cmd)
			return 2
		}
		fmt.Fprintf(stderr, "ingestd-bench %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "ingestd-bench: unknown command %q\n\n", args[0])
	fmt.Fprint(stderr, usage())
	return 2
}

// parseFlags parses flags that may stand before or after positional
// arguments. -h and --help return a *helpRequest, a bad flag a
// *usageError for the flag set's command.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpRequest{fs: fs}
			}
			return nil, &usageError{cmd: fs.Name(), msg: err.Error()}
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

// isHelp reports whether arg asks for help (-h, --help, help).
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}
