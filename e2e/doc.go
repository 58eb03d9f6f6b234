// Package e2e holds the end-to-end reliability and security tests of
// ingestd: hostile corpora through the real connectors, embedder faults,
// per-installation isolation and secrets in logs. It has no code of its
// own; every test drives the packages the daemon is built from (or the
// built binary) the way production wires them, and must never reach a
// network beyond loopback.
package e2e
