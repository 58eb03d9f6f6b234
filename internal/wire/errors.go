package wire

import (
	"connectrpc.com/connect"

	"github.com/ingestd/ingestd"
)

// codes pairs each application error code with its Connect/gRPC code, in
// one table for both directions, so the server and the client cannot drift.
var codes = []struct {
	app     string
	connect connect.Code
}{
	{ingestd.EINVALID, connect.CodeInvalidArgument},
	{ingestd.ENOTFOUND, connect.CodeNotFound},
	{ingestd.ECONFLICT, connect.CodeAlreadyExists},
	{ingestd.EUNAUTHORIZED, connect.CodeUnauthenticated},
	{ingestd.EFORBIDDEN, connect.CodePermissionDenied},
	{ingestd.EUNAVAILABLE, connect.CodeUnavailable},
	{ingestd.ETOOLARGE, connect.CodeResourceExhausted},
}

// ConnectCode is the Connect code of an application error code;
// CodeInternal for EINTERNAL and anything unknown.
func ConnectCode(app string) connect.Code {
	for _, c := range codes {
		if c.app == app {
			return c.connect
		}
	}
	return connect.CodeInternal
}

// AppCode is the application error code of a Connect code; a deadline
// that ran out is EUNAVAILABLE, anything unknown EINTERNAL.
func AppCode(code connect.Code) string {
	if code == connect.CodeDeadlineExceeded {
		return ingestd.EUNAVAILABLE
	}
	for _, c := range codes {
		if c.connect == code {
			return c.app
		}
	}
	return ingestd.EINTERNAL
}
