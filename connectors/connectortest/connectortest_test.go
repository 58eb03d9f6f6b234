package connectortest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
)

var ctx = context.Background()

func mustPut(tb testing.TB, p *connectortest.Pass, it ingestd.Item) {
	tb.Helper()
	if err := p.Put(ctx, it); err != nil {
		tb.Fatalf("Put %s: %v", it.ExternalID, err)
	}
}

func TestPass_RecordsAPass(t *testing.T) {
	var p connectortest.Pass // the zero value is ready
	mustPut(t, &p, ingestd.Item{ExternalID: "b", ItemKind: "mail", Title: "one"})
	mustPut(t, &p, ingestd.Item{ExternalID: "a", ItemKind: "attachment", ParentExternalID: "b"})
	mustPut(t, &p, ingestd.Item{ExternalID: "b", ItemKind: "mail", Title: "two"})
	if err := p.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	p.Fail("c", boom)
	p.Total(3)
	p.Total(4)
	p.Complete()

	if got, want := p.PutIDs(), []string{"b", "a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("PutIDs = %q, want %q", got, want)
	}
	if got, want := len(p.Puts()), 3; got != want {
		t.Errorf("%d Puts, want %d", got, want)
	}
	if got, want := p.PutCount("b"), 2; got != want {
		t.Errorf("PutCount(b) = %d, want %d", got, want)
	}
	if got := p.MustPut(t, "b").Title; got != "one" {
		t.Errorf("MustPut(b).Title = %q, want the first Put's", got)
	}
	if got := p.Items()["b"].Title; got != "two" {
		t.Errorf("stored b.Title = %q, want the last Put's", got)
	}
	if got, want := p.ItemIDs(""), []string{"b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ItemIDs = %q, want %q (a was deleted)", got, want)
	}
	if got, want := p.Deletes(), []string{"a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Deletes = %q, want %q", got, want)
	}
	if got := p.Fails(); len(got) != 1 || !errors.Is(got["c"], boom) {
		t.Errorf("Fails = %v, want c: boom", got)
	}
	if got, want := p.Totals(), []int{3, 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("Totals = %v, want %v", got, want)
	}
	if got, want := p.LastTotal(), 4; got != want {
		t.Errorf("LastTotal = %d, want %d", got, want)
	}
	if !p.Completed() {
		t.Error("Completed = false after Complete")
	}
}

func TestPass_NextKeepsStoreForgetsPass(t *testing.T) {
	p := connectortest.New(nil)
	mustPut(t, p, ingestd.Item{ExternalID: "x", ItemKind: "page"})
	mustPut(t, p, ingestd.Item{ExternalID: "y", ItemKind: "file"})
	if err := p.SetCursor(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetCursor(ctx, "gone", "1"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetCursor(ctx, "gone", ""); err != nil {
		t.Fatal(err)
	}
	p.Delete(ctx, "y")
	p.Fail("z", errors.New("no"))
	p.Total(1)
	p.Complete()

	if q := p.Next(); q != p {
		t.Fatal("Next returned another Pass")
	}
	if n := len(p.Puts()) + len(p.PutIDs()) + p.PutCount("x") + len(p.Deletes()) + len(p.Fails()) + len(p.Totals()) + p.LastTotal(); n != 0 {
		t.Errorf("new pass remembers %d calls of the last", n)
	}
	if p.Completed() {
		t.Error("new pass is Completed")
	}
	if got, want := p.ItemIDs("page"), []string{"x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stored pages = %q, want %q", got, want)
	}
	if got, want := p.Cursors(), map[string]string{"k": "v"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Cursors = %v, want %v (an empty value removes)", got, want)
	}
	if got, _ := p.Cursor(ctx, "k"); got != "v" {
		t.Errorf("Cursor(k) = %q, want v", got)
	}
}

func TestPass_Options(t *testing.T) {
	storeDown, noDelete := errors.New("store down"), errors.New("never deletes")
	completes := 0
	p := connectortest.New(&connectortest.Options{
		PutErr: storeDown, DeleteErr: noDelete, CheckParents: true,
		OnComplete: func() { completes++ },
	})
	if err := p.Put(ctx, ingestd.Item{ExternalID: "m"}); !errors.Is(err, storeDown) {
		t.Errorf("Put = %v, want %v", err, storeDown)
	}
	p.SetPutErr(nil)
	if err := p.Put(ctx, ingestd.Item{ExternalID: "m#1", ParentExternalID: "m"}); err == nil {
		t.Error("Put of a child before its parent succeeded")
	}
	if got := p.PutIDs(); len(got) != 0 {
		t.Errorf("refused Puts were recorded: %q", got)
	}
	mustPut(t, p, ingestd.Item{ExternalID: "m"})
	mustPut(t, p, ingestd.Item{ExternalID: "m#1", ParentExternalID: "m"})
	if err := p.Delete(ctx, "m"); !errors.Is(err, noDelete) {
		t.Errorf("Delete = %v, want %v", err, noDelete)
	}
	if got := p.Deletes(); len(got) != 0 {
		t.Errorf("refused Delete was recorded: %q", got)
	}
	p.Complete()
	if completes != 1 || !p.Completed() {
		t.Errorf("OnComplete called %d times, Completed %v; want once, true", completes, p.Completed())
	}
}

func TestPass_CheckParentsSeesDeletes(t *testing.T) {
	p := connectortest.New(&connectortest.Options{CheckParents: true})
	mustPut(t, p, ingestd.Item{ExternalID: "m"})
	p.Next()
	if err := p.Delete(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if err := p.Put(ctx, ingestd.Item{ExternalID: "m#1", ParentExternalID: "m"}); err == nil {
		t.Error("Put of a child of a deleted parent succeeded")
	}
}

func TestPass_AccessorsReturnCopies(t *testing.T) {
	p := connectortest.New(nil)
	mustPut(t, p, ingestd.Item{ExternalID: "a"})
	p.Delete(ctx, "a")
	mustPut(t, p, ingestd.Item{ExternalID: "b"})
	p.Fail("c", errors.New("c"))
	p.SetCursor(ctx, "k", "v")
	p.Total(1)

	p.Puts()[0].ExternalID = "changed"
	p.PutIDs()[0] = "changed"
	p.Items()["changed"] = ingestd.Item{}
	p.Deletes()[0] = "changed"
	p.Fails()["changed"] = nil
	p.Cursors()["k"] = "changed"
	p.Totals()[0] = 99

	if got, want := p.PutIDs(), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("PutIDs = %q, want %q", got, want)
	}
	if got, want := p.ItemIDs(""), []string{"b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ItemIDs = %q, want %q", got, want)
	}
	if got, want := p.Deletes(), []string{"a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Deletes = %q, want %q", got, want)
	}
	if got := p.Fails(); len(got) != 1 {
		t.Errorf("Fails = %v, want only c", got)
	}
	if got, _ := p.Cursor(ctx, "k"); got != "v" {
		t.Errorf("Cursor(k) = %q, want v", got)
	}
	if got, want := p.Totals(), []int{1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Totals = %v, want %v", got, want)
	}
}

// TestPass_Concurrent is meant for -race: every call from many goroutines.
func TestPass_Concurrent(t *testing.T) {
	p := connectortest.New(&connectortest.Options{CheckParents: true})
	mustPut(t, p, ingestd.Item{ExternalID: "root"})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				id := fmt.Sprintf("%d/%d", i, j)
				if err := p.Put(ctx, ingestd.Item{ExternalID: id, ParentExternalID: "root"}); err != nil {
					t.Error(err)
				}
				p.SetCursor(ctx, id, "1")
				p.Cursor(ctx, id)
				p.Fail(id+"!", errors.New("x"))
				p.Total(j)
				_ = p.Items()
				_ = p.PutCount(id)
			}
			p.Delete(ctx, fmt.Sprintf("%d/0", i))
		})
	}
	wg.Wait()
	if got, want := len(p.PutIDs()), 1+8*50; got != want {
		t.Errorf("%d Puts, want %d", got, want)
	}
	if got, want := len(p.Items()), 1+8*49; got != want {
		t.Errorf("%d stored items, want %d", got, want)
	}
	if got, want := len(p.Cursors()), 8*50; got != want {
		t.Errorf("%d cursors, want %d", got, want)
	}
}

func TestPass_CountsEveryReport(t *testing.T) {
	p := connectortest.New(nil)
	mustPut(t, p, ingestd.Item{ExternalID: "a"})
	mustPut(t, p, ingestd.Item{ExternalID: "a"})
	if err := p.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	p.Fail("f", errors.New("x"))
	p.Fail("f", errors.New("y")) // replaces the reason, counts again
	p.Skip("s1", "over max_attachments")
	p.Skip("s2", "duplicate delivery")
	p.Total(7)
	if got, want := p.Seen(), 7; got != want {
		t.Errorf("Seen = %d, want %d", got, want)
	}
	if got, want := p.Skips(), []connectortest.Skip{{ExternalID: "s1", Reason: "over max_attachments"}, {ExternalID: "s2", Reason: "duplicate delivery"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Skips = %+v, want %+v", got, want)
	}
	if got := p.SkipCount("duplicate delivery"); got != 1 {
		t.Errorf("SkipCount = %d, want 1", got)
	}
	p.MustTotalSeen(t)
	p.Next()
	if p.Seen() != 0 || len(p.Skips()) != 0 {
		t.Errorf("Next kept Seen %d, Skips %+v", p.Seen(), p.Skips())
	}
}
