package ingestd

// VerifiedSenders is an owner's declaration, for a mail installation,
// that mail from its own domains takes a higher tier when, and only
// when, the organisation's own boundary MTA verified its origin: the
// topmost Authentication-Results field with AuthservID shows DMARC pass
// (or DKIM pass aligned with the From domain) for one of Domains. The
// connector reports what the header shows (MetaSenderVerifiedDomain,
// MetaSenderVerifiedBy, MetaDerivedContent); package provenance decides
// the tier from those facts and this declaration, as it does for
// TierByMeta. A message whose own text is not all its sender's
// (MetaDerivedContent) keeps the installation's tier.
type VerifiedSenders struct {
	// AuthservID is the authserv-id the boundary MTA writes in its
	// Authentication-Results fields (RFC 8601), e.g. "mx.example.com".
	AuthservID string
	// Domains are the From domains to trust once verified, lower-case,
	// compared exactly (a subdomain is listed on its own).
	Domains []string
	// Tier is the tier verified mail from Domains takes.
	Tier Tier
}

// Metadata keys a mail connector reports for VerifiedSenders. They are
// facts about the message, never a tier.
const (
	// MetaSenderVerifiedDomain is the From domain the boundary's
	// Authentication-Results verified.
	MetaSenderVerifiedDomain = "sender_verified_domain"
	// MetaSenderVerifiedBy is the authserv-id of the field that verified
	// it, lower-case.
	MetaSenderVerifiedBy = "sender_verified_by"
	// MetaDerivedContent says the message's own text holds what someone
	// else wrote: "attached_message" (a message/rfc822 part),
	// "forwarded" (a forwarded block), comma-separated.
	MetaDerivedContent = "derived_content"
)
