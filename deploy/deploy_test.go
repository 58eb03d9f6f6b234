package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd/deploy"
	"github.com/ingestd/ingestd/health"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/retrieval/metrics"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// recorder is a registry that remembers every collector registered with
// it, so the test can ask each for its descriptions: a metric vector
// without a child yet is described but not gathered.
type recorder struct {
	*prometheus.Registry
	cs []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.cs = append(r.cs, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// series is what the daemon exports under one name: its labels.
type series map[string]bool

// exported builds the metrics the way serve does — the Go and process
// collectors, the retrieval metrics, the sync history's collector and the
// job queue's (on a real embedded NATS) — and returns every series name
// they describe with its labels. A histogram's or summary's name also
// yields its _bucket (with le), _sum and _count series.
func exported(t *testing.T) map[string]series {
	t.Helper()
	reg := &recorder{Registry: prometheus.NewRegistry()}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if _, err := metrics.New(nil, &metrics.Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	mon, err := health.New(health.Options{Store: sqlitetest.MustOpen(t)})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(mon.Collector())
	e, err := jobs.StartEmbedded(jobs.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	nc, err := e.Connect(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q, err := jobs.Open(context.Background(), nc, &jobs.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })

	// Types: a gathered family says its own; a vector that has no child
	// yet is known by its Go type.
	kinds := map[string]dto.MetricType{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		kinds[mf.GetName()] = mf.GetType()
	}
	desc := regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)
	out := map[string]series{}
	for _, c := range reg.cs {
		histogram := false
		switch c.(type) {
		case *prometheus.HistogramVec, prometheus.Histogram, *prometheus.SummaryVec, prometheus.Summary:
			histogram = true
		}
		ch := make(chan *prometheus.Desc, 256)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := desc.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read %s", d)
			}
			name, ls := m[1], series{}
			for _, l := range strings.Split(m[2], ",") {
				if n, _, ok := strings.Cut(l, "="); ok {
					ls[n] = true
				}
			}
			for _, l := range strings.Split(m[3], ",") {
				if l != "" {
					ls[strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")")] = true
				}
			}
			out[name] = ls
			switch kinds[name] {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				histogram = true
			case dto.MetricType_SUMMARY:
				ls["quantile"] = true
				histogram = true
			}
			if histogram {
				out[name+"_sum"], out[name+"_count"] = ls, ls
				bucket := series{"le": true}
				for l := range ls {
					bucket[l] = true
				}
				out[name+"_bucket"] = bucket
			}
		}
	}
	// Prometheus writes up for every target it scrapes; job and instance
	// are the labels it adds to every series.
	out["up"] = series{}
	for _, ls := range out {
		ls["job"], ls["instance"] = true, true
	}
	return out
}

// grafanaVar matches a Grafana variable in an expression: $name, ${name}
// or ${name:format}.
var grafanaVar = regexp.MustCompile(`\$(\{[A-Za-z0-9_]+(:[a-z]+)?\}|[A-Za-z0-9_]+)`)

// checkExpr parses a PromQL expression and reports each metric it names
// that the daemon does not export, and each label it matches that such a
// metric does not have. Grafana's variables are replaced first: interval
// ones by a duration, the others by a plain value.
func checkExpr(expr string, known map[string]series) []string {
	expr = grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		switch strings.Trim(v, "${}") {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		}
		return "x"
	})
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("%q: %v", expr, err)}
	}
	var problems []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		ls, ok := known[vs.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("metric %q is not one the daemon exports", vs.Name))
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName && !ls[m.Name] {
				problems = append(problems, fmt.Sprintf("metric %q has no label %q", vs.Name, m.Name))
			}
		}
		return nil
	})
	if len(problems) == 0 && !hasSelector(e) {
		problems = append(problems, fmt.Sprintf("%q names no metric", expr))
	}
	return problems
}

func hasSelector(e parser.Expr) bool {
	found := false
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if _, ok := n.(*parser.VectorSelector); ok {
			found = true
		}
		return nil
	})
	return found
}

// rule is one alerting rule of a rule_files file.
type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func alertRules(t *testing.T, b []byte) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// dashboardExprs returns every PromQL expression of a Grafana dashboard:
// each target's expr, in panels and rows' panels, and the query of each
// query variable (label_values(selector, label): its selector).
func dashboardExprs(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("ingestd.json: %v", err)
	}
	out := map[string]string{}
	type panel struct {
		Title   string            `json:"title"`
		Panels  []json.RawMessage `json:"panels"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("ingestd.json: panel: %v", err)
			}
			for _, tg := range p.Targets {
				out[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[A-Za-z_][A-Za-z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("ingestd.json: variable %s: %v", v.Name, err)
			}
		}
		if m := labelValues.FindStringSubmatch(q.Query); m != nil {
			q.Query = m[1]
		}
		out["variable "+v.Name] = q.Query
	}
	return out
}

// TestAlertsNameExportedMetrics: every alert rule parses as PromQL, names
// only metrics the daemon exports and only labels they have, and says
// how long it waits, how bad it is and what it means.
func TestAlertsNameExportedMetrics(t *testing.T) {
	known := exported(t)
	rules := alertRules(t, deploy.Alerts)
	if len(rules) == 0 {
		t.Fatal("alerts.yaml holds no rule")
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Alert == "" || seen[r.Alert] {
			t.Errorf("rule %q: every rule needs a name of its own", r.Alert)
		}
		seen[r.Alert] = true
		for _, p := range checkExpr(r.Expr, known) {
			t.Errorf("alert %s: %s", r.Alert, p)
		}
		if r.For == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert %s: needs for, labels.severity, annotations.summary and annotations.description", r.Alert)
		}
	}
}

// TestDashboardNamesExportedMetrics: every query of the dashboard parses
// as PromQL and names only metrics the daemon exports, with labels they
// have; every panel of it queries something.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	known := exported(t)
	exprs := dashboardExprs(t, deploy.Dashboard)
	if len(exprs) == 0 {
		t.Fatal("the dashboard holds no query")
	}
	where := make([]string, 0, len(exprs))
	for w := range exprs {
		where = append(where, w)
	}
	sort.Strings(where)
	for _, w := range where {
		for _, p := range checkExpr(exprs[w], known) {
			t.Errorf("%s: %s", w, p)
		}
	}
}

// TestCheckRefusesUnknown: the check itself finds a metric the daemon
// does not export, a label a metric does not have and an expression that
// does not parse, and passes a good one.
func TestCheckRefusesUnknown(t *testing.T) {
	known := exported(t)
	for _, tt := range []struct {
		expr string
		want string
	}{
		{`ingestd_sync_consecutive_failures > 3`, ""},
		{`rate(ingestd_retrieval_duration_seconds_bucket{le="0.5"}[5m])`, ""},
		{`ingestd_sync_failures_total > 0`, `metric "ingestd_sync_failures_total" is not one the daemon exports`},
		{`ingestd_jobs_dead_letters{installation="a"} > 0`, `metric "ingestd_jobs_dead_letters" has no label "installation"`},
		{`sum(rate(ingestd_retrieval_verdicts_total[5m]) by`, `parse error`},
		{`vector(1)`, `names no metric`},
	} {
		got := strings.Join(checkExpr(tt.expr, known), "; ")
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("checkExpr(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
	if _, ok := known["ingestd_jobs_refused_total"]; !ok {
		t.Error("a counter vector with no child yet is not found: the names come from the gathered series only")
	}
}
