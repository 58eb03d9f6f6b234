// Package cli is the shape of ingestd's command line, apart from what
// any command does: a usage mistake and a help request as errors, the
// synopsis a command's usage and help are written from, and flags that
// may stand before or after the positional arguments. It imports the
// standard library only.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// UsageError is a command-line mistake: exit code 2. Cmd, when set, is
// the subcommand ("dlq replay") whose usage is printed under the message.
type UsageError struct {
	Cmd string
	Msg string
}

func (e *UsageError) Error() string { return e.Msg }

// Synopsis is one line of the usage: a subcommand, its arguments and
// flags, and what it does.
type Synopsis struct {
	Name string // "sync", "dlq list"
	Args string // "INSTALLATION [--json] [--queue]": every flag but --config
	What string
	// Prog is the program the subcommand belongs to; "" is ingestd.
	Prog string
}

// Line is the synopsis as the usage and the README write it.
func (s Synopsis) Line() string {
	prog := s.Prog
	if prog == "" {
		prog = "ingestd"
	}
	return strings.TrimSpace(prog + " " + s.Name + " " + s.Args)
}

// GroupUsage is the synopses of a command and of its subcommands ("dlq":
// dlq list and dlq replay), one a line.
func GroupUsage(synopses []Synopsis, name string) string {
	var b strings.Builder
	for _, s := range synopses {
		if s.Name == name || strings.HasPrefix(s.Name, name+" ") {
			fmt.Fprintf(&b, "  %s\n", s.Line())
		}
	}
	return b.String()
}

// HelpRequest is what ParseFlags returns for -h or --help: the command's
// help goes to stdout and it exits 0.
type HelpRequest struct{ FlagSet *flag.FlagSet }

func (h *HelpRequest) Error() string { return "help requested" }

// Text is the command's synopsis among synopses, what it does, and every
// flag with its meaning and default.
func (h *HelpRequest) Text(synopses []Synopsis) string {
	var b strings.Builder
	for _, s := range synopses {
		if s.Name == h.FlagSet.Name() {
			fmt.Fprintf(&b, "Usage: %s\n\n%s.\n", s.Line(), strings.ToUpper(s.What[:1])+s.What[1:])
		}
	}
	var flags []*flag.Flag
	h.FlagSet.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
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

// ParseFlags parses flags that may stand before or after positional
// arguments ("sync support --config f" and "sync --config f support").
// -h and --help return a *HelpRequest, a bad flag a *UsageError for the
// flag set's command.
func ParseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &HelpRequest{FlagSet: fs}
			}
			return nil, &UsageError{Cmd: fs.Name(), Msg: err.Error()}
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

// IsHelp reports whether arg asks for help (-h, --help, help).
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// SplitList is a comma-separated flag's values, blanks dropped.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
