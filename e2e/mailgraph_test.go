package e2e_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

const threadRoot = "Message-ID: <root@mail.example.net>\r\n" +
	"From: Dana <dana@example.net>\r\nTo: support@example.com\r\n" +
	"Subject: Invoice 7781 is wrong\r\nDate: Mon, 02 Nov 2026 09:00:00 +0000\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n" +
	"--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
	"The invoice 7781 charges the annual plan twice. Please correct the invoice.\r\n" +
	"--b1\r\nContent-Type: text/csv; name=lines.csv\r\nContent-Disposition: attachment; filename=lines.csv\r\n\r\n" +
	"item,amount\r\nannual plan,490\r\nannual plan,490\r\n" +
	"--b1--\r\n"

const threadReply = "Message-ID: <reply@mail.example.net>\r\n" +
	"In-Reply-To: <root@mail.example.net>\r\nReferences: <root@mail.example.net>\r\n" +
	"From: Dana <dana@example.net>\r\nTo: support@example.com\r\n" +
	"Subject: Re: Invoice 7781 is wrong\r\nDate: Tue, 03 Nov 2026 09:00:00 +0000\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
	"Any news about the duplicated charge? My accountant is waiting.\r\n"

// TestMailThreadAndAttachmentInExpandedBlock syncs a two-message thread
// with a CSV attachment from a real IMAP server and checks that retrieval
// expands a hit on the first message to its reply (via the thread link)
// and to its attachment (via parent), that the attachment inherited the
// mailbox's tier, and that the verdict counts the expanded documents.
func TestMailThreadAndAttachmentInExpandedBlock(t *testing.T) {
	ctx := t.Context()
	srv := MustIMAPServer(t, "pw")
	srv.MustAppend(t, "INBOX", time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), []byte(threadRoot))
	srv.MustAppend(t, "INBOX", time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC), []byte(threadReply))

	st := sqlitetest.MustOpen(t)
	emb := embedder.NewLexical(256)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	inst := ingestd.Installation{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal}
	src, err := imapconn.NewSource(inst.ID, imapconn.Config{Addr: srv.Addr, Username: imapUser, PasswordEnv: "PW",
		TLS: imapconn.TLSNone, Insecure: true, Timeout: 30 * time.Second},
		&imapconn.Options{LookupEnv: func(string) (string, bool) { return "pw", true }})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := p.Sync(ctx, inst, src, nil); err != nil || sum.Added != 3 {
		t.Fatalf("sync = %+v, %v; want 2 mails and 1 attachment added", sum, err)
	}

	rootID := ingestd.DocumentID(inst.ID, imapconn.MessageExternalID("<root@mail.example.net>"))
	replyID := ingestd.DocumentID(inst.ID, imapconn.MessageExternalID("<reply@mail.example.net>"))
	svc, err := retrieval.New(retrieval.Options{Store: st, Embedder: emb, Installations: []ingestd.Installation{inst}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: "invoice 7781 charges the annual plan twice", TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Primary) != 1 || resp.Primary[0].DocumentID != rootID {
		t.Fatalf("primary = %+v, want the first message", resp.Primary)
	}
	via := map[string]string{}
	var attachment *ingestd.ServedChunk
	for i, c := range resp.Expanded {
		via[c.DocumentID] = c.Via
		if c.DocumentID != replyID {
			attachment = &resp.Expanded[i]
		}
	}
	if via[replyID] == "" {
		t.Fatalf("expanded = %+v, want the reply through the thread", resp.Expanded)
	}
	if attachment == nil || attachment.Via != "parent" || attachment.Tier != string(ingestd.TierUntrustedExternal) {
		t.Fatalf("expanded = %+v, want the attachment via parent with the mailbox's tier", resp.Expanded)
	}
	ids := resp.Verdict.UntrustedDocumentIDs
	if resp.Verdict.ToolsAllowed || !slices.Contains(ids, replyID) || !slices.Contains(ids, attachment.DocumentID) {
		t.Fatalf("verdict = %+v, want tools blocked naming the expanded documents too", resp.Verdict)
	}
}
