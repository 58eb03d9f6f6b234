package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/ingestd/ingestd/benchmarks/fwbench"
)

// runBenchFirewall is `ingestd bench firewall`: it ingests the firewall
// usefulness corpus of issue 17 into a temporary SQLite file through the
// real connectors and pipeline, asks its labelled questions in each
// request mode, and prints per mode the injection reach, the needless
// blocks, recall and utility loss. It reads no config and writes nothing
// but a temporary directory it removes. A missed goal (injection text
// served on a turn whose tools are allowed) exits 1.
func runBenchFirewall(ctx context.Context, e *env, args []string) error {
	fset := flag.NewFlagSet("bench firewall", flag.ContinueOnError)
	asJSON := fset.Bool("json", false, "print the report as JSON")
	modeList := fset.String("mode", "all", "request modes to measure, comma-separated: "+fwbench.ModeNames())
	turns := fset.Bool("turns", false, "with --json, add every question's result: served documents, tiers, scores, verdict")
	corpusDir := fset.String("corpus", "", "a corpus folder laid out like benchmarks/fwbench/testdata (default: the built-in corpus)")
	pos, err := parseFlags(fset, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{Cmd: "bench firewall", Msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	modes, err := fwbench.SelectModes(*modeList)
	if err != nil {
		return &usageError{Cmd: "bench firewall", Msg: "--mode: " + err.Error()}
	}
	var corpus fs.FS
	if *corpusDir != "" {
		if fi, err := os.Stat(*corpusDir); err != nil || !fi.IsDir() {
			return &usageError{Cmd: "bench firewall", Msg: fmt.Sprintf("--corpus %q is not a directory", *corpusDir)}
		}
		corpus = os.DirFS(*corpusDir)
	}
	b, err := fwbench.Open(ctx, fwbench.Options{Corpus: corpus})
	if err != nil {
		return fmt.Errorf("load corpus: %w", err)
	}
	defer b.Close()
	r, err := b.Measure(ctx, modes, "")
	if err != nil {
		return err
	}
	if *asJSON {
		if !*turns {
			for i := range r.Modes {
				r.Modes[i].Turns = nil
			}
		}
		if err := writeIndented(e.stdout, r); err != nil {
			return err
		}
	} else if err := r.WriteText(e.stdout); err != nil {
		return err
	}
	if missed := r.Missed(); len(missed) > 0 {
		var s []string
		for _, g := range missed {
			s = append(s, fmt.Sprintf("%s %s %g", g.Measured, g.Metric, g.Value))
		}
		return fmt.Errorf("%d goals missed: %s", len(missed), strings.Join(s, "; "))
	}
	return nil
}
