package metrics

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
)

// Blocks are kept in five-minute buckets over the last day.
const (
	blockBucket  = 5 * time.Minute
	blockBuckets = 24 * 12
)

var _ ingestd.BlockLog = (*Retriever)(nil)

// blocks counts turns and blocks per bucket, and blocks per document, in
// bounded memory: a ring of buckets and at most
// ingestd.MaxTrackedBlockedDocuments documents.
type blocks struct {
	mu        sync.Mutex
	since     time.Time
	turns     int
	blocked   int
	would     int
	ring      [blockBuckets]ingestd.BlockBucket
	docs      map[string]*ingestd.BlockedDocument
	untracked int
}

func newBlocks(now time.Time) *blocks {
	return &blocks{since: now, docs: map[string]*ingestd.BlockedDocument{}}
}

// record counts one answer, given at.
func (b *blocks) record(at time.Time, resp *ingestd.RetrieveResponse) {
	v := resp.Verdict
	blocked := v == nil || !v.ToolsAllowed
	would := v != nil && v.ToolsAllowed && v.WouldBlock
	start := at.Truncate(blockBucket)
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := &b.ring[(start.Unix()/int64(blockBucket/time.Second))%blockBuckets]
	if !bk.Start.Equal(start) {
		*bk = ingestd.BlockBucket{Start: start}
	}
	b.turns++
	bk.Turns++
	switch {
	case blocked:
		b.blocked++
		bk.Blocked++
	case would:
		b.would++
		bk.WouldBlock++
	default:
		return
	}
	if v == nil {
		return
	}
	installs := installationsOf(resp)
	for _, id := range v.UntrustedDocumentIDs {
		d := b.docs[id]
		if d == nil {
			if len(b.docs) >= ingestd.MaxTrackedBlockedDocuments {
				b.untracked++
				continue
			}
			d = &ingestd.BlockedDocument{DocumentID: id, Installation: installs[id]}
			b.docs[id] = d
		}
		d.Blocks++
		d.LastAt = at
	}
}

// installationsOf maps each document an answer served to its
// installation.
func installationsOf(resp *ingestd.RetrieveResponse) map[string]string {
	m := map[string]string{}
	for _, block := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		for _, c := range block {
			m[c.DocumentID] = c.Installation
		}
	}
	return m
}

// report is the BlockReport at now.
func (b *blocks) report(now time.Time) ingestd.BlockReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := ingestd.BlockReport{Since: b.since, Turns: b.turns, Blocked: b.blocked, WouldBlock: b.would,
		BucketSeconds: int(blockBucket / time.Second), Buckets: []ingestd.BlockBucket{}, Documents: []ingestd.BlockedDocument{},
		Untracked: b.untracked}
	oldest := now.Add(-blockBuckets * blockBucket)
	for _, bk := range b.ring {
		if bk.Turns > 0 && bk.Start.After(oldest) {
			r.Buckets = append(r.Buckets, bk)
		}
	}
	slices.SortFunc(r.Buckets, func(x, y ingestd.BlockBucket) int { return x.Start.Compare(y.Start) })
	for _, d := range b.docs {
		r.Documents = append(r.Documents, *d)
	}
	slices.SortFunc(r.Documents, func(x, y ingestd.BlockedDocument) int {
		return cmp.Or(cmp.Compare(y.Blocks, x.Blocks), y.LastAt.Compare(x.LastAt), cmp.Compare(x.DocumentID, y.DocumentID))
	})
	return r
}

// BlockReport is what the Retriever's answers blocked since it was made,
// every document tracked, most blocks first: the API's scope check keeps
// a caller to the documents of its installations and cuts the list to
// ingestd.MaxBlockedDocuments.
func (r *Retriever) BlockReport(context.Context) (ingestd.BlockReport, error) {
	return r.blocks.report(r.now()), nil
}
