package main

import (
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/connectors/files"
)

// composeFile is the part of compose.yaml the test reads (nothing here
// runs docker). yaml.v3 resolves the <<: merge keys, so every service
// shows what it inherits.
type composeFile struct {
	Ingestd  composeService            `yaml:"x-ingestd"`
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	Build       struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Deploy struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// composeVar is a compose interpolation: ${NAME}, ${NAME:-default} or
// ${NAME:?message}.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?][^}]*)?\}`)

// TestComposeMatchesItsConfig reads compose.yaml and the configuration it
// mounts, examples/compose/ingestd.yaml, and checks that the topology the
// file describes is the one the configuration expects and the failover
// test (jobs/failover_test.go) runs: the configuration loads; every
// variable it names (*_env) is in the ingestd services' environment;
// nats.url names every NATS service, nats.replicas is their number, and
// they form one JetStream cluster, each routed to the others; every node
// requires the configured user with the password from the same variable
// the ingestd processes get; the api publishes the port it listens on and
// its health check asks that port; the job key is required; the image is
// built from a Dockerfile that exists; the files the installations read
// are mounted.
func TestComposeMatchesItsConfig(t *testing.T) {
	root := filepath.Join("..", "..")
	cfgPath := filepath.Join(root, "examples", "compose", "ingestd.yaml")
	cfg, err := config.Load(cfgPath, registry())
	if err != nil {
		t.Fatal(err)
	}
	var compose composeFile
	if err := yaml.Unmarshal(mustRead(t, filepath.Join(root, "compose.yaml")), &compose); err != nil {
		t.Fatal(err)
	}
	n := cfg.NATS
	if n.URL == "" || n.JobKeyEnv == "" || n.User == "" || n.PasswordEnv == "" {
		t.Fatalf("compose config nats block = %+v, want url, user, password_env and job_key_env", n)
	}

	// The ingestd services: those built from the x-ingestd anchor.
	ingestd := map[string]composeService{}
	for name, svc := range compose.Services {
		if svc.Image == compose.Ingestd.Image {
			ingestd[name] = svc
		}
	}
	for _, want := range []struct{ name, command string }{
		{"migrate", "migrate"}, {"worker", "serve --role worker"}, {"api", "serve --role api"},
	} {
		svc, ok := ingestd[want.name]
		if !ok {
			t.Errorf("compose.yaml has no ingestd service %s", want.name)
			continue
		}
		if got := strings.Join(svc.Command, " "); got != want.command {
			t.Errorf("%s runs %q, want %q", want.name, got, want.command)
		}
	}
	if got, want := ingestd["worker"].Deploy.Replicas, 2; got != want {
		t.Errorf("worker replicas = %d, want %d (the failover test runs two workers)", got, want)
	}

	// Every variable the configuration names is provided to every ingestd
	// service, and the configuration file is the one mounted.
	var doc yaml.Node
	if err := yaml.Unmarshal(mustRead(t, cfgPath), &doc); err != nil {
		t.Fatal(err)
	}
	vars := envKeys(&doc)
	for _, want := range []string{n.PasswordEnv, n.JobKeyEnv, cfg.Store.URLEnv} {
		if !slices.Contains(vars, want) {
			t.Errorf("envKeys missed %s", want)
		}
	}
	mount := "./examples/compose/ingestd.yaml:"
	for name, svc := range ingestd {
		for _, v := range vars {
			if _, ok := svc.Environment[v]; !ok {
				t.Errorf("%s: environment lacks %s, which the config names", name, v)
			}
		}
		var mounted string
		for _, vol := range svc.Volumes {
			if rest, ok := strings.CutPrefix(vol, mount); ok {
				mounted = strings.TrimSuffix(rest, ":ro")
			}
		}
		if got := svc.Environment["INGESTD_CONFIG"]; mounted == "" || got != mounted {
			t.Errorf("%s: INGESTD_CONFIG = %q, but examples/compose/ingestd.yaml is mounted at %q", name, got, mounted)
		}
		for _, secret := range []string{n.PasswordEnv, n.JobKeyEnv} {
			if v := svc.Environment[secret]; !strings.Contains(v, "${"+secret+":?") {
				t.Errorf("%s: %s = %q, want it required from the environment (${%s:?...})", name, secret, v, secret)
			}
		}
	}

	// nats.url names every NATS service; replicas is their number; they
	// form one cluster; each requires the user and the same password.
	nodes := map[string]composeService{}
	for name, svc := range compose.Services {
		if strings.HasPrefix(name, "nats-") {
			nodes[name] = svc
		}
	}
	if len(nodes) == 0 {
		t.Fatal("no nats-* service in compose.yaml")
	}
	var urlHosts []string
	for _, u := range strings.Split(n.URL, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			t.Fatalf("nats.url %q: %v", n.URL, err)
		}
		urlHosts = append(urlHosts, pu.Host)
	}
	slices.Sort(urlHosts)
	var nodeHosts []string
	for name := range nodes {
		nodeHosts = append(nodeHosts, name+":4222")
	}
	slices.Sort(nodeHosts)
	if !slices.Equal(urlHosts, nodeHosts) {
		t.Errorf("nats.url names %v, compose.yaml runs %v", urlHosts, nodeHosts)
	}
	if got, want := n.Replicas, len(nodes); got != want {
		t.Errorf("nats.replicas = %d, compose.yaml runs %d NATS nodes", got, want)
	}
	passVar := ""
	for _, m := range composeVar.FindAllStringSubmatch(compose.Ingestd.Environment[n.PasswordEnv], -1) {
		passVar = m[1]
	}
	for name, svc := range nodes {
		flags := map[string]string{}
		for i := 0; i+1 < len(svc.Command); i++ {
			if strings.HasPrefix(svc.Command[i], "-") {
				flags[svc.Command[i]] = svc.Command[i+1]
			}
		}
		if !slices.Contains(svc.Command, "-js") {
			t.Errorf("%s: JetStream is not enabled (-js)", name)
		}
		if flags["--name"] != name || flags["--cluster_name"] != "ingestd" {
			t.Errorf("%s: --name %q --cluster_name %q, want %q in cluster ingestd", name, flags["--name"], flags["--cluster_name"], name)
		}
		var routes []string
		for _, r := range strings.Split(flags["--routes"], ",") {
			if pu, err := url.Parse(r); err == nil {
				routes = append(routes, pu.Hostname())
			}
		}
		for other := range nodes {
			if other != name && !slices.Contains(routes, other) {
				t.Errorf("%s: --routes %q does not reach %s", name, flags["--routes"], other)
			}
		}
		if flags["--user"] != n.User {
			t.Errorf("%s: --user %q, want the configured user %q", name, flags["--user"], n.User)
		}
		if m := composeVar.FindStringSubmatch(flags["--pass"]); m == nil || m[1] != passVar {
			t.Errorf("%s: --pass %q, want the variable %s the ingestd processes get as %s", name, flags["--pass"], passVar, n.PasswordEnv)
		}
		if _, ok := ingestd["worker"].DependsOn[name]; !ok {
			t.Errorf("worker does not wait for %s", name)
		}
	}

	// The api publishes the port it listens on, is allowed to listen
	// there, and its health check asks that port.
	_, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		t.Fatalf("listen %q: %v", cfg.Listen, err)
	}
	if err := api.CheckListen(cfg.Listen, len(cfg.Auth.Tokens) > 0, cfg.Auth.AllowUnauthenticated); err != nil {
		t.Errorf("serve would refuse listen %s: %v", cfg.Listen, err)
	}
	published := false
	for _, p := range ingestd["api"].Ports {
		if strings.HasSuffix(p, ":"+port) {
			published = true
		}
	}
	if !published {
		t.Errorf("api publishes %v, not the port %s it listens on", ingestd["api"].Ports, port)
	}
	if hc := strings.Join(ingestd["api"].Healthcheck.Test, " "); !strings.Contains(hc, ":"+port+"/readyz") {
		t.Errorf("api health check %q does not ask /readyz on port %s", hc, port)
	}

	// The image is built from a Dockerfile that exists, and every files
	// installation's root is mounted from a folder of the repository.
	b := compose.Ingestd.Build
	if _, err := os.Stat(filepath.Join(root, b.Context, b.Dockerfile)); err != nil {
		t.Errorf("build %s/%s: %v", b.Context, b.Dockerfile, err)
	}
	for _, ic := range cfg.Installations {
		var files files.Config
		if ic.Kind != "files" {
			continue
		}
		if err := cfg.DecodeBlock(ic, &files); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, vol := range compose.Ingestd.Volumes {
			parts := strings.Split(vol, ":")
			if len(parts) >= 2 && path.Clean(parts[1]) == path.Clean(files.Root) {
				found = true
				if _, err := os.Stat(filepath.Join(root, parts[0])); err != nil {
					t.Errorf("installation %s: %s is mounted from %s: %v", ic.ID, files.Root, parts[0], err)
				}
			}
		}
		if !found {
			t.Errorf("installation %s reads %s, which compose.yaml does not mount", ic.ID, files.Root)
		}
	}
}

// envKeys returns the values of every key ending in _env in a YAML
// document: the variables a configuration names.
func envKeys(n *yaml.Node) []string {
	var out []string
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if strings.HasSuffix(k.Value, "_env") && v.Kind == yaml.ScalarNode && v.Value != "" {
				out = append(out, v.Value)
			}
		}
	}
	for _, c := range n.Content {
		out = append(out, envKeys(c)...)
	}
	return out
}

// TestComposeSharesOneErasureKey: every ingestd process of compose.yaml
// reads the erasure key from one variable, required from the
// environment, so tombstones one process wrote are read by all and the
// key outlives `docker compose down`; each process's data_dir is a named
// volume, declared in the file, so nothing lands on an anonymous one.
func TestComposeSharesOneErasureKey(t *testing.T) {
	root := filepath.Join("..", "..")
	cfg, err := config.Load(filepath.Join(root, "examples", "compose", "ingestd.yaml"), registry())
	if err != nil {
		t.Fatal(err)
	}
	key := cfg.Erasure.KeyEnv
	if key == "" {
		t.Fatal("examples/compose/ingestd.yaml sets no erasure.key_env: each container would make its own erasure.key")
	}
	raw := mustRead(t, filepath.Join(root, "compose.yaml"))
	var compose composeFile
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	var top struct {
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, svc := range compose.Services {
		if svc.Image != compose.Ingestd.Image {
			continue
		}
		n++
		if v := svc.Environment[key]; !strings.Contains(v, "${"+key+":?") {
			t.Errorf("%s: %s = %q, want it required from the environment (${%s:?...})", name, key, v, key)
		}
		var vol string
		for _, v := range svc.Volumes {
			if src, dst, ok := strings.Cut(v, ":"); ok && strings.TrimSuffix(dst, ":ro") == cfg.DataDir {
				vol = src
			}
		}
		if _, declared := top.Volumes[vol]; vol == "" || !declared {
			t.Errorf("%s: data_dir %s is not on a named volume declared in compose.yaml (volumes %v)", name, cfg.DataDir, svc.Volumes)
		}
	}
	if n == 0 {
		t.Fatal("no ingestd service in compose.yaml")
	}
}
