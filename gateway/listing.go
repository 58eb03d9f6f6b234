package gateway

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
)

// Listing is what one upstream offered when it was last listed, against
// its declaration: what `ingestd gateway tools` shows and start-up logs.
type Listing struct {
	Upstream string
	// Down is why the upstream could not be listed, "" when it was.
	Down    string
	Offered []Offered
	// Undeclared are tools the upstream offers that no declaration
	// names: never offered to the host.
	Undeclared []string
	// Missing are declared tools the upstream does not offer.
	Missing []string
	// Withheld are declared tools not offered, with why.
	Withheld map[string]string
}

// Offered is one tool an upstream offers.
type Offered struct {
	Name     string
	Title    string
	Declared bool
	Decl     Tool
	// Suggested is the class the upstream's own annotations suggest: a
	// suggestion for the operator, never believed.
	Suggested ingestd.ToolClass
}

// Suggest is the class an upstream's annotations claim: write unless it
// says readOnlyHint; then read_open unless openWorldHint is false.
// Annotations are the upstream's word about itself: the gateway shows
// this to the operator and never decides by it.
func Suggest(a *mcp.ToolAnnotations) ingestd.ToolClass {
	switch {
	case a == nil || !a.ReadOnlyHint:
		return ingestd.ToolWrite
	case a.OpenWorldHint != nil && !*a.OpenWorldHint:
		return ingestd.ToolRead
	}
	return ingestd.ToolReadOpen
}

// Listings returns each upstream's last listing, in declaration order.
func (g *Gateway) Listings() []Listing {
	out := make([]Listing, 0, len(g.ups))
	for _, u := range g.ups {
		u.mu.Lock()
		l := u.listing
		l.Upstream = u.cfg.ID
		if u.pinned == nil && u.down != nil {
			l.Down = u.down.Error()
		}
		l.Offered = slices.Clone(l.Offered)
		slices.SortFunc(l.Offered, func(a, b Offered) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		if len(u.withheld) > 0 {
			l.Withheld = map[string]string{}
			for k, v := range u.withheld {
				l.Withheld[k] = v
			}
		}
		u.mu.Unlock()
		out = append(out, l)
	}
	return out
}
