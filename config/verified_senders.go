package config

import (
	"strings"

	"github.com/ingestd/ingestd"
)

// verifiedSendersConfig is an installation's verified_senders block:
//
//	verified_senders:
//	  authserv_id: mx.example.com   # what your boundary MTA writes in Authentication-Results
//	  domains: [example.com]        # From domains to trust once verified
//	  tier: trusted-internal        # the tier verified mail from them takes
//
// connectors.Registry.Check validates it against the kind (a mail kind)
// and its policy.
type verifiedSendersConfig struct {
	AuthservID string   `yaml:"authserv_id"`
	Domains    []string `yaml:"domains"`
	Tier       string   `yaml:"tier"`
}

func (v verifiedSendersConfig) declaration() *ingestd.VerifiedSenders {
	out := &ingestd.VerifiedSenders{AuthservID: strings.ToLower(strings.TrimSpace(v.AuthservID)), Tier: ingestd.Tier(strings.TrimSpace(v.Tier))}
	for _, d := range v.Domains {
		out.Domains = append(out.Domains, strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), "."))
	}
	return out
}
