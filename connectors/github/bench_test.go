package github_test

import (
	"context"
	"testing"

	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

// BenchmarkSyncIncremental is a pass over the recorded repo when nothing
// changed: every listing answers 304.
func BenchmarkSyncIncremental(b *testing.B) {
	f := MustFakeAPI(b)
	for _, n := range []string{"0", "1", "2", "3"} {
		f.record(b, "github3py.Repository_issues_state_all."+n+".json")
	}
	f.setJSON(b, "/repos/betamaxpy/betamax/issues/comments", `W/"c0"`, []any{})
	f.setJSON(b, "/repos/betamaxpy/betamax/pulls/comments", `W/"r0"`, []any{})
	clock := &fakeClock{now: t0}
	src := MustSource(b, f, clock, github.Config{Repos: []string{"sigmavirus24/betamax"}, Include: github.Include{Docs: no()}})
	pass := connectortest.New(nil)
	if err := src.Sync(context.Background(), pass); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		pass.Next()
		if err := src.Sync(context.Background(), pass); err != nil {
			b.Fatal(err)
		}
	}
}
