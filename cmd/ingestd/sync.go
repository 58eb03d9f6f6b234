package main

import (
	"context"
	"flag"
	"strings"
	"sync"

	"github.com/schollz/progressbar/v3"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/terminal"
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
		return &usageError{Cmd: "sync", Msg: "want one installation id"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	inst, _, err := a.Installation(pos[0])
	if err != nil {
		return &usageError{Msg: ingestd.ErrorMessage(err)}
	}
	if *queue {
		return a.queueSyncNow(ctx, e, inst.ID)
	}
	prog := newProgress(e.stderr, inst.ID, e.stderr.IsTTY())
	_, before := a.Embedder().Stats()
	sum, err := a.Sync(ctx, inst.ID, ingestd.TriggerManual, prog)
	prog.done()
	// The pipeline says which pass failed; the command line said it already.
	err = trimContext(err, "sync "+inst.ID+": ")
	_, after := a.Embedder().Stats()
	embedded := after - before
	if *asJSON {
		out := struct {
			pipeline.Summary
			Embedded int64 `json:"embedded"`
		}{sum, embedded}
		if encErr := writeIndented(e.stdout, out); encErr != nil {
			return encErr
		}
	} else {
		for _, f := range sum.Failures {
			e.stdout.Printf("failed: %s: %s\n", f.ExternalID, f.Reason)
		}
		for i, f := range sum.Skips {
			if i == maxSkipLines {
				e.stdout.Printf("skipped: %d more (counted by reason below; all listed in --json up to %d)\n", sum.Skipped-i, pipeline.MaxListedSkips)
				break
			}
			e.stdout.Printf("skipped: %s: %s\n", f.ExternalID, f.Reason)
		}
		// Every term of the sum is printed, so a person can add it up.
		e.stdout.Printf("%s; %s embedded\n", sum.String(), plural(embedded, "chunk"))
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
	w     *terminal.Terminal
	name  string
	bar   *progressbar.ProgressBar
	total int
	told  bool // the first total was printed
	n     int
	next  int
}

var _ pipeline.Progress = (*progress)(nil)

func newProgress(w *terminal.Terminal, name string, tty bool) *progress {
	p := &progress{w: w, name: name}
	if tty {
		// The bar draws with control sequences; it shows our own words
		// only (the installation id and counts), so it writes raw.
		p.bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(w.Raw()),
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
		p.w.Printf("%s: about %s to check (attachments and deletions found on the way add to it)\n", p.name, plural(n, "item"))
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
		p.w.Printf("%s: %d/%d\n", p.name, p.n, p.total)
		p.next += max(p.total/10, 1)
	}
}

// done ends the bar, or prints the last count: a pass that ends is never
// left showing 2/3.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	if p.n > 0 {
		// The total was an estimate; at the end every item was checked.
		p.w.Printf("%s: %d/%d\n", p.name, p.n, p.n)
	}
}

// queueSyncNow is `ingestd sync ID --queue`: it queues a pass for the
// workers on whatever NATS reachQueue finds.
func (a *app) queueSyncNow(ctx context.Context, e *env, id string) error {
	jq, d, err := a.reachQueue(ctx, e)
	if err != nil {
		return err
	}
	if d != nil {
		if err := d.QueueSync(ctx, id); err != nil {
			return err
		}
		e.stdout.Printf("%s: sync pass queued by serve, %s\n", id, d.Holder)
		return nil
	}
	defer jq.Close()
	if err := a.QueueSync(ctx, jq.Queue, id, ingestd.TriggerQueue); err != nil {
		return err
	}
	if jq.Embedded() {
		e.stdout.Printf("%s: sync pass queued; no serve runs on this data_dir, so it runs when one starts\n", id)
		return nil
	}
	e.stdout.Printf("%s: sync pass queued\n", id)
	return nil
}

// trimContext drops prefix from err's message, keeping err in the chain
// for errors.Is and errors.As.
func trimContext(err error, prefix string) error {
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		return err
	}
	return &trimmedError{msg: strings.TrimPrefix(err.Error(), prefix), err: err}
}

type trimmedError struct {
	msg string
	err error
}

func (e *trimmedError) Error() string { return e.msg }
func (e *trimmedError) Unwrap() error { return e.err }
