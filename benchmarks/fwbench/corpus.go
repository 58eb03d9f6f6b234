package fwbench

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"net/mail"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/provenance"
)

//go:embed testdata/corpus.yaml testdata/questions.yaml testdata/corpus testdata/variant testdata/mixed
var embedded embed.FS

// Embedded returns the corpus this package ships: corpus.yaml,
// questions.yaml and the corpus/ tree, as in testdata/.
func Embedded() fs.FS { return embeddedSub("testdata") }

// Variant returns the second corpus this package ships
// (testdata/variant/): another company with its own vocabulary, smaller,
// laid out like Embedded, to check the recommended mode away from the
// corpus its rules were chosen on.
func Variant() fs.FS { return embeddedSub("testdata/variant") }

// Mixed returns the mixed-mailbox corpus (testdata/mixed/): one team
// mailbox where colleagues, whose mail the boundary MTA verified, answer
// internal questions beside customers and attackers (forged own-domain
// From, a foreign authserv-id, a pass header below the boundary's, a
// colleague forwarding outside text). It measures what verified_senders
// buys; open it with Options.IgnoreVerifiedSenders for the baseline.
func Mixed() fs.FS { return embeddedSub("testdata/mixed") }

func embeddedSub(dir string) fs.FS {
	sub, err := fs.Sub(embedded, dir)
	if err != nil {
		panic(err) // a constant path into the embedded tree
	}
	return sub
}

// Connector kinds the corpus is ingested through. Each installation's
// documents take the path a user's data takes: files from a folder, mail
// from an IMAP server, issues and comments from the GitHub API.
const (
	KindFiles  = "files"
	KindIMAP   = "imap"
	KindGitHub = "github"
)

// ForumRepo is the repository the github installation's fake API serves
// when corpus.yaml names none.
const ForumRepo = "kestrel/community"

// Manifest is corpus.yaml: the installations, the documents that are
// dismissed approaches, and the planted injections.
type Manifest struct {
	// ForumRepo is the repository ("owner/name") the github
	// installation's posts are served as; "" means ForumRepo.
	ForumRepo     string             `yaml:"forum_repo"`
	Installations []InstallationSpec `yaml:"installations"`
	Rejected      struct {
		// ByOperator are marked rejected after the sync, as an operator
		// does with POST /v1/documents/{id}/reject.
		ByOperator []string `yaml:"by_operator"`
		// BySource are rejected by their connector itself (a GitHub issue
		// closed as not planned).
		BySource []string `yaml:"by_source"`
	} `yaml:"rejected"`
	Injections []Injection `yaml:"injections"`
	// Colleagues are the mail, in installations with verified_senders,
	// that colleagues wrote and the boundary verified: the answer key
	// counts them internal (a question they answer is not external).
	// Every other document of an untrusted installation stays external,
	// whatever its headers claim.
	Colleagues []string `yaml:"colleagues"`
}

// InstallationSpec is one installation of the corpus: corpus/<ID>/ holds
// its documents.
type InstallationSpec struct {
	ID    string       `yaml:"id" json:"id"`
	Kind  string       `yaml:"kind" json:"kind"`
	Tier  ingestd.Tier `yaml:"tier" json:"tier"`
	About string       `yaml:"about" json:"about"`
	// VerifiedSenders is the installation's verified_senders block: mail
	// whose From domain the boundary MTA's Authentication-Results verified
	// takes Tier.
	VerifiedSenders *VerifiedSendersSpec `yaml:"verified_senders" json:"verified_senders,omitempty"`
}

// VerifiedSendersSpec is an installation's verified_senders block.
type VerifiedSendersSpec struct {
	AuthservID string       `yaml:"authserv_id" json:"authserv_id"`
	Domains    []string     `yaml:"domains" json:"domains"`
	Tier       ingestd.Tier `yaml:"tier" json:"tier"`
}

// declaration is the block as the root vocabulary has it.
func (v *VerifiedSendersSpec) declaration() *ingestd.VerifiedSenders {
	if v == nil {
		return nil
	}
	return &ingestd.VerifiedSenders{AuthservID: v.AuthservID, Domains: v.Domains, Tier: v.Tier}
}

// Injection is a planted instruction: the document that carries it and a
// phrase of it that the benchmark looks for in served text.
type Injection struct {
	Doc      string `yaml:"doc" json:"doc"`
	Marker   string `yaml:"marker" json:"marker"`
	Style    string `yaml:"style" json:"style"`
	Language string `yaml:"language" json:"language"`
}

// Question is one labelled turn.
type Question struct {
	ID   string `yaml:"id" json:"id"`
	Text string `yaml:"text" json:"text"`
	// Needs are the documents that answer it, each a ref (see
	// Corpus.Doc) or alternatives "ref | ref" when any one of them gives
	// the same answer.
	Needs []string `yaml:"needs" json:"needs"`
	// External says a needed document is untrusted-external; Load checks
	// it against the needed documents' installations.
	External bool `yaml:"external" json:"external"`
	// Tool says the asker wants an action: the turn needs its tools.
	Tool bool `yaml:"tool" json:"tool"`
	// Ambiguous says internal documents answer it but the wording
	// plausibly asks about what a customer or the forum said, so a block
	// is not clearly needless. Only for questions with External false.
	Ambiguous bool   `yaml:"ambiguous" json:"ambiguous,omitempty"`
	Note      string `yaml:"note" json:"note,omitempty"`
}

// Question classes.
const (
	ClassInternal  = "internal"  // only internal documents needed
	ClassExternal  = "external"  // an untrusted-external document needed
	ClassAmbiguous = "ambiguous" // internal answer, external reading plausible
)

// Class returns the question's class.
func (q Question) Class() string {
	switch {
	case q.External:
		return ClassExternal
	case q.Ambiguous:
		return ClassAmbiguous
	default:
		return ClassInternal
	}
}

// Corpus is a loaded, validated corpus.
type Corpus struct {
	Manifest
	Questions []Question

	fsys  fs.FS
	insts map[string]InstallationSpec
	docs  map[string]Doc // by ref, every ref the labels use
	forum map[string]*forumPost
}

// Doc is a labelled document: where it lives and what it is stored as.
type Doc struct {
	Ref          string
	Installation string
	ExternalID   string
	ID           string // ingestd.DocumentID
	Untrusted    bool
}

// Load reads and validates a corpus: every installation has a known kind,
// a valid tier and a folder; every ref the labels use names a file (and,
// for a forum comment, a comment) that exists; every question has needed
// documents and its External label agrees with their tiers; markers are
// not empty. Errors name the file and the entry.
func Load(fsys fs.FS) (*Corpus, error) {
	c := &Corpus{fsys: fsys, insts: map[string]InstallationSpec{}, docs: map[string]Doc{}, forum: map[string]*forumPost{}}
	if err := readYAML(fsys, "corpus.yaml", &c.Manifest); err != nil {
		return nil, err
	}
	if err := readYAML(fsys, "questions.yaml", &c.Questions); err != nil {
		return nil, err
	}
	for i, in := range c.Installations {
		switch {
		case in.ID == "":
			return nil, fmt.Errorf("corpus.yaml: installations[%d] has no id", i)
		case in.Kind != KindFiles && in.Kind != KindIMAP && in.Kind != KindGitHub:
			return nil, fmt.Errorf("corpus.yaml: installation %s: kind %q is not files, imap or github", in.ID, in.Kind)
		case !provenance.Valid(in.Tier):
			return nil, fmt.Errorf("corpus.yaml: installation %s: tier %q is not one of %s", in.ID, in.Tier, provenance.ValidList())
		}
		if _, dup := c.insts[in.ID]; dup {
			return nil, fmt.Errorf("corpus.yaml: installation %s is listed twice", in.ID)
		}
		if fi, err := fs.Stat(fsys, path.Join("corpus", in.ID)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("corpus.yaml: installation %s: no folder corpus/%s", in.ID, in.ID)
		}
		c.insts[in.ID] = in
	}
	refs := func(where string, list []string) error {
		for _, r := range list {
			if _, err := c.resolve(r); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
		return nil
	}
	if err := refs("corpus.yaml: rejected.by_operator", c.Rejected.ByOperator); err != nil {
		return nil, err
	}
	if err := refs("corpus.yaml: rejected.by_source", c.Rejected.BySource); err != nil {
		return nil, err
	}
	for _, r := range c.Colleagues {
		instID, _, _ := strings.Cut(r, ":")
		if in, ok := c.insts[instID]; ok && in.VerifiedSenders == nil {
			return nil, fmt.Errorf("corpus.yaml: colleagues: %s is in %s, which has no verified_senders", r, instID)
		}
	}
	if err := refs("corpus.yaml: colleagues", c.Colleagues); err != nil {
		return nil, err
	}
	for i, inj := range c.Injections {
		if strings.TrimSpace(inj.Marker) == "" {
			return nil, fmt.Errorf("corpus.yaml: injections[%d] (%s) has no marker", i, inj.Doc)
		}
		d, err := c.resolve(inj.Doc)
		if err != nil {
			return nil, fmt.Errorf("corpus.yaml: injections[%d]: %w", i, err)
		}
		if !d.Untrusted {
			return nil, fmt.Errorf("corpus.yaml: injections[%d]: %s is not in an untrusted-external installation", i, inj.Doc)
		}
	}
	seen := map[string]bool{}
	for i, q := range c.Questions {
		where := fmt.Sprintf("questions.yaml: [%d] %s", i, q.ID)
		switch {
		case q.ID == "" || seen[q.ID]:
			return nil, fmt.Errorf("%s: id is empty or not unique", where)
		case strings.TrimSpace(q.Text) == "":
			return nil, fmt.Errorf("%s: text is empty", where)
		case len(q.Needs) == 0:
			return nil, fmt.Errorf("%s: needs no document", where)
		case q.Ambiguous && q.External:
			return nil, fmt.Errorf("%s: ambiguous is only for questions internal documents answer", where)
		}
		seen[q.ID] = true
		external := false
		for _, need := range q.Needs {
			alts, err := c.Alternatives(need)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			external = external || alts[0].Untrusted
		}
		if external != q.External {
			return nil, fmt.Errorf("%s: external is %t but its needed documents say %t", where, q.External, external)
		}
	}
	return c, nil
}

func readYAML(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Forum returns the repository the github installation's posts are
// served as.
func (c *Corpus) Forum() string {
	if c.ForumRepo != "" {
		return c.ForumRepo
	}
	return ForumRepo
}

// Installation returns the spec of the installation with the id.
func (c *Corpus) Installation(id string) (InstallationSpec, bool) {
	in, ok := c.insts[id]
	return in, ok
}

// Doc returns the labelled document a ref names; refs Load did not meet
// are resolved now.
func (c *Corpus) Doc(ref string) (Doc, error) { return c.resolve(ref) }

// Alternatives resolves one entry of Question.Needs: a ref, or refs
// separated by "|" any one of which answers. Alternatives must all be
// internal or all external, so that what a question needs has one answer.
func (c *Corpus) Alternatives(need string) ([]Doc, error) {
	var out []Doc
	for _, r := range strings.Split(need, "|") {
		d, err := c.resolve(strings.TrimSpace(r))
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && d.Untrusted != out[0].Untrusted {
			return nil, fmt.Errorf("need %q mixes internal and external alternatives", need)
		}
		out = append(out, d)
	}
	return out, nil
}

// Docs returns every document the labels name, by ref.
func (c *Corpus) Docs() map[string]Doc { return c.docs }

// resolve turns a ref — "installation:path" with the path under
// corpus/<installation>/, and a fragment "#attachment/<n>/<name>" for a
// mail attachment or "#comment-<k>" for the k-th comment of a forum post —
// into the document it is stored as.
func (c *Corpus) resolve(ref string) (Doc, error) {
	if d, ok := c.docs[ref]; ok {
		return d, nil
	}
	instID, rest, ok := strings.Cut(ref, ":")
	in, known := c.insts[instID]
	if !ok || !known || rest == "" {
		return Doc{}, fmt.Errorf("ref %q: want installation:path with a configured installation", ref)
	}
	p, frag, _ := strings.Cut(rest, "#")
	file := path.Join("corpus", instID, p)
	if _, err := fs.Stat(c.fsys, file); err != nil {
		return Doc{}, fmt.Errorf("ref %q: %s does not exist", ref, file)
	}
	var ext string
	switch in.Kind {
	case KindFiles:
		ext = p
		if frag != "" {
			ext += "#" + frag
		}
	case KindIMAP:
		mid, err := messageID(c.fsys, file)
		if err != nil {
			return Doc{}, fmt.Errorf("ref %q: %w", ref, err)
		}
		ext = imap.MessageExternalID(mid)
		if frag != "" {
			if !strings.HasPrefix(frag, "attachment/") {
				return Doc{}, fmt.Errorf("ref %q: a mail's fragment is attachment/<n>/<name>", ref)
			}
			ext += "#" + frag
		}
	case KindGitHub:
		post, err := c.forumPost(file)
		if err != nil {
			return Doc{}, fmt.Errorf("ref %q: %w", ref, err)
		}
		ext = github.IssueID(c.Forum(), post.Number)
		if frag != "" {
			k, err := strconv.Atoi(strings.TrimPrefix(frag, "comment-"))
			if !strings.HasPrefix(frag, "comment-") || err != nil || k < 1 || k > len(post.Comments) {
				return Doc{}, fmt.Errorf("ref %q: %s has %d comments; want #comment-1..%d", ref, file, len(post.Comments), len(post.Comments))
			}
			ext = github.CommentID(c.Forum(), post.Number, commentID(post.Number, k))
		}
	}
	d := Doc{Ref: ref, Installation: instID, ExternalID: ext, ID: ingestd.DocumentID(instID, ext),
		Untrusted: provenance.Untrusted(in.Tier) && !(in.VerifiedSenders != nil && slices.Contains(c.Colleagues, ref))}
	c.docs[ref] = d
	return d, nil
}

// messageID reads the Message-ID header of the .eml at file.
func messageID(fsys fs.FS, file string) (string, error) {
	b, err := fs.ReadFile(fsys, file)
	if err != nil {
		return "", err
	}
	m, err := mail.ReadMessage(bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	id := m.Header.Get("Message-Id")
	if id == "" {
		return "", fmt.Errorf("%s has no Message-ID", file)
	}
	return id, nil
}

// files lists the files under corpus/<inst>/ in lexical order, as paths
// relative to that folder.
func (c *Corpus) files(inst string) ([]string, error) {
	root := path.Join("corpus", inst)
	var out []string
	err := fs.WalkDir(c.fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, root+"/"))
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// forumPost is one file of the github installation: an issue and its
// comments.
//
// The file is YAML front matter (number, title, author, association,
// state, state_reason, created, labels) and the issue's body, then each
// comment after a line "%%% comment @<login> <ASSOCIATION> <RFC 3339 time>".
type forumPost struct {
	Number      int       `yaml:"number"`
	Title       string    `yaml:"title"`
	Author      string    `yaml:"author"`
	Association string    `yaml:"association"`
	State       string    `yaml:"state"`
	StateReason string    `yaml:"state_reason"`
	Created     time.Time `yaml:"created"`
	Labels      []string  `yaml:"labels"`
	Body        string    `yaml:"-"`
	Comments    []forumComment
}

type forumComment struct {
	Author, Association string
	Created             time.Time
	Body                string
}

var commentLine = regexp.MustCompile(`^%%% comment @(\S+) ([A-Z_]+) (\S+)$`)

// commentID is the GitHub id the fake API gives the k-th comment of issue
// number.
func commentID(number, k int) int64 { return int64(number)*1000 + int64(k) }

func (c *Corpus) forumPost(file string) (*forumPost, error) {
	if p, ok := c.forum[file]; ok {
		return p, nil
	}
	b, err := fs.ReadFile(c.fsys, file)
	if err != nil {
		return nil, err
	}
	p, err := parseForumPost(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c.forum[file] = p
	return p, nil
}

func parseForumPost(s string) (*forumPost, error) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return nil, fmt.Errorf("no front matter")
	}
	front, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		return nil, fmt.Errorf("front matter is not closed")
	}
	p := &forumPost{}
	dec := yaml.NewDecoder(strings.NewReader(front))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	if p.Number <= 0 || p.Title == "" || p.Author == "" || p.Created.IsZero() {
		return nil, fmt.Errorf("front matter needs number, title, author and created")
	}
	var cur *strings.Builder
	var text strings.Builder
	cur = &text
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	var bodies []*strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if m := commentLine.FindStringSubmatch(line); m != nil {
			t, err := time.Parse(time.RFC3339, m[3])
			if err != nil {
				return nil, fmt.Errorf("comment line %q: %w", line, err)
			}
			p.Comments = append(p.Comments, forumComment{Author: m[1], Association: m[2], Created: t})
			cur = &strings.Builder{}
			bodies = append(bodies, cur)
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	p.Body = strings.TrimSpace(text.String())
	for i, b := range bodies {
		p.Comments[i].Body = strings.TrimSpace(b.String())
		if p.Comments[i].Body == "" {
			return nil, fmt.Errorf("comment %d is empty", i+1)
		}
	}
	return p, nil
}
