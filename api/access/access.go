// Package access is the one scope check. A caller is a Principal: the
// scopes (actions) its token holds and the installations (data) it may
// see. Whoever authenticates a caller (api for bearer tokens,
// cmd for the operator of a local process) puts its Principal in the
// context; Retriever and Documents wrap what serves retrieval and apply
// it, so every surface that serves through them — REST, Connect/gRPC, MCP
// tools and resources, the provenance report — is held to the same rule
// in the same code. Nothing else checks scopes.
//
// The rule: a principal limited to installations can neither retrieve,
// expand into, see in the rejected block, read, nor count in the report
// any document of another installation. A request that names an
// installation outside the limit is refused with EFORBIDDEN naming it,
// never silently narrowed; a request that names none is narrowed to the
// limit. A document outside the limit reads as not found, exactly like a
// document that does not exist, so its existence does not leak.
//
// Fail closed: a context without a Principal is refused (EUNAUTHORIZED).
// A surface that forgot to authenticate serves nothing.
package access

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
)

// Scopes a principal can hold.
const (
	// ScopeRetrieve reads: retrieve, the provenance report, documents.
	ScopeRetrieve = "retrieve"
	// ScopeAdmin changes state: reject, delete, sync, add a URL.
	ScopeAdmin = "admin"
	// ScopeMetrics reads the Prometheus metrics, which name every
	// installation and its sync health: it needs a principal that sees
	// every installation (RequireAll), and it opens nothing else.
	ScopeMetrics = "metrics"
)

// Scopes lists every scope, in the order messages name them.
var Scopes = []string{ScopeRetrieve, ScopeAdmin, ScopeMetrics}

// Principal is who is calling.
type Principal struct {
	// Name is the configured token's name ("" for the operator); it is
	// shown in refusals, never the token.
	Name string
	// Scopes are the actions it may take.
	Scopes []string
	// Installations, when not nil, limits what it may see to the
	// documents of these installations. nil means every installation; an
	// empty non-nil slice means none.
	Installations []string

	// User binds the caller to one person: every request reads as them
	// (see Reader). ActForUsers makes every request name the person it is
	// for. Neither is a service: the operator's view of every document.
	User        ingestd.Principal
	ActForUsers bool
	// Groups is the configured group membership people's readers are
	// resolved with.
	Groups ingestd.Groups
}

// Operator returns the principal of whoever runs the process with its
// configuration: the CLI, a stdio MCP server reading the store, a
// token-less server that answers loopback only. Every scope, every
// installation.
func Operator() *Principal {
	return &Principal{Name: "", Scopes: slices.Clone(Scopes)}
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal in ctx, nil when there is none.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// Require returns the principal in ctx when it holds scope. It returns
// EUNAUTHORIZED when ctx carries no principal and EFORBIDDEN when the
// principal lacks the scope.
func Require(ctx context.Context, scope string) (*Principal, error) {
	p := FromContext(ctx)
	if p == nil {
		return nil, ingestd.Errorf(ingestd.EUNAUTHORIZED, "no caller is authenticated for this request")
	}
	if !slices.Contains(p.Scopes, scope) {
		return nil, ingestd.Errorf(ingestd.EFORBIDDEN, "%s lacks the %q scope", p.who(), scope)
	}
	return p, nil
}

// RequireInstallation is Require for an action on one installation (a
// sync, a URL added to it): it also returns EFORBIDDEN when the principal
// may not see the installation.
func RequireInstallation(ctx context.Context, scope, installation string) (*Principal, error) {
	p, err := Require(ctx, scope)
	if err != nil {
		return nil, err
	}
	if !p.Sees(installation) {
		return nil, ingestd.Errorf(ingestd.EFORBIDDEN, "%s is limited to installations %s; %q is outside them", p.who(), p.limit(), installation)
	}
	return p, nil
}

// Sees reports whether the principal may see documents of installation.
func (p *Principal) Sees(installation string) bool {
	return p.Installations == nil || slices.Contains(p.Installations, installation)
}

// Narrow returns the installations a request naming requested may reach:
// requested itself when every one is within the limit (or there is no
// limit), the limit when requested names none. It returns EFORBIDDEN
// naming the first installation outside the limit.
func (p *Principal) Narrow(requested []string) ([]string, error) {
	if p.Installations == nil {
		return requested, nil
	}
	if len(p.Installations) == 0 {
		return nil, ingestd.Errorf(ingestd.EFORBIDDEN, "%s is limited to no installation", p.who())
	}
	named := false
	for _, id := range requested {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		named = true
		if !p.Sees(id) {
			return nil, ingestd.Errorf(ingestd.EFORBIDDEN, "%s is limited to installations %s; the request names %q", p.who(), p.limit(), id)
		}
	}
	if named {
		return requested, nil
	}
	return slices.Clone(p.Installations), nil
}

func (p *Principal) who() string {
	if p.Name == "" {
		return "the caller"
	}
	return fmt.Sprintf("token %q", p.Name)
}

func (p *Principal) limit() string {
	if len(p.Installations) == 0 {
		return "[] (none)"
	}
	return "[" + strings.Join(p.Installations, ", ") + "]"
}

// RequireAll is Require for an action that spans installations (the
// dead-letter queue holds every installation's jobs): it also returns
// EFORBIDDEN when the principal is limited to some installations.
func RequireAll(ctx context.Context, scope string) (*Principal, error) {
	p, err := Require(ctx, scope)
	if err != nil {
		return nil, err
	}
	if p.Installations != nil {
		return nil, ingestd.Errorf(ingestd.EFORBIDDEN, "%s is limited to installations %s; this action spans every installation", p.who(), p.limit())
	}
	return p, nil
}
