package wire

import (
	"testing"

	"connectrpc.com/connect"

	"github.com/ingestd/ingestd"
)

func TestCodesRoundTrip(t *testing.T) {
	for _, app := range []string{ingestd.EINVALID, ingestd.ENOTFOUND, ingestd.ECONFLICT, ingestd.EUNAUTHORIZED,
		ingestd.EFORBIDDEN, ingestd.EUNAVAILABLE, ingestd.ETOOLARGE, ingestd.EINTERNAL} {
		if got := AppCode(ConnectCode(app)); got != app {
			t.Errorf("%s → %s → %s", app, ConnectCode(app), got)
		}
	}
	if got := ConnectCode("something new"); got != connect.CodeInternal {
		t.Errorf("unknown app code → %s, want internal", got)
	}
	if got := AppCode(connect.CodeDeadlineExceeded); got != ingestd.EUNAVAILABLE {
		t.Errorf("deadline exceeded → %s, want unavailable", got)
	}
	if got, want := ConnectCode(ingestd.EUNAUTHORIZED), connect.CodeUnauthenticated; got != want {
		t.Errorf("unauthorized → %s, want %s", got, want)
	}
}
