// Package fwbench measures whether the tool firewall is one people keep
// switched on (issue 17): on a labelled corpus of a small company — a
// handbook, engineering docs, monitoring alerts and machine reports beside
// a support inbox and a community forum, with planted injections — it asks
// labelled questions in several request modes and counts, from the served
// chunks and the verdict:
//
//   - injection reach: turns that served injected text with tools allowed
//     (must be 0 in every mode; Goals checks it);
//   - needless blocks: internal-only questions whose verdict blocks tools,
//     overall and on tool turns;
//   - recall of the needed documents, internal-only and needs-external,
//     and the utility loss of needs-external questions;
//   - which block carried the untrusted text of each needless block, and
//     the rank of the first untrusted chunk.
//
// The corpus (testdata/, embedded) is ingested through the path a user's
// data takes: the files connector for the internal folders, the imap
// connector against go-imap's in-memory server for the support inbox, the
// github connector against an in-process HTTP server for the forum, then
// the pipeline, a SQLite file, the lexical embedder and retrieval.Service.
// It runs in seconds; `ingestd bench firewall` prints the report and the
// package's test checks what must always hold.
//
// It measures; it never changes ranking or the verdict. It lives under
// benchmarks/ because it is a measuring instrument, not part of the
// product's path; it stays in the main module because an operator runs
// it against a build (`ingestd bench firewall`).
package fwbench
