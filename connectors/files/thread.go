package files

import (
	"bufio"
	"io"
	netmail "net/mail"
	"path"
	"strings"

	"github.com/ingestd/ingestd"
)

// maxHeaderBytes bounds how much of an .eml the thread index reads: the
// header block only. A message whose header is longer is left out of the
// index (nothing links to it; it still links to others when read).
const maxHeaderBytes = 256 << 10

// threads maps the Message-IDs of the .eml files of a tree (normalised,
// see threadKey) to their paths, so that a message's In-Reply-To and
// References link to the files that hold those messages, as the imap
// connector links a thread. When several files carry one Message-ID the
// first in lexical order keeps it: the same rule whatever else changes
// in the tree, so links do not move between passes.
type threads map[string]string

// isEML reports whether rel names a message file.
func isEML(rel string) bool { return strings.EqualFold(path.Ext(rel), ".eml") }

// indexThreads reads the header of every .eml among files (lexical order)
// through t. A file that cannot be opened or whose header cannot be read
// is left out; reading it for its items reports why.
func indexThreads(t *tree, files []string) threads {
	idx := threads{}
	for _, rel := range files {
		if !isEML(rel) {
			continue
		}
		id, ok := headerMessageID(t, rel)
		if !ok {
			continue
		}
		if _, taken := idx[id]; !taken {
			idx[id] = rel
		}
	}
	return idx
}

// headerMessageID returns the normalised Message-ID in the header of the
// .eml rel.
func headerMessageID(t *tree, rel string) (string, bool) {
	f, _, err := t.open(rel)
	if err != nil {
		return "", false
	}
	defer f.Close()
	m, err := netmail.ReadMessage(bufio.NewReader(io.LimitReader(f, maxHeaderBytes)))
	if err != nil {
		return "", false
	}
	id := threadKey(m.Header.Get("Message-Id"))
	return id, id != ""
}

// links returns the thread links of the message at rel: "reply" to the
// file holding its In-Reply-To, "thread" to the files holding the rest of
// its References, each target once, never rel itself. Ids of messages the
// tree does not hold link nowhere. The relations are the imap
// connector's, so expansion follows a thread alike whichever way the mail
// arrived.
func (idx threads) links(rel, inReplyTo string, references []string) []ingestd.ItemLink {
	var out []ingestd.ItemLink
	seen := map[string]bool{rel: true}
	add := func(id, relation string) {
		to, ok := idx[threadKey(id)]
		if ok && !seen[to] {
			seen[to] = true
			out = append(out, ingestd.ItemLink{ToExternalID: to, Relation: relation})
		}
	}
	add(inReplyTo, "reply")
	for _, r := range references {
		add(r, "thread")
	}
	return out
}

// threadKey normalises a Message-ID as the imap connector names a message
// (imap.MessageExternalID): angle brackets and white space removed, the
// domain part lower-cased. "" for an empty id.
func threadKey(id string) string {
	id = strings.TrimSpace(id)
	id = strings.TrimPrefix(id, "<")
	id = strings.TrimSuffix(id, ">")
	id = strings.Join(strings.Fields(id), "")
	if at := strings.LastIndexByte(id, '@'); at >= 0 {
		id = id[:at] + strings.ToLower(id[at:])
	}
	return id
}
