// Package connectortest is test support for connector packages: Pass, an
// in-memory ingestd.Pass that records what a sync reports; MustAddUp, the
// one check that a pass's summary accounts for every item it saw; and the
// conformance cases of the connector abilities (RunWatcher, RunItemReader,
// RunFlavor) that every kind declaring one runs. It is imported only by
// tests, never by production code.
package connectortest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/pipeline"
)

// Skip is one item a connector left out, with its reason.
type Skip struct {
	ExternalID string
	Reason     string
}

// Options change how a Pass answers. A nil *Options means the defaults: every
// call succeeds and is recorded.
type Options struct {
	// PutErr, when set, is returned by every Put, which then records
	// nothing. SetPutErr changes it later.
	PutErr error
	// DeleteErr, when set, is returned by every Delete, which then records
	// nothing: for a connector that must never delete.
	DeleteErr error
	// CheckParents makes Put refuse, with an error and recording nothing,
	// an item whose ParentExternalID is not a stored item (Put in this or
	// an earlier pass and not deleted since), as a store that needs the
	// parent's document for the link would.
	CheckParents bool
	// OnComplete, when set, is called by Complete after it is recorded,
	// outside the Pass's lock: a test of a connector that must never
	// declare a pass complete can panic there.
	OnComplete func()
}

// Pass is an in-memory ingestd.Pass. It keeps two views: what the current
// pass reported (Puts, Deletes, Fails, Totals, Completed), which Next
// forgets, and what a store would hold across passes (Items, Cursors),
// which Next keeps. Its methods are safe for concurrent use; accessors
// return copies. The zero value is ready to use with the default Options.
type Pass struct {
	mu   sync.Mutex
	opts Options

	// This pass.
	puts      []ingestd.Item
	putCount  map[string]int
	deletes   []string
	fails     map[string]error
	skips     []Skip
	seen      int // Put, Delete, Fail and Skip calls recorded
	totals    []int
	complete  bool
	unchanged []string
	whole     bool

	// Across passes.
	items      map[string]ingestd.Item
	cursors    map[string]string
	readerSets []string
}

var _ ingestd.Pass = (*Pass)(nil)

// New returns an empty Pass with the options; nil means the defaults.
func New(opts *Options) *Pass {
	p := &Pass{}
	if opts != nil {
		p.opts = *opts
	}
	return p
}

// SetPutErr makes every later Put return err and record nothing; nil
// makes Put succeed again.
func (p *Pass) SetPutErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts.PutErr = err
}

// Next starts a new pass: it forgets this pass's Puts, Deletes, Fails,
// Totals and Completed, and keeps the stored Items and the Cursors, as a
// store would. It returns p, so that p2 := p1.Next() reads as a new pass;
// p1 and p2 are the same Pass.
func (p *Pass) Next() *Pass {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts, p.putCount, p.deletes, p.fails, p.skips, p.seen, p.totals, p.complete = nil, nil, nil, nil, nil, 0, nil, false
	p.unchanged, p.whole = nil, false
	return p
}

// Put records the item, in order and by external id, unless Options.PutErr
// is set or, with Options.CheckParents, its parent is not stored.
func (p *Pass) Put(_ context.Context, it ingestd.Item) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opts.PutErr != nil {
		return p.opts.PutErr
	}
	if p.opts.CheckParents && it.ParentExternalID != "" {
		if _, ok := p.items[it.ParentExternalID]; !ok {
			return fmt.Errorf("parent %s not stored before %s", it.ParentExternalID, it.ExternalID)
		}
	}
	if p.items == nil {
		p.items = map[string]ingestd.Item{}
	}
	if p.putCount == nil {
		p.putCount = map[string]int{}
	}
	p.puts = append(p.puts, it)
	p.seen++
	p.putCount[it.ExternalID]++
	p.items[it.ExternalID] = it
	return nil
}

// Delete records the external id and removes its stored item, unless
// Options.DeleteErr is set.
// SetReaders records the readers on the item the pass holds under the
// external id (across passes), if any.
func (p *Pass) SetReaders(_ context.Context, externalID string, readers ingestd.Readers) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if it, ok := p.items[externalID]; ok {
		it.Readers = &readers
		p.items[externalID] = it
	}
	p.readerSets = append(p.readerSets, externalID)
	return nil
}

// ReaderSets returns the external ids SetReaders was called with, in
// order, across passes.
func (p *Pass) ReaderSets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.readerSets)
}

func (p *Pass) Delete(_ context.Context, externalID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opts.DeleteErr != nil {
		return p.opts.DeleteErr
	}
	p.deletes = append(p.deletes, externalID)
	p.seen++
	delete(p.items, externalID)
	return nil
}

// Fail records the reason for the external id; a later Fail of the same id
// in the pass replaces it (Seen counts both).
func (p *Pass) Fail(externalID string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fails == nil {
		p.fails = map[string]error{}
	}
	p.fails[externalID] = err
	p.seen++
}

// Skip records the external id and the reason, in order.
func (p *Pass) Skip(externalID, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skips = append(p.skips, Skip{ExternalID: externalID, Reason: reason})
	p.seen++
}

// Unchanged records the external id as reported unchanged, in order.
func (p *Pass) Unchanged(externalID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unchanged = append(p.unchanged, externalID)
	p.seen++
}

// Whole records that the pass said it reported every item.
func (p *Pass) Whole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.whole = true
}

// UnchangedIDs returns the external ids reported unchanged, in order.
func (p *Pass) UnchangedIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.unchanged)
}

// IsWhole reports whether the pass called Whole.
func (p *Pass) IsWhole() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.whole
}

// Cursor returns the value last set for key, or "" if none is.
func (p *Pass) Cursor(_ context.Context, key string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cursors[key], nil
}

// SetCursor sets key to value; an empty value removes the key, which
// Cursor cannot tell from a key set to "".
func (p *Pass) SetCursor(_ context.Context, key, value string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if value == "" {
		delete(p.cursors, key)
		return nil
	}
	if p.cursors == nil {
		p.cursors = map[string]string{}
	}
	p.cursors[key] = value
	return nil
}

// Total records n.
func (p *Pass) Total(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totals = append(p.totals, n)
}

// Complete records that the pass declared itself complete, then calls
// Options.OnComplete if set.
func (p *Pass) Complete() {
	p.mu.Lock()
	p.complete = true
	hook := p.opts.OnComplete
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
}

// Puts returns the items Put in this pass, in order.
func (p *Pass) Puts() []ingestd.Item {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.puts)
}

// PutIDs returns the external ids of the items Put in this pass, in order,
// one per Put.
func (p *Pass) PutIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.puts))
	for _, it := range p.puts {
		out = append(out, it.ExternalID)
	}
	return out
}

// PutCount returns how many times the external id was Put in this pass.
func (p *Pass) PutCount(externalID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.putCount[externalID]
}

// MustPut returns the first item Put with the external id in this pass, or
// fails the test naming the ids that were Put.
func (p *Pass) MustPut(tb testing.TB, externalID string) ingestd.Item {
	tb.Helper()
	p.mu.Lock()
	i := slices.IndexFunc(p.puts, func(it ingestd.Item) bool { return it.ExternalID == externalID })
	var it ingestd.Item
	if i >= 0 {
		it = p.puts[i]
	}
	p.mu.Unlock()
	if i < 0 {
		tb.Fatalf("no item %q was Put; Put: %q", externalID, p.PutIDs())
	}
	return it
}

// Items returns the stored items by external id: the last Put of each id,
// in this pass or an earlier one, less those deleted since.
func (p *Pass) Items() map[string]ingestd.Item {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]ingestd.Item, len(p.items))
	for id, it := range p.items {
		out[id] = it
	}
	return out
}

// ItemIDs returns the external ids of the stored items of the item kind,
// sorted; an empty kind means every kind.
func (p *Pass) ItemIDs(kind string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id, it := range p.items {
		if kind == "" || it.ItemKind == kind {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Deletes returns the external ids deleted in this pass, in order.
func (p *Pass) Deletes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deletes)
}

// Fails returns the reasons recorded by Fail in this pass, by external id.
func (p *Pass) Fails() map[string]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.fails)
}

// Skips returns the items Skipped in this pass, in order.
func (p *Pass) Skips() []Skip {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.skips)
}

// SkipCount returns how many items were Skipped in this pass with the
// reason; an empty reason counts every skip.
func (p *Pass) SkipCount(reason string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.skips {
		if reason == "" || s.Reason == reason {
			n++
		}
	}
	return n
}

// Seen returns how many items the connector reported in this pass: every
// recorded Put, Delete, Fail and Skip call, as a pipeline pass counts
// them.
func (p *Pass) Seen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// MustTotalSeen fails the test unless the connector's last Total in this
// pass equals the items it reported: for a connector that promises an
// exact total by the end of a pass.
func (p *Pass) MustTotalSeen(tb testing.TB) {
	tb.Helper()
	if got, want := p.LastTotal(), p.Seen(); got != want {
		tb.Errorf("last Total(%d), but %d items were reported (%d Put, %d deleted, %d failed, %d skipped)",
			got, want, len(p.Puts()), len(p.Deletes()), len(p.Fails()), len(p.Skips()))
	}
}

// MustAddUp fails the test unless the pass's summary adds up: added +
// changed + unchanged + deleted + failed + skipped (+ queued) equals the
// items seen, and the listed failures and skips by reason match their
// counts (pipeline.Summary.Check). It is the same check for every
// connector kind.
func MustAddUp(tb testing.TB, sum pipeline.Summary) {
	tb.Helper()
	if err := sum.Check(); err != nil {
		tb.Errorf("%s: summary does not add up: %v\n%s", sum.Installation, err, sum)
	}
}

// Cursors returns the cursors set, over all passes.
func (p *Pass) Cursors() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.cursors)
}

// Totals returns the argument of every Total call in this pass, in order.
func (p *Pass) Totals() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.totals)
}

// LastTotal returns the argument of the last Total call in this pass, or 0
// if there was none.
func (p *Pass) LastTotal() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.totals) == 0 {
		return 0
	}
	return p.totals[len(p.totals)-1]
}

// Completed reports whether Complete was called in this pass.
func (p *Pass) Completed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.complete
}
