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

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/internal/cli"
	"github.com/ingestd/ingestd/internal/terminal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command-line mistake: exit code 2 (cli.UsageError).
type usageError = cli.UsageError

// synopses are the commands' usage lines. The usage text, each command's
// --help and the README's Commands table all come from this list or are
// checked against it (TestUsageMatchesREADME, TestHelpListsEveryFlag).
var synopses = []cli.Synopsis{
	{Name: "serve", Args: "[--role all|api|worker]",
		What: "run the daemon: the HTTP + gRPC API on listen, every installation's sync on its interval, the job workers"},
	{Name: "sync", Args: "INSTALLATION [--json] [--queue]",
		What: "run one sync pass now and print a summary that adds up, or with --queue have the workers run it"},
	{Name: "ingest", Args: "PATH|URL --installation ID",
		What: "ingest one file into a files installation, or one URL into a url installation"},
	{Name: "search", Args: "QUERY [--json] [--installations a,b] [--tiers t,u] [--source-kinds k,l] [--top-k N] [--fenced] [--exclude-untrusted] [--no-expand] [--no-rejected] [--grounding all|auto] [--trusted-view] [--request-id ID] [--as-user user:ADDRESS]",
		What: "retrieve as a chat backend would: the three blocks, each row's document id and a snippet, and the verdict"},
	{Name: "mcp", Args: "[--as TOKEN_NAME] [--server URL --token-env VAR]",
		What: "serve MCP on stdin/stdout for a desktop host: the retrieve and provenance tools, documents as resources"},
	{Name: "provenance", Args: "[--json] [--per-installation]",
		What: "the corpus report: documents per tier and installation, the externally written share, the firewall mode"},
	{Name: "migrate", Args: "[--rebuild-vector-index] [--reader-indexes] [--maintenance-work-mem 4GB]",
		What: "apply the store schema; on PostgreSQL print the vector index's graph and the reader indexes, or build them online"},
	{Name: "reindex", Args: "[--batch N]",
		What: "re-embed the chunks another embedder made"},
	{Name: "status", Args: "[INSTALLATION] [--json] [--runs N]",
		What: "every installation's syncs from the pass history: last pass, last success, failures in a row, next pass, health; or one installation's passes"},
	{Name: "erase", Args: "[--document IDS] [--installation ID] [--author A] [--dry-run] [--lift [--external-id X] [--key K]] [--list] [--json]",
		What: "erase documents for good, by id, installation or author, with a tombstone that keeps a re-sync from bringing them back; --dry-run lists them; --lift lifts tombstones, --list lists them"},
	{Name: "export", Args: "[--out FILE|-] [--compression zstd|gzip|none]",
		What: "write everything the store holds (documents, chunks with their vectors, links, tiers, statuses, tombstones, cursors) as a portable archive, from one snapshot while serve runs"},
	{Name: "import", Args: "FILE|- [--reindex] [--max-record-mib N] [--max-record-objects N]",
		What: "load an archive into an empty store of either kind: tiers as they were (one this build does not know as untrusted-external); vectors of another embedder refused, or re-embedded with --reindex; every chunk fenced again from its text; records bounded"},
	{Name: "backup", Args: "--out FILE",
		What: "copy the embedded sqlite store to a file while serve runs (VACUUM INTO: a consistent snapshot, no lock taken)"},
	{Name: "restore", Args: "FILE [--force]",
		What: "put a backup in place as the embedded sqlite store, checked and opened; serve must be stopped"},
	{Name: "dlq list", Args: "[--json]",
		What: "list the dead-lettered jobs"},
	{Name: "dlq replay", Args: "ID|--all",
		What: "queue dead-lettered jobs again"},
	{Name: "gateway tools", Args: "[--json]",
		What: "start each gateway upstream and list the tools it offers against the declaration, with what its annotations suggest"},
	{Name: "bench retrieve", Args: "[--concurrency N] [--duration D] [--grpc] [--url U] [--queries F] [--top-k N] [--allow-remote] [--json]",
		What: "load a running server with retrievals and print throughput, latency percentiles and errors"},
	{Name: "bench firewall", Args: "[--json [--turns]] [--mode a,b] [--corpus DIR]",
		What: "the firewall usefulness benchmark on a built-in labelled corpus"},
	{Name: "bench agentdojo", Args: "--suite DIR [--grounding auto|all] [--json]",
		What: "replay an AgentDojo suite through the real connectors and retrieval; per tool-gate policy: utility, attack success, confirmations"},
	{Name: "check", Args: "[--upstreams]",
		What: "validate the configuration as serve would (every installation, every secret variable it names, listen, tls, data_dir, the gateway block) without opening anything; --upstreams also starts each gateway upstream and names undeclared and missing tools: exit 0, or 2 with file:line for each problem"},
	{Name: "version", Args: "",
		What: "print the version, and the VCS revision and time it was built from"},
}

// usage is the text of `ingestd --help`.
func usage() string {
	var b strings.Builder
	b.WriteString("ingestd — ingest text other people wrote, with provenance and a tool firewall\n\nUsage:\n")
	for _, s := range synopses {
		fmt.Fprintf(&b, "  %s\n        %s\n", s.Line(), s.What)
	}
	b.WriteString("\nEvery command but version, bench firewall and bench agentdojo takes --config F (default $INGESTD_CONFIG, then ./ingestd.yaml).\n" +
		"Run `ingestd COMMAND --help` for a command's flags.\n")
	return b.String()
}

// groupUsage is the synopses of a command and of its subcommands.
func groupUsage(name string) string { return cli.GroupUsage(synopses, name) }

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
	var hr *cli.HelpRequest
	var ue *usageError
	var ce *config.Error
	switch {
	case errors.As(err, &hr):
		fmt.Fprint(stdout, hr.Text(synopses))
		return 0
	case errors.As(err, &ue) && ue.Cmd == "":
		stderr.Printf("ingestd %s: %s\n", name, ue.Msg)
		return 2
	case errors.As(err, &ue):
		// A mistake in the command line's shape: show the shape.
		stderr.Printf("ingestd %s: %s\nUsage:\n", ue.Cmd, ue.Msg)
		fmt.Fprint(stderr, groupUsage(ue.Cmd))
		stderr.Printf("Run `ingestd %s --help` for every flag.\n", ue.Cmd)
		return 2
	case errors.As(err, &ce):
		stderr.Printf("ingestd %s: %v\n", name, err)
		return 2
	}
	stderr.Printf("ingestd %s: %s\n", name, humanError(err))
	return 1
}

// parseFlags is cli.ParseFlags: flags before or after the arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) { return cli.ParseFlags(fs, args) }

func configFlag(fs *flag.FlagSet, e *env) *string {
	def := e.getenv("INGESTD_CONFIG")
	if def == "" {
		def = "ingestd.yaml"
	}
	return fs.String("config", def, "the configuration `file`; without --config, $INGESTD_CONFIG, else the default")
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

// plural is "1 document", "2 documents": n and the noun, in the plural
// unless n is 1 (nouns that add -s only).
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
