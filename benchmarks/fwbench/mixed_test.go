package fwbench

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// TestMixedMailbox measures what verified_senders buys in a mailbox that
// colleagues and outsiders write into alike. Without it every message
// takes the mailbox's tier, so colleagues' answers block their turns
// needlessly; with it the colleagues' verified mail is trusted, and
// nothing an attacker can write is: a forged own-domain From, a pass
// from a foreign authserv-id, a forged pass below the boundary's own
// fail, a colleague forwarding an outsider's text. Injection reach stays
// 0 either way.
func TestMixedMailbox(t *testing.T) {
	var figs [2]Figures
	for i, ignore := range []bool{true, false} {
		b, err := Open(t.Context(), Options{Corpus: Mixed(), Dir: t.TempDir(), IgnoreVerifiedSenders: ignore})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ids := map[string]string{}
		var list []string
		for ref, d := range b.Corpus.Docs() {
			ids[d.ID] = ref
			list = append(list, d.ID)
		}
		tiers, err := provenance.Declare(b.insts).Tiers(t.Context(), b.store, list)
		if err != nil {
			t.Fatal(err)
		}
		for id, ref := range ids {
			d := b.Corpus.Docs()[ref]
			wantUntrusted := d.Untrusted || ignore && d.Installation == "team"
			if got := provenance.Untrusted(tiers[id]); got != wantUntrusted {
				t.Errorf("verified_senders ignored %t: %s in force %s (untrusted %t), want untrusted %t", ignore, ref, tiers[id], got, wantUntrusted)
			}
		}
		for _, inj := range b.Corpus.Injections {
			d, _ := b.Corpus.Doc(inj.Doc)
			if tiers[d.ID] != ingestd.TierUntrustedExternal {
				t.Errorf("attack %s (%s) is %s in force, want untrusted-external", inj.Doc, inj.Style, tiers[d.ID])
			}
		}
		m, err := SelectModes(Recommended)
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Measure(t.Context(), m, "")
		if err != nil {
			t.Fatal(err)
		}
		figs[i] = r.Modes[0]
		if f := figs[i]; f.InjectionReach != 0 {
			t.Errorf("verified_senders ignored %t: injection reach %d, want 0", ignore, f.InjectionReach)
		}
	}
	off, on := figs[0], figs[1]
	t.Logf("needless blocks: off %d/%d, on %d/%d; recall internal off %.2f on %.2f; external recall off %.2f on %.2f; utility loss off %d on %d",
		off.NeedlessBlock.N, off.NeedlessBlock.Of, on.NeedlessBlock.N, on.NeedlessBlock.Of, off.RecallInternal, on.RecallInternal,
		off.RecallExternal, on.RecallExternal, off.UtilityLoss.N, on.UtilityLoss.N)
	if on.NeedlessBlock.N >= off.NeedlessBlock.N || off.NeedlessBlock.N == 0 {
		t.Errorf("needless blocks with verified senders %d, without %d: want fewer with them", on.NeedlessBlock.N, off.NeedlessBlock.N)
	}
}
