package loadgen

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// DefaultQueries are asked in turn when a run names no queries: support
// and handbook questions of the kind the quickstart corpus answers.
var DefaultQueries = []string{
	"refund by bank transfer",
	"how do I reset my password",
	"deploy needs a green CI run",
	"invoice was charged twice",
	"cancel my subscription and refund",
	"who approves admin privileges",
	"export the customer table",
	"shipping delay for order",
	"change the billing address on the account",
	"release checklist before a deploy",
	"the payment failed with card declined",
	"how long does a refund take",
	"escalate a support ticket to engineering",
	"update the README with new information",
	"rotate the API token",
	"schedule a call with the account manager",
}

// CheckTarget refuses a URL that is not http(s) or, unless
// allowRemote, whose host is not a loopback address or "localhost": a
// typo cannot load someone else's server.
func CheckTarget(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("target %q is not an http(s) URL", raw)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("target %q is not a loopback address; pass --allow-remote to load another machine", raw)
}
