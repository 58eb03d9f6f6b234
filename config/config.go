// Package config is ingestd's configuration file: its typed blocks, the
// one decoding of it (plainTree: each key once, merge keys expanded,
// aliases resolved; then a strict decode that refuses unknown keys, and
// each installation's block kept for its connector), the defaults and
// every validation, numbers in range included. Every refusal is an
// *Error naming file:line, and a Config keeps the line of each key so a
// caller that refuses a value later (a variable that is unset, a
// certificate that does not load, an upstream that offers other tools)
// says where it is written.
//
// It reads the file and stats data_dir, and nothing else: it never reads
// the environment and opens no store, queue or listener. Secrets are
// never in the file, only *_env keys naming variables, which cmd/ingestd
// reads.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/provenance"
)

// Config is the YAML configuration file. Users' configs depend on its
// names: extend them, keep them. Secrets are never in it, only *_env keys
// naming environment variables.
type Config struct {
	DataDir       string               `yaml:"data_dir"`
	Listen        string               `yaml:"listen"`
	ListenHosts   []string             `yaml:"listen_hosts"` // Host names served besides loopback (the API guard's Hosts)
	Store         StoreConfig          `yaml:"store"`
	NATS          NATSConfig           `yaml:"nats"`
	Embedder      EmbedderConfig       `yaml:"embedder"`
	Firewall      FirewallConfig       `yaml:"firewall"`
	Auth          AuthConfig           `yaml:"auth"`
	TLS           TLSConfig            `yaml:"tls"`
	Chunking      ChunkingConfig       `yaml:"chunking"`
	Log           LogConfig            `yaml:"log"`
	Health        HealthConfig         `yaml:"health"`
	Erasure       ErasureConfig        `yaml:"erasure"`
	Installations []InstallationConfig `yaml:"installations"`
	Gateway       GatewayConfig        `yaml:"gateway"` // see gateway.go
	// Groups is the group membership people's readers resolve with
	// (people.go): groups: {hr: [user:alice@example.com]}.
	Groups map[string][]string `yaml:"groups"`

	path       string         // the file it came from
	dir        string         // its directory: relative paths are relative to it
	lines      map[string]int // the line of each top-level key
	subLines   map[string]int // the line of each key one level down ("chunking.max_tokens")
	tokenLines []int          // the line of each auth.tokens entry
}

// Line is the line of a top-level key, 0 when the file lacks it.
func (c *Config) Line(key string) int { return c.lines[key] }

// ListenLine is where a listen address refused for want of auth is
// decided: the listen key, else (listen left at its default) auth.
func (c *Config) ListenLine() int {
	if l := c.Line("listen"); l > 0 {
		return l
	}
	return c.Line("auth")
}

// TokenLine is the line of auth.tokens[i], else of auth.
func (c *Config) TokenLine(i int) int {
	if i < len(c.tokenLines) {
		return c.tokenLines[i]
	}
	return c.Line("auth")
}

// TokenUnset is the error for auth.tokens[i] whose variable is unset or
// empty, at the token's line.
func (c *Config) TokenUnset(i int) error {
	return c.TokenError(i, fmt.Sprintf("environment variable %s is not set", c.Auth.Tokens[i].TokenEnv))
}

// TokenError is msg about auth.tokens[i], at its line: "auth: token
// "chat": msg" (msg starting with a verb reads "auth: token "chat" msg").
func (c *Config) TokenError(i int, msg string) error {
	sep := ": "
	if strings.HasPrefix(msg, "has ") || strings.HasPrefix(msg, "reads ") {
		sep = " "
	}
	return &Error{Path: c.path, Line: c.TokenLine(i), Msg: fmt.Sprintf("auth: token %q%s%s", c.Auth.Tokens[i].Name, sep, msg)}
}

// StoreConfig selects the store.
type StoreConfig struct {
	Driver string `yaml:"driver"` // sqlite (default) | postgres
	URLEnv string `yaml:"url_env"`
	// Postgres only.
	MaxConns         int      `yaml:"max_conns"`
	StatementTimeout Duration `yaml:"statement_timeout"`
	EfSearch         int      `yaml:"ef_search"`
	TextCandidates   int      `yaml:"text_candidates"`
	// HNSWM and HNSWEfConstruction shape a new vector index's graph; an
	// existing index keeps its own until `ingestd migrate
	// --rebuild-vector-index`.
	HNSWM              int `yaml:"hnsw_m"`
	HNSWEfConstruction int `yaml:"hnsw_ef_construction"`
	// ReaderIndexes names the principals that get a vector index of their
	// own ("everyone" for Everyone); `ingestd migrate --reader-indexes`
	// builds what is missing and drops what is not named. ReaderIndex is
	// them parsed.
	ReaderIndexes []string            `yaml:"reader_indexes"`
	ReaderIndex   []ingestd.Principal `yaml:"-"`
}

// NATSConfig selects the job transport; empty means in-process. With url
// or listen, NATS credentials and job_key_env are required (see
// validateNATS).
type NATSConfig struct {
	URL    string `yaml:"url"`
	Listen string `yaml:"listen"` // embedded server's TCP listener; a bare port means 127.0.0.1
	// One kind of credential, each read from the variable it names:
	// creds_env (url only), nkey_env, token_env, or user with password_env.
	CredsEnv    string `yaml:"creds_env"`
	NKeyEnv     string `yaml:"nkey_env"`
	TokenEnv    string `yaml:"token_env"`
	User        string `yaml:"user"`
	PasswordEnv string `yaml:"password_env"`
	TLSCA       string `yaml:"tls_ca"`
	TLSCert     string `yaml:"tls_cert"`
	TLSKey      string `yaml:"tls_key"`
	// JobKeyEnv names the variable holding the key every process signs
	// and verifies jobs with; AcceptJobKeyEnv one more key workers accept
	// during a rotation.
	JobKeyEnv       string `yaml:"job_key_env"`
	AcceptJobKeyEnv string `yaml:"accept_job_key_env"`
	Replicas        int    `yaml:"replicas"`
	MaxDeliver      int    `yaml:"max_deliver"`
	// Concurrency is how many jobs one worker process runs at once
	// (default 4); AckWait how long a job may go silent before it is
	// redelivered (default 30s); MaxMsgSize the largest job (default
	// 1 MiB); MaxBytes the job stream's cap (default 1 GiB); LeaseTTL
	// how long a crashed worker's sync lease blocks the installation's
	// next pass (default 2m).
	Concurrency int      `yaml:"concurrency"`
	AckWait     Duration `yaml:"ack_wait"`
	MaxMsgSize  int32    `yaml:"max_msg_size"`
	MaxBytes    int64    `yaml:"max_bytes"`
	LeaseTTL    Duration `yaml:"lease_ttl"`
	// StartupTimeout bounds how long a starting process waits for NATS
	// and the job stream (a cluster forming, a leader election) before it
	// exits (default 2m).
	StartupTimeout Duration `yaml:"startup_timeout"`

	line  int            // the line of the nats key
	lines map[string]int // the line of each key inside it
}

// EmbedderConfig selects the embedder.
type EmbedderConfig struct {
	Kind      string   `yaml:"kind"` // lexical (default) | openai
	Dims      int      `yaml:"dims"`
	BaseURL   string   `yaml:"base_url"`
	Model     string   `yaml:"model"`
	APIKeyEnv string   `yaml:"api_key_env"`
	BatchSize int      `yaml:"batch_size"`
	Timeout   Duration `yaml:"timeout"`
}

// FirewallConfig sets the tool-firewall mode.
type FirewallConfig struct {
	Mode string `yaml:"mode"` // enforce (default) | shadow | off
}

// AuthConfig lists bearer tokens.
type AuthConfig struct {
	Tokens               []TokenConfig `yaml:"tokens"`
	AllowUnauthenticated bool          `yaml:"allow_unauthenticated"`
}

// TokenConfig is one bearer token, read from the environment.
type TokenConfig struct {
	Name     string   `yaml:"name"`
	TokenEnv string   `yaml:"token_env"`
	Scopes   []string `yaml:"scopes"`
	// Installations, when set, limits the token to the documents of these
	// configured installations on every surface (REST, Connect/gRPC, MCP
	// tools and resources, the provenance report); absent means all.
	Installations []string `yaml:"installations"`
	// User, ActForUsers and Service say whom the token's requests read
	// for (people.go).
	User        string `yaml:"user"`
	ActForUsers bool   `yaml:"act_for_users"`
	Service     bool   `yaml:"service"`
	// AssertionKeyEnv names the variable holding the key the token's
	// requests sign their person with (people.go).
	AssertionKeyEnv string `yaml:"assertion_key_env"`
}

// TLSConfig is the optional server certificate.
type TLSConfig struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// ChunkingConfig is the chunk budget.
type ChunkingConfig struct {
	MaxTokens     int `yaml:"max_tokens"`
	OverlapTokens int `yaml:"overlap_tokens"`
}

// LogConfig sets the log format and level.
type LogConfig struct {
	Format string `yaml:"format"` // text (default on a terminal) | json
	Level  string `yaml:"level"`  // debug | info (default) | warn | error
}

// HealthConfig bounds the sync-pass history and says when an
// installation needs a person (package health); 0 means the default.
type HealthConfig struct {
	KeepPasses     int `yaml:"keep_passes"`     // passes kept per installation (100), and its newest success
	FailedPasses   int `yaml:"failed_passes"`   // failed passes in a row that make it failing (1)
	StaleIntervals int `yaml:"stale_intervals"` // intervals without a success that make it stale (3)
}

// ErasureConfig holds the erasure key's variable. Without key_env the key
// is data_dir/erasure.key, made on first use (cmd/ingestd's erase.go).
type ErasureConfig struct {
	KeyEnv string `yaml:"key_env"`
}

// InstallationConfig is one installation: common keys plus the block named
// by its kind, kept as a YAML node for the connector to decode.
type InstallationConfig struct {
	ID       string
	Kind     string
	Tier     string
	Interval time.Duration
	// TierByMeta holds tier_by_<meta key> maps, e.g.
	// tier_by_author_association: {OWNER: trusted-internal}.
	TierByMeta map[string]map[string]ingestd.Tier
	// VerifiedSenders is the verified_senders block (see
	// verifiedSendersConfig); nil without one.
	VerifiedSenders *ingestd.VerifiedSenders
	// Readers and ReadersByPath are the readers and readers_by_path keys
	// (people.go).
	Readers       *ingestd.Readers
	ReadersByPath []ingestd.PathReaders

	line  int
	block *yaml.Node
}

// Duration is a time.Duration written as "10m" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration (like 30s, 10m, 1h)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// Error is a configuration error with its location: the file and, when
// it has one, the line at fault. Every error Load and Parse return is
// one, and so is every refusal a caller makes of a value it read from
// the configuration (Config.At).
type Error struct {
	Path string
	Line int // 0: the file as a whole
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Load reads and validates the configuration file, each installation
// against the kinds reg knows. Every error is an *Error: it names the
// file and, where it has one, the line.
func Load(path string, reg *connectors.Registry) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in front
		}
		return nil, &Error{Path: path, Msg: err.Error() + " (name the file with --config or $INGESTD_CONFIG)"}
	}
	return Parse(path, raw, reg)
}

// Parse is Load of raw, the contents of the file at path.
func Parse(path string, raw []byte, reg *connectors.Registry) (*Config, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Path: path, Msg: "the file is empty: a configuration lists at least its installations (see the examples folder for complete ones)"}
		}
		return nil, yamlSyntaxError(path, err)
	}
	// One document: a second one would be silently ignored.
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &Error{Path: path, Line: next.Line, Msg: "a second YAML document: the configuration is one document (remove the \"---\" or merge what follows it)"}
	case !errors.Is(err, io.EOF):
		return nil, yamlSyntaxError(path, err)
	}
	if err := plainTree(path, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{Path: path, Line: 1, Msg: "the configuration must be a YAML mapping"}
	}
	doc := root.Content[0]
	c := &Config{path: path, dir: filepath.Dir(path), lines: map[string]int{}, subLines: map[string]int{}}
	c.recordLines(doc)
	if err := c.decode(doc, reg); err != nil {
		return nil, err
	}
	return c, nil
}

// recordLines notes where each top-level key, each key one level down
// and each auth token sits, for errors that name a line.
func (c *Config) recordLines(doc *yaml.Node) {
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		c.lines[k.Value] = k.Line
		if v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				c.subLines[k.Value+"."+v.Content[j].Value] = v.Content[j].Line
			}
		}
		if k.Value != "auth" || v.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			if v.Content[j].Value == "tokens" && v.Content[j+1].Kind == yaml.SequenceNode {
				for _, t := range v.Content[j+1].Content {
					c.tokenLines = append(c.tokenLines, t.Line)
				}
			}
		}
	}
}

// decode decodes everything but installations strictly; installations
// are decoded by hand so each kind's block goes to its connector.
func (c *Config) decode(doc *yaml.Node, reg *connectors.Registry) error {
	path := c.path
	var instNode *yaml.Node
	rest := &yaml.Node{Kind: yaml.MappingNode, Line: doc.Line, Column: doc.Column}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "installations" {
			instNode = doc.Content[i+1]
			continue
		}
		rest.Content = append(rest.Content, doc.Content[i], doc.Content[i+1])
	}
	if err := strictDecode(path, rest, c, ""); err != nil {
		return err
	}
	if instNode != nil {
		if err := c.decodeInstallations(instNode, reg); err != nil {
			return err
		}
	}
	return c.validate(doc)
}

// yamlSyntaxError is a configuration that is not YAML, at the line where
// the parser found the problem, with the construct it was in when it
// started elsewhere ("did not find expected ',' or ']'" at the line after
// an unclosed list, naming the list's line).
func yamlSyntaxError(path string, err error) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) || le.Mark.Line == 0 {
		return &Error{Path: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	msg := "not valid YAML: " + le.Message
	if le.ContextMsg != "" && le.ContextMark.Line > 0 && le.ContextMark.Line != le.Mark.Line {
		msg += fmt.Sprintf(" (%s at line %d)", le.ContextMsg, le.ContextMark.Line)
	}
	return &Error{Path: path, Line: le.Mark.Line, Msg: msg}
}

// decodeInstallations decodes the installations list by hand, entry by
// entry, so each kind's block goes to its connector.
func (c *Config) decodeInstallations(n *yaml.Node, reg *connectors.Registry) error {
	if n.Kind != yaml.SequenceNode {
		return &Error{Path: c.path, Line: n.Line, Msg: "installations must be a list"}
	}
	ids := map[string]int{} // id -> the line of its entry
	for _, in := range n.Content {
		ic, err := c.decodeInstallation(in, reg)
		if err != nil {
			return err
		}
		if prev, dup := ids[ic.ID]; dup {
			return &Error{Path: c.path, Line: in.Line, Msg: fmt.Sprintf("installation %q is declared twice (first at line %d)", ic.ID, prev)}
		}
		ids[ic.ID] = in.Line
		if err := c.checkInstallation(ic, in, reg); err != nil {
			return err
		}
		c.Installations = append(c.Installations, ic)
	}
	return nil
}

// decodeInstallation decodes one entry's keys and checks its id.
func (c *Config) decodeInstallation(in *yaml.Node, reg *connectors.Registry) (InstallationConfig, error) {
	ic := InstallationConfig{line: in.Line}
	if in.Kind != yaml.MappingNode {
		return ic, &Error{Path: c.path, Line: in.Line, Msg: "each installation must be a mapping with id, kind and tier"}
	}
	for i := 0; i+1 < len(in.Content); i += 2 {
		if err := c.decodeInstallationKey(&ic, in.Content[i], in.Content[i+1], reg); err != nil {
			return ic, err
		}
	}
	switch {
	case ic.ID == "":
		return ic, &Error{Path: c.path, Line: in.Line, Msg: "installation without an id"}
	case !validID(ic.ID):
		return ic, &Error{Path: c.path, Line: keyLine(in, "id"), Msg: fmt.Sprintf("installation id %q: use 1 to 128 letters, digits, '-' or '_' (it names NATS subjects and URL paths)", ic.ID)}
	}
	return ic, nil
}

// decodeInstallationKey decodes one key of an installation's entry: a
// common key, a tier_by_<meta key> map, or the block of a known kind.
func (c *Config) decodeInstallationKey(ic *InstallationConfig, k, v *yaml.Node, reg *connectors.Registry) error {
	switch k.Value {
	case "id":
		ic.ID = v.Value
	case "kind":
		ic.Kind = v.Value
	case "tier":
		ic.Tier = v.Value
	case "interval":
		var d Duration
		if err := d.UnmarshalYAML(v); err != nil {
			return &Error{Path: c.path, Line: v.Line, Msg: "interval: " + strings.TrimPrefix(err.Error(), fmt.Sprintf("line %d: ", v.Line))}
		}
		ic.Interval = time.Duration(d)
	case "verified_senders":
		var vs verifiedSendersConfig
		if err := strictDecode(c.path, v, &vs, "verified_senders"); err != nil {
			return err
		}
		ic.VerifiedSenders = vs.declaration()
	case "readers", "readers_by_path":
		return c.decodeReaders(ic, k, v)
	default:
		if key, ok := strings.CutPrefix(k.Value, "tier_by_"); ok && key != "" {
			return c.decodeTierBy(ic, key, k, v)
		}
		if _, ok := reg.Kind(k.Value); !ok {
			return &Error{Path: c.path, Line: k.Line, Msg: fmt.Sprintf("installation %q: unknown key %q (valid: id, kind, tier, interval, tier_by_<meta key>, verified_senders, readers, readers_by_path, and the block named by its kind: %s)", ic.ID, k.Value, strings.Join(reg.Names(), ", "))}
		}
		ic.block = v
	}
	return nil
}

// decodeTierBy decodes a tier_by_<key> map: meta values to tiers.
func (c *Config) decodeTierBy(ic *InstallationConfig, key string, k, v *yaml.Node) error {
	m := map[string]string{}
	if err := v.Decode(&m); err != nil {
		return &Error{Path: c.path, Line: v.Line, Msg: fmt.Sprintf("installation %q: %s must map values to tiers", ic.ID, k.Value)}
	}
	if ic.TierByMeta == nil {
		ic.TierByMeta = map[string]map[string]ingestd.Tier{}
	}
	ic.TierByMeta[key] = map[string]ingestd.Tier{}
	for val, t := range m {
		ic.TierByMeta[key][val] = ingestd.Tier(t)
	}
	return nil
}

// checkInstallation checks a decoded entry against its kind: a kind and
// a tier declared, the registry's rules for them, and a block, if any,
// named by the kind.
func (c *Config) checkInstallation(ic InstallationConfig, in *yaml.Node, reg *connectors.Registry) error {
	if ic.Kind == "" {
		return &Error{Path: c.path, Line: in.Line, Msg: fmt.Sprintf("installation %q has no kind (one of %s)", ic.ID, strings.Join(reg.Names(), ", "))}
	}
	if ic.Tier == "" {
		return &Error{Path: c.path, Line: in.Line, Msg: fmt.Sprintf("installation %q declares no tier; every installation must declare one of: %s", ic.ID, provenance.ValidList())}
	}
	if err := reg.Check(ic.Installation()); err != nil {
		return &Error{Path: c.path, Line: checkLine(in, ic, reg, err), Msg: ingestd.ErrorMessage(err)}
	}
	if ic.block == nil {
		return nil
	}
	for i := 0; i+1 < len(in.Content); i += 2 {
		if in.Content[i+1] == ic.block && in.Content[i].Value != ic.Kind {
			return &Error{Path: c.path, Line: in.Content[i].Line, Msg: fmt.Sprintf("installation %q is of kind %q but has a %q block", ic.ID, ic.Kind, in.Content[i].Value)}
		}
	}
	return nil
}

// checkLine is the line of the key the registry's refusal err is about:
// kind when the kind is unknown, verified_senders or a tier_by_ map when
// it names them, else tier.
func checkLine(in *yaml.Node, ic InstallationConfig, reg *connectors.Registry, err error) int {
	if _, ok := reg.Kind(ic.Kind); !ok {
		return keyLine(in, "kind")
	}
	if strings.Contains(err.Error(), "verified_senders") {
		return keyLine(in, "verified_senders")
	}
	line := keyLine(in, "tier")
	if strings.Contains(err.Error(), "tier_by_") {
		for i := 0; i+1 < len(in.Content); i += 2 {
			if strings.HasPrefix(in.Content[i].Value, "tier_by_") {
				line = in.Content[i].Line
			}
		}
	}
	return line
}

// keyLine is the line of key in the mapping n, 0 when n lacks it.
func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return 0
}

// validID reports whether an installation id is 1..128 of [A-Za-z0-9_-].
func validID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Path resolves a path from the configuration relative to its directory.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// Installation returns the domain installation of an entry.
func (ic InstallationConfig) Installation() ingestd.Installation {
	return ingestd.Installation{ID: ic.ID, Kind: ic.Kind, Tier: ingestd.Tier(ic.Tier), Interval: ic.Interval, TierByMeta: ic.TierByMeta,
		VerifiedSenders: ic.VerifiedSenders, Readers: ic.readers(), ReadersByPath: ic.ReadersByPath}
}

// DecodeBlock decodes the installation's kind block into v strictly.
func (c *Config) DecodeBlock(ic InstallationConfig, v any) error {
	if ic.block == nil {
		return &Error{Path: c.path, Line: ic.line, Msg: fmt.Sprintf("installation %q: missing its %q block", ic.ID, ic.Kind)}
	}
	return strictDecode(c.path, ic.block, v, ic.Kind)
}

// strictDecode decodes n into v, refusing keys v has no field for, with
// the line of the offending key.
func strictDecode(path string, n *yaml.Node, v any, where string) error {
	if err := checkKeys(path, n, reflect.TypeOf(v), where); err != nil {
		return err
	}
	if err := n.Decode(v); err != nil {
		var le *yaml.LoadErrors
		if errors.As(err, &le) && len(le.Errors) > 0 {
			first := le.Errors[0]
			line, msg := n.Line, first.Message
			if first.Mark.Line > 0 {
				line = first.Mark.Line
				msg = plainDecodeMessage(msg, n, first.Mark.Line, first.Mark.Column) // yamlmsg.go
			}
			if first.ContextMsg != "" {
				msg = first.ContextMsg + ": " + msg
			}
			return &Error{Path: path, Line: line, Msg: prefix(where) + msg}
		}
		return &Error{Path: path, Line: n.Line, Msg: prefix(where) + err.Error()}
	}
	return nil
}

func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

func checkKeys(path string, n *yaml.Node, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		var names []string
		collectFields(t, fields, &names)
		if _, custom := reflect.PointerTo(t).MethodByName("UnmarshalYAML"); custom {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				sort.Strings(names)
				return &Error{Path: path, Line: k.Line, Msg: fmt.Sprintf("%sunknown key %q (valid: %s)", prefix(where), k.Value, strings.Join(names, ", "))}
			}
			sub := k.Value
			if where != "" {
				sub = where + "." + k.Value
			}
			if err := checkKeys(path, n.Content[i+1], ft, sub); err != nil {
				return err
			}
		}
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for _, e := range n.Content {
			if err := checkKeys(path, e, t.Elem(), where); err != nil {
				return err
			}
		}
	}
	return nil
}

func collectFields(t reflect.Type, fields map[string]reflect.Type, names *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, fields, names)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
		*names = append(*names, name)
	}
}

// installationIDs lists the configured installation ids for messages.
func (c *Config) installationIDs() string {
	ids := make([]string, len(c.Installations))
	for i, ic := range c.Installations {
		ids[i] = ic.ID
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// tokenKeyLine returns the line of key in the i-th entry of auth.tokens,
// 0 when it is not there.
func tokenKeyLine(doc *yaml.Node, i int, key string) int {
	toks := child(child(doc, "auth"), "tokens")
	if toks == nil || toks.Kind != yaml.SequenceNode || i >= len(toks.Content) {
		return 0
	}
	tok := toks.Content[i]
	if tok.Kind != yaml.MappingNode {
		return 0
	}
	for j := 0; j+1 < len(tok.Content); j += 2 {
		if tok.Content[j].Value == key {
			return tok.Content[j].Line
		}
	}
	return 0
}
