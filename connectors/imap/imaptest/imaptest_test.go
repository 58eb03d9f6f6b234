package imaptest_test

import (
	"reflect"
	"testing"
	"time"

	imap "github.com/emersion/go-imap/v2"

	"github.com/ingestd/ingestd/connectors/imap/imaptest"
)

func raw(subject string) []byte {
	return []byte("From: a@example.org\r\nSubject: " + subject + "\r\n\r\nbody\r\n")
}

func uidSet(uids ...uint32) imap.UIDSet {
	var s imap.UIDSet
	for _, u := range uids {
		s.AddNum(imap.UID(u))
	}
	return s
}

func TestServer(t *testing.T) {
	s := imaptest.MustServer(t, "u@example.com", "pw")
	day := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	uids := s.MustAppend(t, "INBOX", day, raw("a"), raw("b"), raw("c"))
	if got, want := uids, []uint32{1, 2, 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UIDs %v, want %v", got, want)
	}

	c := s.MustClient(t)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UIDSearch(&imap.SearchCriteria{}, nil).Wait(); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(uidSet(1, 2), &imap.FetchOptions{UID: true}).Collect()
	if err != nil || len(msgs) != 2 {
		t.Fatalf("fetch: %d messages, %v", len(msgs), err)
	}
	if got, want := s.Fetches(), []string{"1:2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Fetches = %q, want %q", got, want)
	}
	if got := s.Fetches(); len(got) != 0 {
		t.Errorf("Fetches did not forget: %q", got)
	}
	if got := s.Searches(); got != 1 {
		t.Errorf("Searches = %d, want 1", got)
	}

	s.MustExpunge(t, "INBOX", uids[1])
	st, err := s.User.Status("INBOX", &imap.StatusOptions{NumMessages: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := *st.NumMessages; got != 2 {
		t.Errorf("%d messages after expunging one of 3", got)
	}

	s.CutAfter(2)
	if _, err := c.Fetch(uidSet(1, 3), &imap.FetchOptions{UID: true}).Collect(); err == nil {
		t.Error("fetch of 2 messages succeeded though the server was to cut before the 2nd response")
	}
}
