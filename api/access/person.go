package access

import (
	"strings"

	"github.com/ingestd/ingestd"
)

// A person on every request. A token is one of three kinds, and the kind
// decides the reader a request gets (Principal.Reader), which the stores
// apply inside every search, the expansion's reads and the counts:
//
//   - bound to one person (User): every request reads as that person; a
//     request that names another principal is refused (EFORBIDDEN);
//   - acting for people (ActForUsers): every request must name the
//     person it is for (RetrieveRequest.Principal, the MCP argument
//     principal); one that names none is refused (EINVALID), never
//     widened to the service view;
//   - a service (neither): the operator's view, which reads every
//     document, unmapped ones included. A request that names a person
//     is narrowed to what that person may read.
//
// A person reads only documents whose readers name them, a group they
// are in (Groups), or everyone. An unmapped document is read by no
// person. A hidden document reads as missing (NotFound).

// Reader returns the reader a request naming named (a principal, or
// "") reads as, or the refusal described above.
func (p *Principal) Reader(named string) (*ingestd.Reader, error) {
	named = strings.TrimSpace(named)
	var asked ingestd.Principal
	if named != "" {
		u, err := ingestd.UserPrincipal(named)
		if err != nil {
			return nil, ingestd.Errorf(ingestd.EINVALID, "principal: %s", ingestd.ErrorMessage(err))
		}
		asked = u
	}
	switch {
	case p.User != "":
		if asked != "" && asked != p.User {
			return nil, ingestd.Errorf(ingestd.EFORBIDDEN, "%s is bound to %s; the request names %s", p.who(), p.User, asked)
		}
		return p.Groups.Reader(p.User), nil
	case p.ActForUsers:
		if asked == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "%s acts for people: the request must name its principal (user:<address>)", p.who())
		}
		return p.Groups.Reader(asked), nil
	case asked != "":
		return p.Groups.Reader(asked), nil
	}
	return nil, nil // the service view
}
