package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/terminal"
)

// installationsBody is the body of GET /v1/installations and of
// `ingestd status --json`.
type installationsBody struct {
	Installations []ingestd.InstallationStatus `json:"installations"`
}

// runsBody is the body of GET /v1/installations/{id}/runs and of
// `ingestd status ID --json`.
type runsBody struct {
	Installation string            `json:"installation"`
	Runs         []ingestd.SyncRun `json:"runs"`
}

// runStatus is `ingestd status [INSTALLATION]`: every installation's
// syncs and health, or one installation's recent passes. It reads the
// history from the store, so it works beside a running serve, and on a
// machine without one.
func runStatus(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	asJSON := fs.Bool("json", false, "print what GET /v1/installations (or, with an installation, GET /v1/installations/{id}/runs) answers")
	runs := fs.Int("runs", 20, "with an installation: how many of its passes to show, newest first")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 1:
		return &usageError{Cmd: "status", Msg: "want at most one installation id"}
	case *runs < 1:
		return &usageError{Cmd: "status", Msg: fmt.Sprintf("--runs %d: show at least one pass", *runs)}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	sts, err := a.Health().Installations(ctx)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		if *asJSON {
			return writeIndented(e.stdout, installationsBody{Installations: sts})
		}
		if len(sts) == 0 {
			e.stdout.Println("no installations are configured")
			return nil
		}
		return renderStatus(e.stdout, sts, time.Now())
	}
	id := pos[0]
	i := slices.IndexFunc(sts, func(s ingestd.InstallationStatus) bool { return s.ID == id })
	if i < 0 {
		_, _, err := a.Installation(id)
		return &usageError{Msg: ingestd.ErrorMessage(err)}
	}
	passes, err := a.Health().Runs(ctx, id, min(*runs, 1000))
	if err != nil {
		return err
	}
	if *asJSON {
		return writeIndented(e.stdout, runsBody{Installation: id, Runs: passes})
	}
	now := time.Now()
	if err := renderStatus(e.stdout, sts[i:i+1], now); err != nil {
		return err
	}
	e.stdout.Println()
	return renderRuns(e.stdout, passes, now)
}

// writeIndented writes v as indented JSON: every --json output.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// renderStatus prints one row per installation, then, under the table,
// why each one that needs a person does: a line that starts with "!".
func renderStatus(w *terminal.Terminal, sts []ingestd.InstallationStatus, now time.Time) error {
	tb := w.Table("", "INSTALLATION", "KIND", "TIER", "DOCS", "LAST PASS", "LAST SUCCESS", "FAILED IN A ROW", "NEXT PASS", "HEALTH")
	for _, s := range sts {
		last := "never"
		if r := s.LastRun; r != nil {
			result := "ok"
			if !r.OK() {
				result = "failed"
			}
			last = fmt.Sprintf("%s %s (%s, %s)", ago(r.EndedAt(), now), result, r.Trigger, round(r.Duration))
		}
		success := "never"
		if !s.LastSuccessAt.IsZero() {
			success = ago(s.LastSuccessAt, now)
		}
		next := "on demand"
		if !s.NextRunAt.IsZero() {
			next = ago(s.NextRunAt, now)
		}
		docs := strconv.Itoa(s.Documents)
		if s.Unmapped > 0 {
			docs += fmt.Sprintf(" (%d unmapped)", s.Unmapped)
		}
		tb.Row(s.ID, s.Kind, s.Tier, docs, last, success, s.ConsecutiveFailures, next, healthMark(s.Health.Status))
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	for _, s := range sts {
		if !flagged(s.Health.Status) {
			continue
		}
		for _, r := range s.Health.Reasons {
			w.Printf("! %s %s: %s\n", s.ID, s.Health.Status, r)
		}
	}
	return nil
}

// flagged reports whether a health status needs a person.
func flagged(status string) bool {
	return status == ingestd.HealthFailing || status == ingestd.HealthStale
}

// healthMark is the status, marked with "!" when it needs a person.
func healthMark(status string) string {
	if flagged(status) {
		return "! " + status
	}
	return status
}

// renderRuns prints an installation's passes, newest first.
func renderRuns(w *terminal.Terminal, runs []ingestd.SyncRun, now time.Time) error {
	if len(runs) == 0 {
		w.Println("no sync pass is recorded")
		return nil
	}
	tb := w.Table("", "STARTED", "TRIGGER", "TOOK", "SEEN", "ADDED", "CHANGED", "UNCHANGED", "DELETED", "FAILED", "SKIPPED", "QUEUED", "RESULT")
	for _, r := range runs {
		result := "ok"
		if !r.OK() {
			result = "failed: " + r.Error
		}
		tb.Row(ago(r.StartedAt, now), r.Trigger, round(r.Duration),
			r.Seen, r.Added, r.Changed, r.Unchanged, r.Deleted, r.Failed, r.Skipped, r.Queued, result)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	if c := runs[0].Cursors; c != "" {
		w.Printf("cursors after the newest pass: %s\n", c)
	}
	return nil
}

// ago is t relative to now for a person: "3m ago", "in 40s", or the date
// and time (UTC) beyond two days.
func ago(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d >= 48*time.Hour:
		return t.UTC().Format("2006-01-02 15:04Z")
	case d >= time.Hour:
		s = fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	default:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// round is a pass's duration to a precision a person reads.
func round(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}
