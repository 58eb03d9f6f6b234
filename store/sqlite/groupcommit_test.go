package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/storetest"
)

// Concurrent PutDocument calls are written in one transaction; a document
// refused inside it (a chunk id another document holds) and one whose
// caller gave up leave no trace, and the others are written whole.
func TestGroupCommit(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "db"))
	ctx := context.Background()
	owner := storetest.Doc("inst", "owner.md", "", "o")
	taken := storetest.Chunks(owner, 0, "taken")
	storetest.MustPut(t, s, owner, taken, nil)

	type call struct {
		doc     *ingestd.Document
		chunks  []ingestd.Chunk
		ctx     context.Context
		cancel  context.CancelFunc
		changed bool
		err     error
	}
	var calls []*call
	for i := range 30 {
		d := storetest.Doc("inst", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		cs := storetest.Chunks(d, i%8, fmt.Sprintf("text %d a", i), fmt.Sprintf("text %d b", i))
		c := &call{doc: d, chunks: cs, ctx: ctx}
		switch i % 10 {
		case 3: // a chunk id the owner holds
			cs[1].ID = taken[0].ID
		case 7: // the caller gives up while queued
			c.ctx, c.cancel = context.WithCancel(ctx)
			defer c.cancel()
		}
		calls = append(calls, c)
	}
	// Hold the write lock until every call is queued, so one batch takes
	// them all.
	before := s.writes
	s.wmu.Lock()
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() { c.changed, c.err = s.PutDocument(c.ctx, c.doc, c.chunks, nil) })
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		s.putMu.Lock()
		n := len(s.putQueue)
		s.putMu.Unlock()
		if n == len(calls) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls queued", n, len(calls))
		}
		time.Sleep(time.Millisecond)
	}
	for _, c := range calls {
		if c.cancel != nil {
			c.cancel()
		}
	}
	s.wmu.Unlock()
	wg.Wait()
	if got := s.writes - before; got != 1 {
		t.Fatalf("%d transactions for %d queued calls, want 1", got, len(calls))
	}
	for i, c := range calls {
		_, err := s.Document(ctx, c.doc.ID)
		switch i % 10 {
		case 3:
			if ingestd.ErrorCode(c.err) != ingestd.ECONFLICT {
				t.Errorf("call %d: err %v, want ECONFLICT", i, c.err)
			}
			if ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
				t.Errorf("call %d: refused document stored (%v)", i, err)
			}
		case 7:
			if c.err != context.Canceled {
				t.Errorf("call %d: err %v, want context.Canceled", i, c.err)
			}
			if ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
				t.Errorf("call %d: cancelled document stored (%v)", i, err)
			}
		default:
			if c.err != nil || !c.changed {
				t.Errorf("call %d: changed %v, err %v", i, c.changed, c.err)
			}
			got, err := s.DocumentChunks(ctx, []string{c.doc.ID})
			if err != nil || len(got) != 2 {
				t.Errorf("call %d: %d chunks stored (%v), want 2", i, len(got), err)
			}
		}
	}
	got, err := s.DocumentChunks(ctx, []string{owner.ID})
	if err != nil || len(got) != 1 || got[0].ID != taken[0].ID {
		t.Fatalf("the owner's chunks: %v (%v)", got, err)
	}
}

// PutDocuments writes its documents in as few transactions as
// putBatchMax allows, and a refused one among them leaves the others.
func TestPutDocumentsShareTransactions(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "db"))
	ctx := context.Background()
	s.putBatchMax = 16
	var puts []ingestd.DocumentPut
	for i := range 40 {
		d := storetest.Doc("inst", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		cs := storetest.Chunks(d, i%8, fmt.Sprintf("text %d", i))
		if i == 20 {
			cs[0].DocumentID = "another"
		}
		puts = append(puts, ingestd.DocumentPut{Doc: d, Chunks: cs})
	}
	before := s.writes
	res := s.PutDocuments(ctx, puts)
	// 39 documents get through the checks: 16 + 16 + 7.
	if got, want := s.writes-before, 3; got != want {
		t.Fatalf("%d transactions for %d documents at %d a transaction, want %d", got, len(puts), s.putBatchMax, want)
	}
	for i, r := range res {
		if i == 20 {
			if ingestd.ErrorCode(r.Err) != ingestd.EINVALID {
				t.Errorf("put %d: err %v, want EINVALID", i, r.Err)
			}
			continue
		}
		if r.Err != nil || !r.Changed {
			t.Errorf("put %d: changed %v, err %v", i, r.Changed, r.Err)
		}
	}
}
