package imap_test

import (
	"fmt"
	"testing"

	imapconn "github.com/ingestd/ingestd/connectors/imap"
)

// BenchmarkFirstSync5000 measures a first sync of 5,000 messages (about
// 2 KiB each, a third with a text attachment) from the in-memory server
// over loopback, into an in-memory pass. Reported as messages/s.
func BenchmarkFirstSync5000(b *testing.B) {
	ts := MustServer(b)
	const n = 5000
	raws := make([][]byte, n)
	for i := range raws {
		if i%3 == 0 {
			raws[i] = withAttachment(fmt.Sprintf("att%d@example.com", i))
			continue
		}
		raws[i] = msg(fmt.Sprintf("m%d@example.com", i), fmt.Sprintf("Message %d", i),
			fmt.Sprintf("Hello,\r\n\r\nThis is message %d about the printer.\r\n%s", i, lorem))
	}
	ts.MustAppend(b, "INBOX", day, raws...)
	src := MustSource(b, ts.Addr, func(c *imapconn.Config) { c.BatchSize = 200 })
	b.ResetTimer()
	for b.Loop() {
		p := newPass()
		MustSync(b, src, p)
		if got := len(p.ItemIDs("mail")); got != n {
			b.Fatalf("%d mails, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

const lorem = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. " +
	"Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.\r\n" +
	"Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. " +
	"Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum.\r\n"
