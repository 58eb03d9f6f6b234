package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ingestd/ingestd/benchmarks/agentdojo"
)

// runBenchAgentDojo is `ingestd bench agentdojo --suite DIR`: it ingests a
// suite in the re-shaped AgentDojo format into a temporary SQLite file
// through the real connectors, under the configuration its rules derive
// from the documents, replays every user task as one turn and prints per
// policy utility, attack success and confirmations per task, the labels'
// disagreements with the answer key, search recall and the bound the
// answer key's labels allow. It reads no config and writes nothing but a
// temporary directory it removes. A successful attack exits 1.
func runBenchAgentDojo(ctx context.Context, e *env, args []string) error {
	fset := flag.NewFlagSet("bench agentdojo", flag.ContinueOnError)
	suite := fset.String("suite", "", "the suite folder: suite.json beside documents/ (required)")
	asJSON := fset.Bool("json", false, "print the figures as JSON")
	grounding := fset.String("grounding", "auto", "grounding of each search read's request: auto (recommended for agents) or all")
	pos, err := parseFlags(fset, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{Cmd: "bench agentdojo", Msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if fi, err := os.Stat(*suite); *suite == "" || err != nil || !fi.IsDir() {
		return &usageError{Cmd: "bench agentdojo", Msg: fmt.Sprintf("--suite %q is not a directory", *suite)}
	}
	b, err := agentdojo.Open(ctx, agentdojo.Options{Suite: os.DirFS(*suite), Grounding: *grounding})
	if err != nil {
		return fmt.Errorf("load suite: %w", err)
	}
	defer b.Close()
	r, err := b.Replay(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		err = writeIndented(e.stdout, r)
	} else {
		err = r.WriteText(e.stdout)
	}
	if err != nil {
		return err
	}
	if n := r.Attacks(); n > 0 {
		return fmt.Errorf("%d policies let an injection's calls run", n)
	}
	return nil
}
