package agentdojo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Attacks counts the policies, measured or bound, under which some
// injection's calls could run.
func (r *Report) Attacks() int {
	n := 0
	for _, p := range PolicyNames {
		if r.Policies[p].AttackSuccess > 0 {
			n++
		}
		if r.Bound[p].AttackSuccess > 0 {
			n++
		}
	}
	return n
}

// WriteText prints the report for a person: the derived organisation and
// configuration, then the figures per policy beside the bound.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "suite %s: %d user tasks, %d attack pairs\n", r.Suite, r.Tasks, r.Pairs)
	if r.Org.Domain != "" {
		fmt.Fprintf(&b, "organisation: mailbox owner %s, domain %s, boundary MTA %s\n", r.Org.Owner, r.Org.Domain, r.Org.AuthservID)
	}
	if len(r.Org.Members) > 0 {
		fmt.Fprintf(&b, "workspace members: %s\n", strings.Join(r.Org.Members, ", "))
	}
	b.WriteString("configuration:\n")
	for _, c := range r.Rules {
		vs := ""
		if c.VerifiedSenders != nil {
			vs = fmt.Sprintf(" verified_senders{%s %v -> %s}", c.VerifiedSenders.AuthservID, c.VerifiedSenders.Domains, c.VerifiedSenders.Tier)
		}
		fmt.Fprintf(&b, "  %-15s %-8s %s%s: %s\n", c.Installation, c.Connector, c.Tier, vs, c.Why)
	}
	recall := fmt.Sprintf("%.3f over %d search reads", r.SearchRecall, r.Searches)
	if r.Searches == 0 {
		recall = "1 (no search reads)"
	}
	fmt.Fprintf(&b, "mislabelled: %d external as trusted, %d internal as untrusted; search recall %s\n\n",
		r.Mislabelled.ExternalAsTrusted, r.Mislabelled.InternalAsUntrusted, recall)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tutility\tattack success\tconfirmations/task\tbound utility\tbound attack success\tbound confirmations/task")
	for _, p := range PolicyNames {
		f, g := r.Policies[p], r.Bound[p]
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", p, f.Utility, f.AttackSuccess, f.ConfirmationsPerTask, g.Utility, g.AttackSuccess, g.ConfirmationsPerTask)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Session) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nthe same with one turn for the whole session (a host that marks no turns: a taint lasts to the end):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tutility\tattack success\tconfirmations/task")
	for _, p := range PolicyNames {
		f := r.Session[p]
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\n", p, f.Utility, f.AttackSuccess, f.ConfirmationsPerTask)
	}
	return tw.Flush()
}
