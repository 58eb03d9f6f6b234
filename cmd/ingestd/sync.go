package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sync"

	"github.com/schollz/progressbar/v3"

	"github.com/ingestd/ingestd/pipeline"
)

func runSync(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("sync", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	queue := fs.Bool("queue", false, "queue the pass on NATS for the workers instead of running it here")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{msg: "sync takes one installation id: ingestd sync INSTALLATION --config F"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	inst, src, err := a.Installation(pos[0])
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	if *queue {
		jq, err := a.openQueue(ctx, e, false, nil)
		if err != nil {
			return err
		}
		defer jq.Close()
		if err := a.queueSync(ctx, jq.Queue, inst.ID); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: sync pass queued\n", inst.ID)
		return nil
	}
	prog := newProgress(e.stderr, inst.ID, isTerminal(e.stderr))
	_, before := a.embedder.Stats()
	sum, err := a.pipe.Sync(ctx, inst, src, prog)
	prog.done()
	if a.maint != nil && err == nil && sum.Added+sum.Changed+sum.Deleted > 0 {
		// A foreground pass is a bulk write: merge the full-text index now
		// so the searches that follow are fast.
		if oerr := a.maint.Optimize(ctx); oerr != nil {
			a.log.Warn("store.optimize_failed", "error", oerr.Error())
		}
	}
	_, after := a.embedder.Stats()
	embedded := after - before
	if *asJSON {
		out := struct {
			pipeline.Summary
			Embedded int64 `json:"embedded"`
		}{sum, embedded}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if encErr := enc.Encode(out); encErr != nil {
			return encErr
		}
	} else {
		for _, f := range sum.Failures {
			fmt.Fprintf(e.stdout, "failed: %s: %s\n", f.ExternalID, f.Reason)
		}
		for i, f := range sum.Skips {
			if i == maxSkipLines {
				fmt.Fprintf(e.stdout, "skipped: %d more (counted by reason below; all listed in --json up to %d)\n", sum.Skipped-i, pipeline.MaxListedSkips)
				break
			}
			fmt.Fprintf(e.stdout, "skipped: %s: %s\n", f.ExternalID, f.Reason)
		}
		// Every term of the sum is printed, so a person can add it up.
		fmt.Fprintf(e.stdout, "%s; %d chunks embedded\n", sum, embedded)
	}
	return err
}

// maxSkipLines is how many skipped items the text summary names one by
// one; the rest are counted by reason.
const maxSkipLines = 10

// progress draws a sync pass: a bar on a terminal, a line per tenth
// otherwise (so logs of a scheduled job stay short).
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	name  string
	bar   *progressbar.ProgressBar
	total int
	told  bool // the first total was printed
	n     int
	next  int
}

var _ pipeline.Progress = (*progress)(nil)

func newProgress(w io.Writer, name string, tty bool) *progress {
	p := &progress{w: w, name: name}
	if tty {
		p.bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(name),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("docs"),
			progressbar.OptionThrottle(100_000_000),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// Total sets the bar's end. A connector may raise it on the way (a
// message's attachments are known once it is read), so the first figure
// is printed as an estimate; the summary counts the items exactly.
func (p *progress) Total(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := !p.told
	p.told = true
	p.total = n
	if p.bar != nil {
		p.bar.ChangeMax(n)
		return
	}
	if first {
		p.next = n / 10
		fmt.Fprintf(p.w, "%s: about %d items to check (attachments and deletions found on the way add to it)\n", p.name, n)
	}
}

func (p *progress) Step(externalID string, o pipeline.Outcome, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.bar != nil {
		_ = p.bar.Add(1)
		return
	}
	if p.total > 0 && p.n >= p.next && p.n < p.total {
		fmt.Fprintf(p.w, "%s: %d/%d\n", p.name, p.n, p.total)
		p.next += max(p.total/10, 1)
	}
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
