// Package deploy holds what an operator installs beside the daemon: a
// Grafana dashboard (grafana/ingestd.json) and Prometheus alert rules
// (prometheus/alerts.yaml). Both are plain files to copy or import; they
// are embedded here so that the test beside them can read every PromQL
// expression they hold and check that each metric named is one the
// daemon exports, with labels it has.
package deploy

import _ "embed"

// Dashboard is the Grafana dashboard, as Grafana's import takes it.
//
//go:embed grafana/ingestd.json
var Dashboard []byte

// Alerts are the Prometheus alert rules, a rule_files file.
//
//go:embed prometheus/alerts.yaml
var Alerts []byte
