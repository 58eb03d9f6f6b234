package agentdojo

import (
	"bytes"
	"encoding/json"
	"net/mail"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
)

// Document kinds the rules know (suite.json's kind of a document: the
// format it is in, which says how it would reach ingestd).
const (
	KindEmail        = "email"
	KindCalendar     = "calendar_event"
	KindDrive        = "cloud_drive_file"
	KindSlackMessage = "slack_message"
	KindSlackChannel = "slack_channel"
	KindWebPage      = "web_page"
)

// Installation ids the configuration declares.
const (
	InstMail          = "mail"
	InstCalendar      = "calendar"
	InstDrive         = "drive"
	InstSlack         = "slack"
	InstSlackGuests   = "slack-guests"
	InstSlackChannels = "slack-channels"
	InstWeb           = "web"
	InstOther         = "other"
)

// Org is what the rules derive from a suite's documents: the organisation
// an operator would be configuring ingestd for.
type Org struct {
	// Owner is the mailbox owner's address: the address found in the most
	// messages' From, To and Cc headers (ties: the smallest). "" without
	// mail.
	Owner string `json:"owner,omitempty"`
	// Domain is Owner's domain, the organisation's mail domain.
	Domain string `json:"domain,omitempty"`
	// AuthservID is the authserv-id of the organisation's boundary MTA,
	// which the harness stands in for: "mx.<domain>".
	AuthservID string `json:"authserv_id,omitempty"`
	// Members are the Slack workspace's members: every name on a channel
	// document's members list (the workspace keeps membership; channel
	// names and messages are what people write).
	Members []string `json:"members,omitempty"`
}

// Derive applies the rules to the suite's documents. It never reads a
// document's authored_by.
func Derive(s *Suite) (Org, error) {
	var o Org
	count := map[string]int{}
	members := map[string]bool{}
	for _, d := range s.Documents {
		raw, err := s.read(d.File)
		if err != nil {
			return o, err
		}
		switch d.Kind {
		case KindEmail:
			for _, a := range mailAddresses(raw) {
				count[a]++
			}
		case KindSlackChannel:
			var names []string
			if v, ok := frontMatter(raw)["members"]; ok {
				_ = json.Unmarshal([]byte(v), &names)
			}
			for _, n := range names {
				members[n] = true
			}
		}
	}
	for a, n := range count {
		if n > count[o.Owner] || n == count[o.Owner] && (o.Owner == "" || a < o.Owner) {
			o.Owner = a
		}
	}
	if _, dom, ok := strings.Cut(o.Owner, "@"); ok && dom != "" {
		o.Domain = dom
		o.AuthservID = "mx." + dom
	}
	for m := range members {
		o.Members = append(o.Members, m)
	}
	slices.Sort(o.Members)
	return o, nil
}

// mailAddresses returns the distinct lower-case addresses of a message's
// From, To and Cc headers.
func mailAddresses(raw []byte) []string {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	var out []string
	for _, h := range []string{"From", "To", "Cc"} {
		list, err := m.Header.AddressList(h)
		if err != nil {
			continue
		}
		for _, a := range list {
			if s := strings.ToLower(a.Address); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// fromDomain is the lower-case domain of a message's single From address,
// "" when it has none or several.
func fromDomain(raw []byte) string {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return ""
	}
	list, err := m.Header.AddressList("From")
	if err != nil || len(list) != 1 {
		return ""
	}
	_, dom, _ := strings.Cut(strings.ToLower(list[0].Address), "@")
	return dom
}

// frontMatter reads a Markdown file's "---" header of `key: value` lines;
// values are kept raw (JSON in this format).
func frontMatter(raw []byte) map[string]string {
	out := map[string]string{}
	text := strings.ReplaceAll(string(raw), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return out
	}
	head, _, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		return out
	}
	for _, line := range strings.Split(head, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, " ") {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// body is a Markdown file's text after its front matter.
func body(raw []byte) string {
	text := strings.ReplaceAll(string(raw), "\r\n", "\n")
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		if _, b, ok := strings.Cut(rest, "\n---\n"); ok {
			return strings.TrimSpace(b)
		}
	}
	return strings.TrimSpace(text)
}

// unquote reads a front-matter value: a JSON string, else the raw text.
func unquote(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

// Rule is one line of the configuration: which documents an installation
// takes, through which connector, at which tier, and why.
type Rule struct {
	Installation    string                   `json:"installation"`
	Connector       string                   `json:"connector"`
	Tier            ingestd.Tier             `json:"tier"`
	VerifiedSenders *ingestd.VerifiedSenders `json:"verified_senders,omitempty"`
	Why             string                   `json:"why"`
}

// Configure is the configuration the rules give the organisation o: one
// installation per kind of document (and per trust level of Slack
// senders), each with its tier and why. Every tier is untrusted-external
// but two: mail that the boundary verified as from o's own domain
// (verified_senders) and Slack messages posted by the workspace's members.
func Configure(o Org) []Rule {
	var mailVS *ingestd.VerifiedSenders
	mailWhy := "mail from anyone; no domain of the organisation could be derived, so no sender is verified"
	if o.Domain != "" {
		mailVS = &ingestd.VerifiedSenders{AuthservID: o.AuthservID, Domains: []string{o.Domain}, Tier: ingestd.TierTrustedInternal}
		mailWhy = "anyone can write to the mailbox; mail the boundary MTA verified as from " + o.Domain + " (DMARC pass) is a colleague's"
	}
	u := ingestd.TierUntrustedExternal
	return []Rule{
		{InstMail, "files", u, mailVS, mailWhy},
		{InstCalendar, "files", u, nil, "an event's text is written by whoever sent the invitation, and the calendar does not record who did"},
		{InstDrive, "files", u, nil, "a shared file's text can come from anyone who can edit it or whose text was pasted in (a feedback sheet); owner and sharing do not say who wrote it"},
		{InstSlack, "webhook", ingestd.TierTrustedInternal, nil, "messages posted by members of the workspace"},
		{InstSlackGuests, "webhook", u, nil, "messages posted by anyone who is not a member of the workspace"},
		{InstSlackChannels, "webhook", u, nil, "a channel's name and topic are written by whoever created it, which the workspace's export does not record"},
		{InstWeb, "url", u, nil, "pages on other sites"},
		{InstOther, "files", u, nil, "a kind of document the rules do not know"},
	}
}

// route is the installation a document goes to under the rules.
func route(o Org, d Document, raw []byte) string {
	switch d.Kind {
	case KindEmail:
		return InstMail
	case KindCalendar:
		return InstCalendar
	case KindDrive:
		return InstDrive
	case KindSlackChannel:
		return InstSlackChannels
	case KindSlackMessage:
		if slices.Contains(o.Members, unquote(frontMatter(raw)["sender"])) {
			return InstSlack
		}
		return InstSlackGuests
	case KindWebPage:
		return InstWeb
	}
	return InstOther
}
