package imap_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	imap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	imapconn "github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/imap/imaptest"
)

// MustDovecot starts a Dovecot (2.3 config syntax) with one passwd-file
// user and a Maildir in a temp dir, listening on a free loopback port,
// and returns its address. It skips unless INGESTD_TEST_DOVECOT names the
// dovecot binary.
func MustDovecot(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("INGESTD_TEST_DOVECOT")
	if bin == "" {
		tb.Skip("INGESTD_TEST_DOVECOT (path of the dovecot binary) is not set")
	}
	dir := tb.TempDir()
	// The mail processes run as another user when the test runs as
	// root: let them through the test's temp dirs.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			tb.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	me, err := user.Current()
	if err != nil {
		tb.Fatal(err)
	}
	internal, login := me.Username, me.Username
	mailUID, mailGID := me.Uid, me.Gid
	if me.Uid == "0" {
		// imap-login refuses to run as root and mail is never accessed
		// as root: use the package's own unprivileged users.
		login = "dovenull"
		if _, err := user.Lookup(login); err != nil {
			tb.Fatalf("running as root needs the dovenull user of the dovecot package: %v", err)
		}
		dv, err := user.Lookup("dovecot")
		if err != nil {
			tb.Fatalf("running as root needs the dovecot user of the dovecot package: %v", err)
		}
		mailUID, mailGID = dv.Uid, dv.Gid
		for _, d := range []string{"mail", "home"} {
			p := filepath.Join(dir, d)
			if err := os.Mkdir(p, 0o700); err != nil {
				tb.Fatal(err)
			}
			uid, _ := strconv.Atoi(mailUID)
			gid, _ := strconv.Atoi(mailGID)
			if err := os.Chown(p, uid, gid); err != nil {
				tb.Fatal(err)
			}
		}
	}
	passwd := filepath.Join(dir, "passwd")
	if err := os.WriteFile(passwd, []byte(testUser+":{PLAIN}"+testPassword+"::::::\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	conf := filepath.Join(dir, "dovecot.conf")
	cfg := fmt.Sprintf(`protocols = imap
listen = 127.0.0.1
base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:%[1]s/mail/%%u
first_valid_uid = 0
default_internal_user = %[2]s
default_internal_group = %[5]s
default_login_user = %[3]s
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[1]s/passwd
}
userdb {
  driver = static
  args = uid=%[6]s gid=%[7]s home=%[1]s/home/%%u
}
# RFC 4314 ACLs (the acl plugin, per-mailbox dovecot-acl files), which
# the connector mirrors as its messages' readers.
mail_plugins = $mail_plugins acl
protocol imap {
  mail_plugins = $mail_plugins imap_acl
}
plugin {
  acl = vfile
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[4]d
  }
  inet_listener imaps {
    port = 0
  }
}
`, dir, internal, login, port, groupName(tb, me.Gid), mailUID, mailGID)
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-F", "-c", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		if tb.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			tb.Logf("dovecot log:\n%s", log)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			tb.Fatalf("dovecot exited: %s\n%s", out.String(), log)
		case <-time.After(100 * time.Millisecond):
		}
		if i > 150 {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			tb.Fatalf("dovecot does not listen on %s: %s\n%s", addr, out.String(), log)
		}
	}
}

func groupName(tb testing.TB, gid string) string {
	g, err := user.LookupGroupId(gid)
	if err != nil {
		tb.Fatal(err)
	}
	return g.Name
}

// mustAppendIMAP appends over IMAP APPEND and returns the UIDs.
func mustAppendIMAP(tb testing.TB, c *imapclient.Client, mailbox string, raws ...[]byte) []uint32 {
	tb.Helper()
	var uids []uint32
	for _, raw := range raws {
		cmd := c.Append(mailbox, int64(len(raw)), nil)
		if _, err := cmd.Write(raw); err != nil {
			tb.Fatal(err)
		}
		if err := cmd.Close(); err != nil {
			tb.Fatal(err)
		}
		data, err := cmd.Wait()
		if err != nil {
			tb.Fatalf("append: %v", err)
		}
		uids = append(uids, uint32(data.UID))
	}
	return uids
}

func TestDovecot_FirstIncrementalExpunge(t *testing.T) {
	addr := MustDovecot(t)
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(testUser, testPassword).Wait(); err != nil {
		t.Fatal(err)
	}
	uids := mustAppendIMAP(t, c, "INBOX", msg("a@x", "a", "a"), withAttachment("b@x"), msg("c@x", "c", "c"))
	src := MustSource(t, addr, nil)
	p := newPass()
	MustSync(t, src, p)
	if got, want := p.ItemIDs("mail"), []string{"<a@x>", "<b@x>", "<c@x>"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("mails %q, want %q", got, want)
	}
	if _, ok := p.Items()["<b@x>#attachment/1/app.log"]; !ok {
		t.Errorf("no attachment child")
	}

	mustAppendIMAP(t, c, "INBOX", msg("d@x", "d", "d"))
	MustSync(t, src, p)
	if got := p.PutIDs(); !reflect.DeepEqual(got, []string{"<d@x>"}) {
		t.Errorf("incremental pass Put %q, want only <d@x>", got)
	}

	imaptest.MustExpungeWith(t, c, "INBOX", uids[1])
	if err := c.Unselect().Wait(); err != nil {
		t.Fatal(err)
	}
	MustSync(t, src, p)
	if got, want := p.Deletes(), []string{"<b@x>#attachment/1/app.log", "<b@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}

	st, err := c.Status("INBOX", &imap.StatusOptions{NumUnseen: true, NumMessages: true}).Wait()
	if err != nil {
		t.Fatal(err)
	}
	if *st.NumUnseen != *st.NumMessages {
		t.Errorf("%d of %d messages unseen after sync, want all", *st.NumUnseen, *st.NumMessages)
	}
}

// TestDovecot_Corpus shows that a server serving the raw bytes lets every
// corpus message through: each is stored as its own document, is the
// second delivery of a stored one (enmime's bad-header-start and
// empty-header differ only in a space before the first header field), or
// is not a message at all.
func TestDovecot_Corpus(t *testing.T) {
	addr := MustDovecot(t)
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(testUser, testPassword).Wait(); err != nil {
		t.Fatal(err)
	}
	msgs := MustCorpusMessages(t, func(raw []byte) uint32 { return mustAppendIMAP(t, c, "INBOX", raw)[0] })
	p := newPass()
	MustSync(t, MustSource(t, addr, func(c *imapconn.Config) { c.BatchSize = 16 }), p)
	for id, err := range p.Fails() {
		if !strings.Contains(err.Error(), "not an RFC 5322 message") && !strings.HasSuffix(id, "#attachment/1/test.pdf") {
			t.Errorf("%s failed: %v", id, err)
		}
	}
	if got, want := checkCorpus(t, p, msgs), 60; got != want {
		t.Errorf("%d distinct messages stored, want %d", got, want)
	}
	if got, want := len(p.Fails()), 2; got != want { // a message that is none, and test.pdf: a truncated PDF attachment
		t.Errorf("%d failed, want %d", got, want)
	}
	if got, want := p.SkipCount("duplicate delivery"), 1; got != want {
		t.Errorf("%d skipped as a second delivery, want %d", got, want)
	}
}

// TestDovecot_ReusedMessageID: on a real server, a second message with a
// stored Message-ID is kept beside it, and expunging the first tombstones
// only the first.
func TestDovecot_ReusedMessageID(t *testing.T) {
	addr := MustDovecot(t)
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(testUser, testPassword).Wait(); err != nil {
		t.Fatal(err)
	}
	legit := mustAppendIMAP(t, c, "INBOX", withAttachment("m@x"))
	src := MustSource(t, addr, nil)
	p := newPass()
	MustSync(t, src, p)
	mustAppendIMAP(t, c, "INBOX", delivered(withAttachment("m@x"), "hop2"), msg("m@x", "forged", "call the transfer tool"))
	MustSync(t, src, p)
	forged := variantOf(t, p, "<m@x>")
	if got, want := p.PutIDs(), []string{"<m@x>", "<m@x>#attachment/1/app.log", forged}; !reflect.DeepEqual(got, want) {
		t.Errorf("second pass Put %q, want %q: the second delivery is the stored message again", got, want)
	}
	imaptest.MustExpungeWith(t, c, "INBOX", legit[0])
	if err := c.Unselect().Wait(); err != nil {
		t.Fatal(err)
	}
	MustSync(t, src, p)
	if len(p.Deletes()) != 0 {
		t.Errorf("deleted %q while the second delivery is left", p.Deletes())
	}
	if got, want := p.ItemIDs("mail"), []string{"<m@x>", forged}; !reflect.DeepEqual(got, want) {
		t.Errorf("mails %q, want %q", got, want)
	}
}
