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
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/internal/terminal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command-line mistake: exit code 2. cmd, when set, is the
// subcommand ("dlq replay") whose usage is printed under the message.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string { return e.msg }

// synopsis is one line of the usage: a subcommand, its arguments and
// flags, and what it does. The usage text, each command's --help and the
// README's Commands table all come from this list or are checked against
// it (TestUsageMatchesREADME, TestHelpListsEveryFlag).
type synopsis struct {
	name string // "sync", "dlq list"
	args string // "INSTALLATION [--json] [--queue]": every flag but --config
	what string
}

var synopses = []synopsis{
	{"serve", "[--role all|api|worker]",
		"run the daemon: the HTTP + gRPC API on listen, every installation's sync on its interval, the job workers"},
	{"sync", "INSTALLATION [--json] [--queue]",
		"run one sync pass now and print a summary that adds up, or with --queue have the workers run it"},
	{"ingest", "PATH|URL --installation ID",
		"ingest one file into a files installation, or one URL into a url installation"},
	{"search", "QUERY [--json] [--installations a,b] [--tiers t,u] [--source-kinds k,l] [--top-k N] [--fenced] [--exclude-untrusted] [--no-expand] [--no-rejected] [--grounding all|auto] [--trusted-view] [--request-id ID] [--as-user user:ADDRESS]",
		"retrieve as a chat backend would: the three blocks, each row's document id and a snippet, and the verdict"},
	{"mcp", "[--as TOKEN_NAME] [--server URL --token-env VAR]",
		"serve MCP on stdin/stdout for a desktop host: the retrieve and provenance tools, documents as resources"},
	{"provenance", "[--json] [--per-installation]",
		"the corpus report: documents per tier and installation, the externally written share, the firewall mode"},
	{"migrate", "[--rebuild-vector-index] [--maintenance-work-mem 4GB]",
		"apply the store schema; on PostgreSQL print the vector index's graph, or rebuild it online"},
	{"reindex", "[--batch N]",
		"re-embed the chunks another embedder made"},
	{"status", "[INSTALLATION] [--json] [--runs N]",
		"every installation's syncs from the pass history: last pass, last success, failures in a row, next pass, health; or one installation's passes"},
	{"erase", "[--document IDS] [--installation ID] [--author A] [--dry-run] [--lift [--external-id X] [--key K]] [--list] [--json]",
		"erase documents for good, by id, installation or author, with a tombstone that keeps a re-sync from bringing them back; --dry-run lists them; --lift lifts tombstones, --list lists them"},
	{"export", "[--out FILE|-] [--compression zstd|gzip|none]",
		"write everything the store holds (documents, chunks with their vectors, links, tiers, statuses, tombstones, cursors) as a portable archive, from one snapshot while serve runs"},
	{"import", "FILE|- [--reindex] [--max-record-mib N] [--max-record-objects N]",
		"load an archive into an empty store of either kind: tiers as they were (one this build does not know as untrusted-external); vectors of another embedder refused, or re-embedded with --reindex; every chunk fenced again from its text; records bounded"},
	{"backup", "--out FILE",
		"copy the embedded sqlite store to a file while serve runs (VACUUM INTO: a consistent snapshot, no lock taken)"},
	{"restore", "FILE [--force]",
		"put a backup in place as the embedded sqlite store, checked and opened; serve must be stopped"},
	{"dlq list", "[--json]",
		"list the dead-lettered jobs"},
	{"dlq replay", "ID|--all",
		"queue dead-lettered jobs again"},
	{"gateway tools", "[--json]",
		"start each gateway upstream and list the tools it offers against the declaration, with what its annotations suggest"},
	{"bench retrieve", "[--concurrency N] [--duration D] [--grpc] [--url U] [--queries F] [--top-k N] [--allow-remote] [--json]",
		"load a running server with retrievals and print throughput, latency percentiles and errors"},
	{"bench firewall", "[--json [--turns]] [--mode a,b] [--corpus DIR]",
		"the firewall usefulness benchmark on a built-in labelled corpus"},
	{"bench agentdojo", "--suite DIR [--grounding auto|all] [--json]",
		"replay an AgentDojo suite through the real connectors and retrieval; per tool-gate policy: utility, attack success, confirmations"},
	{"check", "[--upstreams]",
		"validate the configuration as serve would (every installation, every secret variable it names, listen, tls, data_dir, the gateway block) without opening anything; --upstreams also starts each gateway upstream and names undeclared and missing tools: exit 0, or 2 with file:line for each problem"},
	{"version", "",
		"print the version, and the VCS revision and time it was built from"},
}

// line is the synopsis as the usage and the README write it.
func (s synopsis) line() string {
	return strings.TrimSpace("ingestd " + s.name + " " + s.args)
}

// usage is the text of `ingestd --help`.
func usage() string {
	var b strings.Builder
	b.WriteString("ingestd — ingest text other people wrote, with provenance and a tool firewall\n\nUsage:\n")
	for _, s := range synopses {
		fmt.Fprintf(&b, "  %s\n        %s\n", s.line(), s.what)
	}
	b.WriteString("\nEvery command but version, bench firewall and bench agentdojo takes --config F (default $INGESTD_CONFIG, then ./ingestd.yaml).\n" +
		"Run `ingestd COMMAND --help` for a command's flags.\n")
	return b.String()
}

// groupUsage is the synopses of a command and of its subcommands ("dlq":
// dlq list and dlq replay), one a line.
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

type command struct {
	name string
	run  func(ctx context.Context, env *env, args []string) error
}

// env is what every subcommand gets: its streams and the environment.
// Its output streams are terminals: everything a command prints passes
// the one escape of what outsiders wrote (see terminal).
type env struct {
	stdin          io.Reader
	stdout, stderr *terminal.Terminal
	getenv         func(string) string
	lookupEnv      func(string) (string, bool)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdin: os.Stdin, stdout: terminal.New(stdout), stderr: terminal.New(stderr), getenv: os.Getenv, lookupEnv: os.LookupEnv}
	defer e.stderr.Flush()
	defer e.stdout.Flush()
	return e.run(ctx, args)
}

func (e *env) run(ctx context.Context, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		fmt.Fprint(stdout, usage())
		return 0
	}
	if args[0] == "help" {
		// `ingestd help dlq replay` is `ingestd dlq replay --help`.
		args = append(args[1:len(args):len(args)], "--help")
	}
	cmds := []command{
		{"serve", runServe},
		{"sync", runSync},
		{"ingest", runIngest},
		{"search", runSearch},
		{"mcp", runMCP},
		{"provenance", runProvenance},
		{"migrate", runMigrate},
		{"reindex", runReindex},
		{"status", runStatus},
		{"erase", runErase},
		{"export", runExport},
		{"import", runImport},
		{"backup", runBackup},
		{"restore", runRestore},
		{"dlq", runDLQ},
		{"bench", runBench},
		{"check", runCheck},
		{"gateway", runGateway},
		{"version", runVersion},
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return e.exitCode(c.name, c.run(ctx, e, args[1:]))
		}
	}
	stderr.Printf("ingestd: unknown command %q\n\n", args[0])
	fmt.Fprint(stderr, usage())
	return 2
}

// exitCode reports a command's error and returns its exit status: 0
// (help asked for), 2 for a command line or a configuration that is
// wrong, 1 for anything else.
func (e *env) exitCode(name string, err error) int {
	stdout, stderr := e.stdout, e.stderr
	if err == nil {
		return 0
	}
	var hr *helpRequest
	var ue *usageError
	var ce *config.Error
	switch {
	case errors.As(err, &hr):
		fmt.Fprint(stdout, hr.text())
		return 0
	case errors.As(err, &ue) && ue.cmd == "":
		stderr.Printf("ingestd %s: %s\n", name, ue.msg)
		return 2
	case errors.As(err, &ue):
		// A mistake in the command line's shape: show the shape.
		stderr.Printf("ingestd %s: %s\nUsage:\n", ue.cmd, ue.msg)
		fmt.Fprint(stderr, groupUsage(ue.cmd))
		stderr.Printf("Run `ingestd %s --help` for every flag.\n", ue.cmd)
		return 2
	case errors.As(err, &ce):
		stderr.Printf("ingestd %s: %v\n", name, err)
		return 2
	}
	stderr.Printf("ingestd %s: %s\n", name, humanError(err))
	return 1
}

// parseFlags parses flags that may stand before or after positional
// arguments ("sync support --config f" and "sync --config f support").
// -h and --help return a *helpRequest, a bad flag a *usageError for the
// flag set's command.
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

func configFlag(fs *flag.FlagSet, e *env) *string {
	def := e.getenv("INGESTD_CONFIG")
	if def == "" {
		def = "ingestd.yaml"
	}
	return fs.String("config", def, "the configuration `file`; without --config, $INGESTD_CONFIG, else the default")
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

// humanError is err's message for a person: an application error's code
// ("conflict: ", "unavailable: ") is for programs and is left out.
func humanError(err error) string {
	msg := err.Error()
	var ie *ingestd.Error
	if errors.As(err, &ie) {
		msg = strings.Replace(msg, ie.Error(), ie.Message, 1)
	}
	return msg
}

// isHelp reports whether arg asks for help (-h, --help, help).
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// plural is "1 document", "2 documents": n and the noun, in the plural
// unless n is 1 (nouns that add -s only).
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
